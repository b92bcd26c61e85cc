package node

import (
	"bytes"
	"slices"

	"github.com/bwkv/bwkv/delta"
)

// ver is one version during consolidation or materialization.
type ver struct {
	key, val []byte
	txid     uint64
	seq      uint32
	flags    delta.Flags
}

// chainSorted returns the chain's deltas ordered by key, each key's versions
// newest first (a stable sort of the newest-first chain).
func (p *Page) chainSorted(buf []ver) []ver {
	if cap(buf) < p.Len {
		buf = make([]ver, 0, p.Len) // one allocation, not one per doubling
	}
	buf = buf[:0]
	for d := p.Head; d != nil; d = d.Next {
		buf = append(buf, ver{d.Key, d.Value, d.TxID, d.Seq, d.Flags})
	}
	slices.SortStableFunc(buf, func(a, b ver) int { return bytes.Compare(a.key, b.key) })
	return buf
}

// sortedChain is a page state's chain in key order (chainSorted) and
// whether it holds a CLR. Read-only once built.
type sortedChain struct {
	vers []ver
	clr  bool
}

var noChain = &sortedChain{}

// sortedChain returns the state's chain in key order, building it on first
// use (two scans racing build equal copies; either is kept).
func (p *Page) sortedChain() *sortedChain {
	if p.Head == nil {
		return noChain
	}
	if sc := p.sorted.Load(); sc != nil {
		return sc
	}
	sc := &sortedChain{vers: p.chainSorted(make([]ver, 0, p.Len))}
	for _, v := range sc.vers {
		if v.flags&delta.CLR != 0 {
			sc.clr = true
		}
	}
	p.sorted.Store(sc)
	return sc
}

// mergedRun walks the page's versions in key order (chain versions of a key
// before its base versions) and calls fn once per key with that key's
// versions newest first. Keys outside [lo, hi) are skipped (nil: unbounded).
func (p *Page) mergedRun(lo, hi []byte, scratch []ver, fn func(key []byte, vs []ver)) {
	chain := p.chainSorted(scratch)
	b := p.Base
	bi := 0
	if lo != nil {
		bi = b.Search(lo)
	}
	ci := 0
	var run []ver
	for {
		var key []byte
		haveC := ci < len(chain)
		haveB := bi < b.Len()
		switch {
		case haveC && haveB:
			bk := b.KeyAt(bi)
			if bytes.Compare(chain[ci].key, bk) <= 0 {
				key = chain[ci].key
			} else {
				key = bk
			}
		case haveC:
			key = chain[ci].key
		case haveB:
			key = b.KeyAt(bi)
		default:
			return
		}
		if hi != nil && bytes.Compare(key, hi) >= 0 {
			// Everything from here on is at or past hi; chain entries
			// below lo were skipped below, so only hi ends the walk.
			return
		}
		run = run[:0]
		for ci < len(chain) && bytes.Equal(chain[ci].key, key) {
			run = append(run, chain[ci])
			ci++
		}
		for bi < b.Len() {
			if !b.KeyEqual(bi, key) {
				break
			}
			e := b.At(bi)
			run = append(run, ver{e.Key, e.Value, e.TxID, e.Seq, e.Flags})
			bi++
		}
		if lo != nil && bytes.Compare(key, lo) < 0 {
			continue
		}
		fn(key, run)
	}
}

// Visible calls fn, in key order, for each key in [lo, hi) whose newest
// visible version under vis is not a tombstone. Slices passed to fn alias
// immutable page memory.
func (p *Page) Visible(lo, hi []byte, vis Visibility, fn func(key, val []byte)) {
	var mask maskSet
	if p.Head == nil {
		p.baseVisible(lo, hi, vis, &mask, nil, fn)
		return
	}
	var scratch [32]ver
	chain := p.chainSorted(scratch[:0])
	for _, v := range chain {
		if v.flags&delta.CLR != 0 {
			p.mergedVisible(lo, hi, vis, chain, fn)
			return
		}
	}
	// Without CLRs a chain key either decides the read (its newest visible
	// version) or leaves it to the base: resolve each chain key once, then
	// walk the base with the overrides merged in.
	var ovBuf [32]Override
	ovs := resolve(chain, lo, hi, vis, ovBuf[:0])
	p.baseVisible(lo, hi, vis, &mask, ovs, fn)
}

