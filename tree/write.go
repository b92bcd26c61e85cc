package tree

import (
	"bytes"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/failpoints"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

// WriteFunc decides, under the leaf's lock, what to install for a write:
// it may return an error (nothing installed) or nil delta (nothing to do).
type WriteFunc func(p *node.Page) (*delta.Delta, error)

// Write locks the leaf covering key, calls fn with its current state and
// installs the delta fn returns, consolidating, splitting or merging as
// the page's size demands. The install and any split it causes are one
// atomic unit inside the cut gate.
func (t *Tree) Write(key []byte, fn WriteFunc) error {
	return t.WriteAt(key, 0, fn)
}

// WriteAt is Write starting from leaf, the PID a read of key found
// (GetLeaf; 0: none): if that page still covers key it is the leaf to
// lock, and the descent from the root is skipped. A stale hint (the page
// split, merged or its PID was reused) costs one lock and a fence check.
func (t *Tree) WriteAt(key []byte, leaf uint64, fn WriteFunc) error {
	return t.WriteAtPeeked(key, leaf, fn, nil)
}

// WriteAtPeeked is WriteAt given pk, what the caller's read of key found
// on disk (GetLeafPeeked; nil or empty: nothing): if the leaf is still
// the stub that read searched, the write takes key's durable versions
// from it instead of reading them again.
func (t *Tree) WriteAtPeeked(key []byte, leaf uint64, fn WriteFunc, pk *Peeked) error {
	sp, underfull, err := t.write(key, pagetable.PID(leaf), fn, pk)
	if err != nil {
		return err
	}
	// The write is installed: what follows only completes structure
	// changes. If a page read fails there, the half split stays (traversal
	// follows the sibling link) or the merge is skipped; the write's
	// caller must not see an error for a write that happened.
	if sp != nil {
		_ = t.post(sp)
	}
	if underfull {
		_ = t.tryMerge(key)
	}
	return nil
}

func (t *Tree) write(key []byte, leaf pagetable.PID, fn WriteFunc, pk *Peeked) (*split, bool, error) {
	tok := t.env.Gens.Enter()
	defer t.env.Gens.Exit(tok)
	var local Peeked
	if pk == nil {
		pk = &local
	}
	for {
		var hint *split
		pid, hinted := leaf, leaf != 0
		if !hinted {
			var err error
			if pid, _, err = t.findHint(key, 0, &hint, pk); err != nil {
				return nil, false, err
			}
		}
		leaf = 0 // a retry descends
		slot := t.pt.Slot(pid)
		slot.Mu.Lock()
		p := slot.Load()
		if p == nil || !p.Covers(key) || p.Base.Level != 0 {
			slot.Mu.Unlock()
			if !hinted {
				t.restarts.Add(1)
			}
			continue
		}
		view := p // what fn reads: p, or stub p over key's durable versions
		if p.Stub != nil && p.MayContain(key) && p.Len+p.Stub.DiskLen < 2*t.stubChainMax() {
			if disk := pk.of(pid, p, key); disk != nil {
				view = p.OverDisk(disk)
			} else if t.peekable(p, key) {
				// Read key's durable versions without the lock, then
				// check the stub again. The read may settle (Env.Peek)
				// at low, sampled before it: fn's check stops at the
				// newest version that is not skipped, and below low
				// that is the first version no CLR masks, which the
				// settled read ends with; the old value is that
				// version's.
				slot.Mu.Unlock()
				disk, err := t.peek(pid, p, key, t.low())
				if err != nil {
					return nil, false, err
				}
				if disk != nil {
					pk.keep(pid, p, key, disk)
					leaf = pid
				}
				continue
			}
		}
		if view == p && p.Stub != nil && (p.MayContain(key) || p.Len+p.Stub.DiskLen >= 2*t.stubChainMax()) {
			// The key may have versions on disk (its old value and the
			// conflict check need them), or the chain outgrew what the
			// background compaction keeps up with: read the full page.
			// Otherwise the write is a blind insert onto the stub.
			slot.Mu.Unlock()
			if _, err := t.fullOnce(pid, p); err != nil {
				return nil, false, err
			}
			continue
		}
		d, err := fn(view)
		if err != nil || d == nil {
			slot.Mu.Unlock()
			return nil, false, err
		}
		var sp *split
		underfull := false
		frames := 1
		cur := p
		heavy := p.Stub == nil && p.Len > 0 && t.chainHeavy(p)
		if heavy {
			// Consolidate the chain before the new delta, not with it:
			// d's txn has not committed, so a base holding d would also
			// keep the version d supersedes, and a base with no chain
			// above it is not consolidated again until the page's next
			// write. Built without d, the base keeps what the chain's
			// retention says, and the version d supersedes leaves at
			// the next consolidation after d commits (a write, the
			// evictor's Shorten, the idle settle's Squash). The base
			// takes its address before d: a chain's addresses descend.
			if nb, uf, ok := t.consolidateBefore(pid, p); ok {
				cur, underfull, frames, heavy = nb, uf, 2, false
			}
		}
		d.Addr = t.env.Gens.NextAddr()
		np := cur.Prepend(d)
		if np.Stub == nil && (np.Len > t.cfg.ChainMax || heavy) {
			np, sp, underfull = t.consolidate(pid, np, false, true)
			frames = 2 // the delta and the base that absorbed it
		}
		t.publish(slot, pid, p, np, frames)
		slot.Mu.Unlock()
		if np.Stub != nil && np.Len+np.Stub.DiskLen >= t.stubChainMax() && t.env.WantCompact != nil {
			t.env.WantCompact(pid)
		}
		if sp == nil {
			sp = hint // complete a half split met on the way (idempotent)
		}
		return sp, underfull, nil
	}
}

// split describes a separator to post in the parent level.
type split struct {
	level uint8
	sep   []byte
	right pagetable.PID
}

// consolidate builds a new base for a locked leaf, splitting it if it
// holds more than SplitEntries keys. It returns the state to publish for
// pid, the separator to post (nil if none) and whether the page is
// underfull. New pages it creates are published here.
//
// joint builds each new leaf state with its base in one allocation
// (node.NewState), for a consolidation whose pages should stay without a
// chain for a while: the settle's, Compact's and the evictor's. A
// writer's passes false: the next write to the page prepends a delta
// anyway, and W4 with writers' leaves built joint was slower in two of
// three sittings (bench/results/s30-joint).
//
// carry (the writers' consolidations) lets the new base be a carried one
// where carryOf allows it: the page's next checkpoint then writes its new
// deltas, not a whole base.
func (t *Tree) consolidate(pid pagetable.PID, p *node.Page, joint, carry bool) (*node.Page, *split, bool) {
	t.consolidations.Add(1)
	c := p.Collect(t.env.Retention)
	b := p.Base
	n := c.Keys()
	if !t.tooBig(c) {
		np, underfull := t.unsplit(pid, p, c, joint, carry)
		return np, nil, underfull
	}
	k, sep := c.SplitKey()
	if pid == RootPID {
		t.rootSplits.Add(1)
		lpid, rpid := t.pt.Alloc(), t.pt.Alloc()
		t.publish(t.pt.Slot(rpid), rpid, nil, t.leafState(c, k, n, sep, nil, 0, joint), 1)
		t.publish(t.pt.Slot(lpid), lpid, nil, t.leafState(c, 0, k, nil, sep, uint64(rpid), joint), 1)
		var bd delta.Builder
		bd.AddChild(nil, uint64(lpid))
		bd.AddChild(sep, uint64(rpid))
		return t.addrPage(node.NewState(&bd, nil, nil, 0, 1)), nil, false
	}
	t.splits.Add(1)
	rpid := t.pt.Alloc()
	t.publish(t.pt.Slot(rpid), rpid, nil, t.leafState(c, k, n, sep, b.High, b.Sibling, joint), 1)
	left := t.leafState(c, 0, k, b.Low, sep, uint64(rpid), joint)
	return left, &split{level: 1, sep: bytes.Clone(sep), right: rpid}, false
}

// chainHeavy reports whether a leaf's chain holds more bytes than a leaf
// may (Config.SplitBytes): with large values a chain of ChainMax deltas
// holds several leaves' worth of superseded values, memory the cache
// counts and that pushes other pages out. The writer then consolidates
// the chain before adding its delta (consolidateBefore), which keeps a
// page's memory within about twice its leaf bound plus one value. The bound is
// SplitBytes even while the tree is large (SetLarge): the smaller leaves
// there make misses cheaper, and a chain of small values should still
// wait for ChainMax. O(1).
func (t *Tree) chainHeavy(p *node.Page) bool {
	sb := t.cfg.SplitBytes
	return sb > 0 && chainBytes(p) > sb
}

// chainBytes is the memory of p's chain: its state's bytes less its base's.
func chainBytes(p *node.Page) int { return p.Bytes() - p.Base.Bytes() }

// consolidateBefore builds a new base for a locked leaf from its base and
// chain, for the writer about to add a delta to a heavy chain
// (chainHeavy). ok is false, and nothing is built, when the contents
// would split: the writer then consolidates with its delta as usual
// (consolidate splits).
func (t *Tree) consolidateBefore(pid pagetable.PID, p *node.Page) (np *node.Page, underfull, ok bool) {
	c := p.Collect(t.env.Retention)
	if t.tooBig(c) {
		return nil, false, false
	}
	t.consolidations.Add(1)
	np, underfull = t.unsplit(pid, p, c, false, true)
	return np, underfull, true
}

// carried returns a carried state of locked leaf p, a base built from c
// (p's contents) that carryOf allows to carry; ok is false, and nothing is
// built, when it does not.
func (t *Tree) carried(p *node.Page, c *node.Contents) (np *node.Page, ok bool) {
	cr := t.carryOf(p)
	if cr == nil {
		return nil, false
	}
	b := p.Base
	nb := c.Build(0, c.Keys(), b.Low, b.High, b.Sibling)
	nb.SetCarry(p.Head.Addr, cr)
	t.carriedN.Add(1)
	return &node.Page{Base: nb, Size: nb.Bytes() + cr.IndexBytes()}, true
}

// carryOf decides, under the page lock, whether the consolidation of leaf
// p may leave the page's frames on disk as they are (a carried base,
// delta.Carry): the new base is never written; it takes the address of
// p's newest delta, and the checkpointer writes the deltas it absorbed
// that are not durable yet, linked to the durable frame below them, as
// it would have without the consolidation. So a leaf that consolidates
// every ChainMax writes has its checkpoints write those writes, not a
// whole base each time, while its chain in memory empties as always.
//
// The chain on disk grows by what each carried consolidation absorbs; it
// is bounded by carryFrames() delta frames and the leaf byte bound, past
// which (or when p's base is itself a base not written yet, or a stub,
// or a frame has no address) it returns nil and the consolidation writes
// a whole base. O(p's chain + the pending deltas of a carried base).
func (t *Tree) carryOf(p *node.Page) *delta.Carry {
	b := p.Base
	if !t.cfg.Carry || p.Stub != nil || b.Level != 0 || p.Head == nil || p.Head.Addr == 0 {
		return nil
	}
	pub := t.env.Gens.Published()
	depth, diskBytes := b.DiskChain()
	if depth+p.Len > t.carryFrames() {
		return nil
	}
	var pending []*delta.Delta
	link := uint64(0)
	for d := p.Head; d != nil; d = d.Next {
		if d.Addr == 0 {
			return nil
		}
		depth++
		diskBytes += d.Size()
		if link == 0 {
			if d.Addr > pub {
				pending = append(pending, d)
			} else {
				link = d.Addr
			}
		}
	}
	if sb := t.splitBytes(); sb > 0 && diskBytes > sb {
		return nil
	}
	bc := b.Carry()
	if link == 0 {
		switch {
		case bc != nil:
			older := bc.Pending()
			for _, d := range older {
				if d.Addr <= pub {
					link = d.Addr
					break
				}
				pending = append(pending, d)
			}
			if link == 0 {
				link = bc.Link
				if len(older) == 0 {
					link = b.Addr // all written: the chain's top is the base's address
				}
			}
		case b.Addr != 0 && b.Addr <= pub:
			link = b.Addr
		default:
			return nil // b is a base not written yet: the checkpoint writes a base anyway
		}
	}
	if failpoints.Skip(failpoints.MutCarryUnwritten) {
		pending = nil // the checkpointer never writes what they held
	}
	index, rest := carryIndex(p)
	return delta.NewCarry(link, depth, diskBytes, pending, index, rest)
}

// carryIndex indexes the delta frames of the on-disk chain a carried
// consolidation of p stands for: p's deltas, then those p's base stands
// for if it is carried (its index), down to the written base at rest
// (0: none, and no index). Built once carryOf has decided to carry.
func carryIndex(p *node.Page) (index []delta.ChainFrame, rest uint64) {
	b := p.Base
	below, rest := []delta.ChainFrame(nil), b.Addr
	if bc := b.Carry(); bc != nil {
		below, rest = bc.Index, bc.Rest
	}
	if rest == 0 {
		return nil, 0
	}
	index = make([]delta.ChainFrame, 0, p.Len+len(below))
	for d := p.Head; d != nil; d = d.Next {
		index = append(index, delta.ChainFrame{Addr: d.Addr, Hash: node.DeltaChainHash(d)})
	}
	return append(index, below...), rest
}

// carryFrames bounds the delta frames of a carried base's on-disk chain
// (carryOf): twice the in-memory chain bound, below the on-disk length at
// which a stub's chain is compacted (stubChainMax).
func (t *Tree) carryFrames() int { return 2 * t.cfg.ChainMax }

// unsplit builds the new base of leaf pid (state p) from its collected
// contents c, which need no split, and reports whether it is underfull.
// With carry the base is a carried one where carryOf allows it.
func (t *Tree) unsplit(pid pagetable.PID, p *node.Page, c *node.Contents, joint, carry bool) (*node.Page, bool) {
	underfull := t.underfull(c) && pid != RootPID
	if carry {
		if np, ok := t.carried(p, c); ok {
			return np, underfull
		}
	}
	b := p.Base
	return t.leafState(c, 0, c.Keys(), b.Low, b.High, b.Sibling, joint), underfull
}

// leafState returns a new state holding only a leaf base with keys [from,
// to) of c, its address given; with joint, the two in one allocation.
func (t *Tree) leafState(c *node.Contents, from, to int, low, high []byte, sibling uint64, joint bool) *node.Page {
	if joint {
		return t.addrPage(c.BuildState(from, to, low, high, sibling))
	}
	return &node.Page{Base: t.addr(c.Build(from, to, low, high, sibling))}
}