// Plain reports whether every entry of the page is visible under vis,
// tombstones aside: no delta chain, and a base with one version per key,
// no CLR and every txid retired. A reader may then walk the base in place
// (Base.KeyAt, ValueAt, FlagsAt) with no visibility work and no copy.
func (p *Page) Plain(vis Visibility) bool {
	return p.Head == nil && p.Stub == nil && p.Base.Simple && p.Base.MaxTxID < vis.Low()
}

// resolve appends to dst the outcome for vis of each key of the sorted,
// CLR-free chain that lies in [lo, hi), in key order.
func resolve(chain []ver, lo, hi []byte, vis Visibility, dst []Override) []Override {
	for i := 0; i < len(chain); {
		o := Override{Key: chain[i].key}
		for ; i < len(chain) && bytes.Equal(chain[i].key, o.Key); i++ {
			if !o.Resolved && vis.Visible(chain[i].txid) {
				o.Resolved, o.Present, o.Val = true, chain[i].flags&delta.Tombstone == 0, chain[i].val
			}
		}
		if (lo == nil || bytes.Compare(o.Key, lo) >= 0) && (hi == nil || bytes.Compare(o.Key, hi) < 0) {
			dst = append(dst, o)
		}
	}
	return dst
}

// Overrides reports whether a reader may walk the page's base in place
// with the chain merged in, and if so appends to dst the chain's outcome
// for vis of each chain key in [lo, hi), in key order. That holds when the
// base needs no per-entry visibility work (Simple, every txid retired) and
// the chain holds no CLR (whose masks would reach into the base). A key of
// an Override that is Resolved takes its value (or absence) from the
// chain; an unresolved one is decided by the base.
func (p *Page) Overrides(lo, hi []byte, vis Visibility, dst []Override) ([]Override, bool) {
	if p.Stub != nil || !p.Base.Simple || p.Base.MaxTxID >= vis.Low() {
		return dst, false
	}
	sc := p.sortedChain()
	if sc.clr {
		return dst, false
	}
	return resolve(sc.vers, lo, hi, vis, dst), true
}

// Override is one chain key's outcome for a reader: resolved (the
// chain decides: a value, or absent) or not (the base decides).
type Override struct {
	Key, Val          []byte
	Resolved, Present bool
}

// mergedVisible is the general path (chains with CLRs, whose masks reach
// into the base).
func (p *Page) mergedVisible(lo, hi []byte, vis Visibility, scratch []ver, fn func(key, val []byte)) {
	var mask maskSet
	p.mergedRun(lo, hi, scratch[:0], func(key []byte, vs []ver) {
		mask.reset()
		for _, v := range vs {
			if mask.hides(v.txid, v.flags) || !vis.Visible(v.txid) {
				continue
			}
			if v.flags&delta.Tombstone == 0 {
				fn(key, v.val)
			}
			return
		}
	})
}

// Retention is what consolidation asks of the transaction layer to apply
// the retention rule (see the package doc). Implementations must be safe
// for concurrent use.
type Retention interface {
	// Low returns the lowest unretired txid.
	Low() uint64
	// CommitTS returns the commit timestamp of an unretired txid that has
	// committed; false for any other state (its versions are all kept,
	// unless RolledBack).
	CommitTS(txid uint64) (uint64, bool)
	// RolledBack reports whether an unretired txid that has not committed
	// is known rolled back to the end: every write compensated by a CLR
	// and its end logged. Its versions are then retained as a retired
	// txn's are: a CLR masks them and is dropped with them.
	RolledBack(txid uint64) bool
	// Readers appends to dst[:0] the start timestamps of the registered
	// readers, sorted and distinct, and returns them with a bound p at or
	// below the start of any reader not listed (one that registered
	// concurrently): every committed version above p is kept, and the
	// newest at or below it.
	Readers(dst []uint64) (starts []uint64, p uint64)
}

// retention applies the rule for one consolidation; it fetches the
// reader set at most once, and only if some key has two or more committed
// unretired versions (so a consolidation that drops nothing pays nothing).
type retention struct {
	r       Retention
	low     uint64
	fetched bool
	starts  []uint64
	p       uint64
	mask    maskSet
}

// newRetention returns the rule for r; nil keeps every version.
func newRetention(r Retention) *retention {
	if r == nil {
		return &retention{}
	}
	return &retention{r: r, low: r.Low()}
}

// needed reports whether a committed version with commit timestamp c,
// whose next newer committed version of the key committed at newer, is
// the newest at or below some reader's start: a reader with start in
// [c, newer), or the unlisted readers at or above p.
func (rt *retention) needed(c, newer uint64) bool {
	if !rt.fetched {
		rt.fetched = true
		rt.starts, rt.p = rt.r.Readers(rt.starts)
	}
	if c > rt.p || (c <= rt.p && rt.p < newer) {
		return true
	}
	i, _ := slices.BinarySearch(rt.starts, c)
	return i < len(rt.starts) && rt.starts[i] < newer
}

// retain applies the retention rule (see the package doc) to one key's
// versions, newest first, appending the kept ones to out. O(versions of
// the key · log readers).
func (rt *retention) retain(vs []ver, out []ver) []ver {
	if rt.r == nil {
		return append(out, vs...)
	}
	rt.mask.reset()
	retiredKept := false
	newer, haveNewer := uint64(0), false // commit ts of the newer committed version
	open, haveOpen := uint64(0), false   // txid of the uncommitted version just kept
	for _, v := range vs {
		if v.txid >= rt.low {
			if rt.mask.has(v.txid) {
				// A CLR of this txn was dropped above, the txn then known
				// rolled back: its versions go with it even if it retired
				// since (CommitTS and RolledBack then answer false, and a
				// version kept without its CLR would be visible to all).
				continue
			}
			c, committed := rt.r.CommitTS(v.txid)
			if !committed && rt.r.RolledBack(v.txid) {
				if v.flags&delta.CLR != 0 {
					rt.mask.add(v.txid)
				} else {
					// Its CLR was kept above (the rollback finished
					// between the two calls): kept under it.
					out = append(out, v)
				}
				continue
			}
			older := haveOpen && v.txid == open
			open, haveOpen = v.txid, !committed
			switch {
			case older && v.flags&delta.CLR == 0:
				// An older write of the uncommitted txn whose newer
				// write (or CLR) is kept: the txn reads its newest
				// write, nobody else reads either, and rollback and
				// undo take old values from the log. (A txn holds the
				// key from its first write, so its writes of the key
				// are adjacent, unless an aborted txn's CLR landed
				// between them: both are then kept.)
			case !committed || v.flags&delta.CLR != 0:
				out = append(out, v)
			case !haveNewer:
				// The newest committed version: every reader that
				// started after its commit sees it.
				out = append(out, v)
			case rt.needed(c, newer):
				out = append(out, v)
			}
			if committed {
				newer, haveNewer = c, true
			}
			continue
		}
		if v.flags&delta.CLR != 0 {
			rt.mask.add(v.txid)
			continue
		}
		if rt.mask.has(v.txid) || retiredKept {
			continue
		}
		retiredKept = true
		if v.flags&delta.Tombstone == 0 {
			out = append(out, v)
		}
	}
	return out
}

// Contents is the retained version list of one or more pages, in key order.
type Contents struct {
	vers []ver
	// keyStart holds the index in vers where each distinct key begins.
	keyStart []int
	bytes    int
}

// Keys returns the number of distinct keys.
func (c *Contents) Keys() int { return len(c.keyStart) }

// Bytes returns the key and value bytes of the retained versions.
func (c *Contents) Bytes() int { return c.bytes }

// Collect gathers p's versions after the retention rule r; nil keeps every
// version (a consolidation of part of a chain, which cannot see the CLRs
// and newer writes above it).
func (p *Page) Collect(r Retention) *Contents {
	n := p.Base.Len() + p.Len // a bound on the versions, and so on the keys
	c := &Contents{vers: make([]ver, 0, n), keyStart: make([]int, 0, n)}
	c.appendPage(p, newRetention(r))
	return c
}

func (c *Contents) appendPage(p *Page, rt *retention) {
	p.mergedRun(nil, nil, nil, func(key []byte, vs []ver) {
		n := len(c.vers)
		c.vers = rt.retain(vs, c.vers)
		if len(c.vers) > n {
			c.keyStart = append(c.keyStart, n)
			for _, v := range c.vers[n:] {
				c.bytes += len(v.key) + len(v.val)
			}
		}
	})
}

// Append adds the retained versions of p, whose keys all sort after the
// keys already collected (a merge of a right sibling).
func (c *Contents) Append(p *Page, r Retention) { c.appendPage(p, newRetention(r)) }

// SplitKey returns the first key of the right half when the contents are
// cut in two halves of distinct keys.
func (c *Contents) SplitKey() (idx int, key []byte) {
	k := len(c.keyStart) / 2
	i := c.keyStart[k]
	return k, c.vers[i].key
}

// Build returns a base holding distinct keys [from, to) of the contents.
func (c *Contents) Build(from, to int, low, high []byte, sibling uint64) *delta.Base {
	bd := c.builder(from, to)
	return bd.Finish(low, high, sibling, 0)
}

// BuildState returns a state holding only the base Build would return,
// allocated with it (NewState).
func (c *Contents) BuildState(from, to int, low, high []byte, sibling uint64) *Page {
	bd := c.builder(from, to)
	return NewState(&bd, low, high, sibling, 0)
}

// builder returns a builder holding distinct keys [from, to).
func (c *Contents) builder(from, to int) delta.Builder {
	var bd delta.Builder
	if from < to {
		s := c.keyStart[from]
		e := len(c.vers)
		if to < len(c.keyStart) {
			e = c.keyStart[to]
		}
		kb, vb := 0, 0
		for _, v := range c.vers[s:e] {
			kb += len(v.key)
			vb += len(v.val)
		}
		bd.Grow(e-s, kb, vb)
		for _, v := range c.vers[s:e] {
			bd.Add(v.key, v.val, v.txid, v.seq, v.flags)
		}
	}
	return bd
}

// baseVisible walks the base's keys in [lo, hi) with the resolved chain
// overrides ovs (sorted, within bounds) merged in, and calls fn for each
// visible value.
func (p *Page) baseVisible(lo, hi []byte, vis Visibility, mask *maskSet, ovs []Override, fn func(key, val []byte)) {
	b := p.Base
	i := 0
	if lo != nil {
		i = b.Search(lo)
	}
	n := b.Len()
	// One retired version per key and no CLR: every entry is visible.
	simple := b.Simple && b.MaxTxID < vis.Low()
	oi := 0
	for i < n {
		key := b.KeyAt(i)
		if hi != nil && bytes.Compare(key, hi) >= 0 {
			break
		}
		for ; oi < len(ovs) && bytes.Compare(ovs[oi].Key, key) < 0; oi++ {
			if ovs[oi].Present {
				fn(ovs[oi].Key, ovs[oi].Val)
			}
		}
		done := false
		if oi < len(ovs) && bytes.Equal(ovs[oi].Key, key) {
			if ovs[oi].Resolved {
				if ovs[oi].Present {
					fn(ovs[oi].Key, ovs[oi].Val)
				}
				done = true
			}
			oi++
		}
		if simple {
			if !done {
				if e := b.At(i); e.Flags&delta.Tombstone == 0 {
					fn(e.Key, e.Value)
				}
			}
			i++
			continue
		}
		mask.reset()
		for ; i < n; i++ {
			if !b.KeyEqual(i, key) {
				break
			}
			e := b.At(i)
			switch {
			case done:
			case mask.hides(e.TxID, e.Flags) || !vis.Visible(e.TxID):
			default:
				if e.Flags&delta.Tombstone == 0 {
					fn(key, e.Value)
				}
				done = true
			}
		}
	}
	for ; oi < len(ovs); oi++ {
		if ovs[oi].Present {
			fn(ovs[oi].Key, ovs[oi].Val)
		}
	}
}
