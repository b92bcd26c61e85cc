package bwkv

import (
	"bytes"
	"errors"
	"iter"
	"math"
	"sync"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/internal/invariants"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/tree"
)

// IterOptions bound an iterator to [LowerBound, UpperBound); nil means
// unbounded. Prefix, if not empty, bounds it to the keys that start with
// Prefix (it sets both bounds, so setting a bound as well is an error from
// NewIter). The iterator copies what it keeps.
type IterOptions struct {
	LowerBound, UpperBound []byte
	Prefix                 []byte
}

// Reader is the read side shared by *Txn and *Snapshot, so one helper can
// read either.
type Reader interface {
	Get(key []byte) ([]byte, error)
	GetAppend(dst, key []byte) ([]byte, error)
	NewIter(o *IterOptions) (*Iter, error)
}

var (
	_ Reader = (*Txn)(nil)
	_ Reader = (*Snapshot)(nil)
)

// errPrefixWithBound is NewIter's error for IterOptions that set Prefix and
// a bound.
var errPrefixWithBound = errors.New("bwkv: IterOptions: Prefix set together with LowerBound or UpperBound")

// bounds returns the [lo, hi) an IterOptions asks for, copied into buf
// (grown as needed and returned, so a pooled buffer makes it allocation
// free). nil stays nil (unbounded); an empty non-nil bound stays non-nil.
func (o *IterOptions) bounds(buf []byte) (lo, hi, out []byte, err error) {
	if o == nil {
		return nil, nil, buf, nil
	}
	lb, ub := o.LowerBound, o.UpperBound
	prefix := len(o.Prefix) > 0
	if prefix {
		if lb != nil || ub != nil {
			return nil, nil, buf, errPrefixWithBound
		}
		lb = o.Prefix
	}
	buf = buf[:0]
	if lb != nil {
		buf = append(buf, lb...)
	}
	n := len(buf)
	switch {
	case prefix:
		buf = appendPrefixEnd(buf, o.Prefix)
	case ub != nil:
		buf = append(buf, ub...)
	}
	if lb != nil {
		lo = nonNil(buf[:n:n])
	}
	if ub != nil || (prefix && len(buf) > n) {
		hi = nonNil(buf[n:len(buf):len(buf)])
	}
	return lo, hi, buf, nil
}

// nonNil returns b, or an empty non-nil slice for a nil b: an empty bound
// is a bound, not "unbounded".
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// appendPrefixEnd appends to dst the smallest key greater than every key
// with prefix p; it appends nothing when p is all 0xff bytes (no such key:
// the scan is unbounded above).
func appendPrefixEnd(dst, p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xff {
			dst = append(dst, p[:i+1]...)
			dst[len(dst)-1]++
			return dst
		}
	}
	return dst
}

// Iter iterates a snapshot's or transaction's view in key order, in both
// directions. It works a leaf at a time. Key and Value are valid until the
// next positioning call and must not be modified: they point into
// immutable page memory that the engine never mutates or reuses (copy them
// to keep or change them). An Iter is for one goroutine.
//
// A leaf with no delta chain whose base holds one retired version per key
// (node.Page.Plain) is iterated in place: positions are base entry indexes
// and no per-entry visibility work or copy happens. Moving forward, such a
// base with a CLR-free chain is also walked in place, merged with the
// chain's resolved keys (node.Page.Overrides); a Prev there materializes
// the leaf first. Any other leaf is materialized: its visible entries are
// collected into ents.
type Iter struct {
	db  *DB
	vis node.Visibility
	// snap is the owning snapshot, or nil for a transaction's iterator,
	// whose liveness check is owner. (A snapshot is named directly: a
	// method value would cost an allocation per iterator.)
	snap  *Snapshot
	owner func() error
	// live is the iterator's own close checker and ownerLive its
	// snapshot's or txn's: load, which reads through them, asserts both
	// open (invariants and race builds; ok checks them for the user).
	live      invariants.CloseChecker
	ownerLive *invariants.CloseChecker
	lo, hi    []byte // alias sc.bounds
	sc        *iterScratch

	// base is the current leaf's base when iterated in place (nil: the
	// leaf is materialized in ents). pos indexes base entries or ents;
	// [start, end) is the current leaf's range in bounds.
	base            *delta.Base
	ents            []iterEntry
	pos, start, end int
	// merged: base is walked with the chain outcomes ovs merged in; oi
	// indexes ovs and onOv says the current key is ovs[oi].
	page   *node.Page
	merged bool
	ovs    []node.Override
	oi     int
	onOv   bool
	// Fences and right sibling of the current leaf; the fences alias its
	// immutable base.
	pageLow, pageHigh []byte
	pageHasHigh       bool
	sibling           uint64
	// cutLo (cutHi) says the leaf's range was cut at a seek key above its
	// low fence (below its high fence): the leaf may hold visible keys
	// below (above) the range, so moving that way reloads the same leaf
	// below (above) the current key.
	cutLo, cutHi bool
	// off says which way the last move went (it matters once the
	// iterator is exhausted): +1 forward (First, SeekGE, Next), -1
	// backward. From past the end Prev is Last; from before the start
	// Next is First.
	off int8

	valid  bool
	err    error
	closed bool
}

type iterEntry struct {
	key, val []byte // alias immutable page memory
}

// iterScratch holds an iterator's reusable buffers; a DB pools them so a
// scan allocates none. Owned by one open iterator at a time.
type iterScratch struct {
	ents   []iterEntry
	ovs    []node.Override
	bounds []byte
	// ahead warms the caches for the crossing into the current leaf's
	// right sibling (tree.Ahead); its next step runs once a forward
	// scan's position reaches aheadAt, every aheadGap entries.
	ahead             tree.Ahead
	aheadAt, aheadGap int
}

// iterSlabLen is how many iterators one slab holds.
const iterSlabLen = 64

// iterSlab hands out iterators from one allocation, as snapSlab does for
// snapshots and for the same reason: an Iter is never reused, so a handle
// used after Close can only see its own closed state, never a later
// owner's scan. The slab is freed by the Go GC once none of its iterators
// is referenced (Close drops an iterator's references to the DB and its
// buffers, so a retained closed handle pins only its slab).
type iterSlab struct {
	it [iterSlabLen]Iter
	n  int // iterators handed out; owned by whoever took the slab from the pool
}

var iterSlabs = sync.Pool{New: func() any { return new(iterSlab) }}

func newIterHandle() *Iter {
	sl := iterSlabs.Get().(*iterSlab)
	it := &sl.it[sl.n]
	sl.n++
	if sl.n < iterSlabLen {
		iterSlabs.Put(sl)
	}
	return it
}

// newIter opens a transaction's iterator; owner reports its liveness and
// live is its close checker.
func newIter(db *DB, vis node.Visibility, o *IterOptions, live *invariants.CloseChecker, owner func() error) (*Iter, error) {
	return openIter(db, vis, o, nil, live, owner)
}

// newSnapIter opens a snapshot's iterator.
func newSnapIter(s *Snapshot, o *IterOptions) (*Iter, error) {
	return openIter(s.db, &s.r, o, s, &s.live, nil)
}

// openIter opens an iterator whose liveness is snap's (snap not nil) or
// owner's.
func openIter(db *DB, vis node.Visibility, o *IterOptions, snap *Snapshot, ownerLive *invariants.CloseChecker, owner func() error) (*Iter, error) {
	sc, _ := db.iterBufs.Get().(*iterScratch)
	if sc == nil {
		sc = new(iterScratch)
	}
	lo, hi, buf, err := o.bounds(sc.bounds)
	sc.bounds = buf
	if err != nil {
		db.iterBufs.Put(sc)
		return nil, err
	}
	it := newIterHandle()
	*it = Iter{db: db, vis: vis, snap: snap, owner: owner, ownerLive: ownerLive, lo: lo, hi: hi, sc: sc, ents: sc.ents[:0], ovs: sc.ovs[:0]}
	return it, nil
}

func (it *Iter) ok() bool {
	if it.closed {
		it.err = ErrClosed
	} else if err := it.ownerErr(); err != nil {
		it.err = err
	}
	if it.err != nil {
		it.valid = false
		return false
	}
	return true
}

// ownerErr returns nil while the iterator's snapshot or txn can be read
// through, else why not: ErrClosed once the owner ended (closed,
// committed, rolled back, or the DB closed), whatever ended it, or the
// txn's own error (ErrConflict for a doomed one, ErrTxnTooOld).
func (it *Iter) ownerErr() error {
	var err error
	if it.snap != nil {
		err = it.snap.usable()
	} else {
		err = it.owner()
	}
	if err == nil {
		return nil // every step asks: no errors.Is walk while the owner lives
	}
	if errors.Is(err, ErrTxnDone) {
		err = ErrClosed
	}
	return err
}

// load positions the iterator's range on leaf p within [from, to) and the
// iterator's bounds: in place on a plain leaf (or, with fwd, a plain base
// under a CLR-free chain), else by materializing its visible entries.
func (it *Iter) load(p *node.Page, from, to []byte, fwd bool) {
	it.live.AssertOpen("Iter read")
	it.ownerLive.AssertOpen("Iter read through its Snapshot or Txn")
	b := p.Base
	lo, cutLo := from, from != nil
	if it.lo != nil && (lo == nil || bytes.Compare(it.lo, lo) >= 0) {
		lo, cutLo = it.lo, false
	}
	if len(b.Low) > 0 && (lo == nil || bytes.Compare(b.Low, lo) >= 0) {
		lo, cutLo = b.Low, false
	}
	hi, cutHi := to, to != nil
	if it.hi != nil && (hi == nil || bytes.Compare(it.hi, hi) <= 0) {
		hi, cutHi = it.hi, false
	}
	if b.High != nil && (hi == nil || bytes.Compare(b.High, hi) <= 0) {
		hi, cutHi = b.High, false
	}
	it.cutLo, it.cutHi = cutLo, cutHi
	clear(it.ents) // drop references to the previous leaf
	it.ents = it.ents[:0]
	clear(it.ovs)
	it.ovs = it.ovs[:0]
	it.page, it.merged, it.oi, it.onOv = p, false, 0, false
	it.pageLow, it.pageHigh = b.Low, b.High
	it.pageHasHigh = b.High != nil
	it.sibling = b.Sibling
	// Every key of the leaf lies in its fences: a bound equal to a fence
	// needs no binary search and no per-entry compare (a scan crossing
	// into the next leaf starts at its low fence).
	if lo != nil && bytes.Equal(lo, b.Low) {
		lo = nil
	}
	if hi != nil && b.High != nil && bytes.Equal(hi, b.High) {
		hi = nil
	}
	inPlace := p.Plain(it.vis)
	if !inPlace && fwd {
		it.ovs, inPlace = p.Overrides(lo, hi, it.vis, it.ovs)
		it.merged = inPlace
	}
	if inPlace {
		it.base = b
		it.start, it.end = 0, b.Len()
		if lo != nil {
			it.start = b.Search(lo)
		}
		if hi != nil {
			it.end = b.Search(hi)
		}
		return
	}
	it.base = nil
	p.Visible(lo, hi, it.vis, func(k, v []byte) {
		it.ents = append(it.ents, iterEntry{k[:len(k):len(k)], v[:len(v):len(v)]})
	})
	it.start, it.end = 0, len(it.ents)
}

// skipFwd moves forward from the current candidate (pos, and oi when
// merged) to the first visible key, past tombstones (kept in a plain base)
// and chain outcomes, and reports whether one is left in the leaf.
func (it *Iter) skipFwd() bool {
	if it.merged {
		return it.settle()
	}
	if it.base != nil && it.base.Tombstones {
		for it.pos < it.end && it.base.FlagsAt(it.pos)&delta.Tombstone != 0 {
			it.pos++
		}
	}
	return it.pos < it.end
}

// settle is skipFwd for a merged leaf: the smaller of the base entry at
// pos and the chain key at oi, the chain deciding a key both hold.
func (it *Iter) settle() bool {
	for {
		haveB, haveO := it.pos < it.end, it.oi < len(it.ovs)
		if !haveB && !haveO {
			return false
		}
		if haveO {
			o := &it.ovs[it.oi]
			c := -1
			if haveB {
				c = bytes.Compare(o.Key, it.base.KeyAt(it.pos))
			}
			if c <= 0 {
				switch {
				case !o.Resolved:
					// The base decides: the base entry at pos if the
					// keys are equal, else the key is absent.
					it.oi++
					continue
				case c == 0:
					it.pos++ // the chain decides over the base entry
				}
				if o.Present {
					it.onOv = true
					return true
				}
				it.oi++
				continue
			}
		}
		if it.base.FlagsAt(it.pos)&delta.Tombstone != 0 {
			it.pos++
			continue
		}
		it.onOv = false
		return true
	}
}

// below reloads the current leaf as the range of its keys below k and
// positions at the last visible one, reporting whether there is one. It
// turns a merged leaf (walked forward only) into one the iterator can
// move back in, and uncovers the keys a seek's cut left out.
func (it *Iter) below(k []byte) bool {
	it.load(it.page, nil, k, false)
	it.pos = it.end - 1
	return it.skipBack()
}

// above reloads the current leaf as the range of its keys above k and
// positions at the first visible one, reporting whether there is one.
func (it *Iter) above(k []byte) bool {
	it.load(it.page, k, nil, true)
	it.pos = it.start
	if !it.skipFwd() {
		return false
	}
	if !bytes.Equal(it.Key(), k) {
		return true
	}
	it.step()
	return it.skipFwd()
}

// startAhead starts warming the caches for the crossing into the right
// sibling of the leaf just loaded for a forward scan: the steps are
// spread over the leaf's entries in range, a fifth of them apart, so
// each step's prefetch has some entries' work to arrive in.
func (it *Iter) startAhead() {
	sc := it.sc
	if !it.pageHasHigh || it.db.hooks.noAhead.Load() || (it.hi != nil && bytes.Compare(it.pageHigh, it.hi) >= 0) {
		sc.ahead.Clear()
		sc.aheadAt = math.MaxInt
		return
	}
	it.db.tree.StartAhead(&sc.ahead, it.sibling)
	sc.aheadGap = max(1, (it.end-it.start)/5)
	sc.aheadAt = it.pos + sc.aheadGap
}

// stepAhead takes the next step of the warming startAhead began.
func (it *Iter) stepAhead() {
	sc := it.sc
	if sc.ahead.Done() {
		sc.aheadAt = math.MaxInt
		return
	}
	sc.ahead.Step()
	sc.aheadAt = it.pos + sc.aheadGap
}

// step moves past the current candidate, forward.
func (it *Iter) step() {
	if it.onOv {
		it.oi++
	} else {
		it.pos++
	}
}

// skipBack is skipFwd backward.
func (it *Iter) skipBack() bool {
	if it.base != nil {
		for it.pos >= it.start && it.base.FlagsAt(it.pos)&delta.Tombstone != 0 {
			it.pos--
		}
	}
	return it.pos >= it.start
}

// seekGE positions at the first visible key >= key (key nil: the start).
// right says key is the high fence of the leaf just left, whose right
// sibling is then tried before a descent from the root.
func (it *Iter) seekGE(key []byte, right bool) bool {
	it.off = 1
	for {
		if it.hi != nil && key != nil && bytes.Compare(key, it.hi) >= 0 {
			return it.invalidate()
		}
		var p *node.Page
		var err error
		if right {
			p, err = it.db.tree.RightLeaf(it.sibling, key)
		}
		if p == nil && err == nil {
			k := key
			if k == nil {
				k = []byte{}
			}
			p, err = it.db.tree.Leaf(k)
		}
		if err != nil {
			it.err = err
			return it.invalidate()
		}
		it.load(p, key, nil, true)
		it.pos = it.start
		it.startAhead()
		if it.skipFwd() {
			it.valid = true
			return true
		}
		if !it.pageHasHigh {
			return it.invalidate()
		}
		key, right = it.pageHigh, true
	}
}

// seekLT positions at the last visible key < key (key nil: the end).
func (it *Iter) seekLT(key []byte) bool {
	it.off = -1
	for {
		if it.lo != nil && key != nil && bytes.Compare(key, it.lo) <= 0 {
			return it.invalidate()
		}
		p, err := it.db.tree.LeafBelow(key)
		if err != nil {
			it.err = err
			return it.invalidate()
		}
		it.load(p, nil, key, false)
		it.pos = it.end - 1
		if it.skipBack() {
			it.valid = true
			return true
		}
		if len(it.pageLow) == 0 {
			return it.invalidate()
		}
		key = it.pageLow
	}
}

func (it *Iter) invalidate() bool {
	it.valid = false
	return false
}

// First positions at the first key in bounds.
func (it *Iter) First() bool {
	if !it.ok() {
		return false
	}
	return it.seekGE(it.lo, false)
}

// Last positions at the last key in bounds.
func (it *Iter) Last() bool {
	if !it.ok() {
		return false
	}
	return it.seekLT(it.hi)
}

// SeekGE positions at the first key >= k in bounds. k is only read during
// the call.
func (it *Iter) SeekGE(k []byte) bool {
	if !it.ok() {
		return false
	}
	if it.lo != nil && bytes.Compare(k, it.lo) < 0 {
		k = it.lo
	}
	return it.seekGE(k, false)
}

// SeekLT positions at the last key < k in bounds. k is only read during
// the call.
func (it *Iter) SeekLT(k []byte) bool {
	if !it.ok() {
		return false
	}
	if it.hi != nil && bytes.Compare(k, it.hi) > 0 {
		k = it.hi
	}
	return it.seekLT(k)
}

// Next moves to the next key. An iterator exhausted backward (Prev, Last
// or SeekLT found no key) moves to the first key in bounds; one exhausted
// forward, or never positioned, stays exhausted.
func (it *Iter) Next() bool {
	if !it.ok() {
		return false
	}
	if !it.valid {
		if it.off < 0 {
			return it.seekGE(it.lo, false)
		}
		return false
	}
	if it.cutHi {
		// The leaf may hold keys above the range a seek cut: reload it
		// above the current key.
		if it.above(it.Key()) {
			return true
		}
	} else {
		it.step()
		if it.skipFwd() {
			if it.pos >= it.sc.aheadAt {
				it.stepAhead()
			}
			return true
		}
	}
	if !it.pageHasHigh {
		it.off = 1
		return it.invalidate()
	}
	return it.seekGE(it.pageHigh, true)
}

// Prev moves to the previous key. An iterator exhausted forward (Next,
// First or SeekGE found no key) moves to the last key in bounds; one
// exhausted backward, or never positioned, stays exhausted.
func (it *Iter) Prev() bool {
	if !it.ok() {
		return false
	}
	if !it.valid {
		if it.off > 0 {
			return it.seekLT(it.hi)
		}
		return false
	}
	if it.merged || it.cutLo {
		// A merged leaf is walked forward only, and a cut one may hold
		// keys below the range a seek cut: reload it below the current
		// key.
		if it.below(it.Key()) {
			return true
		}
	} else {
		it.pos--
		if it.skipBack() {
			return true
		}
	}
	if len(it.pageLow) == 0 {
		it.off = -1
		return it.invalidate()
	}
	return it.seekLT(it.pageLow)
}

// All returns an iterator over the keys in bounds, from First on, for use
// with range. Key and value are valid only until the loop's next step.
// After the loop, check Error: a scan that stopped early for a reason
// other than break reports it there.
func (it *Iter) All() iter.Seq2[[]byte, []byte] {
	return func(yield func(k, v []byte) bool) {
		for ok := it.First(); ok; ok = it.Next() {
			if !yield(it.Key(), it.Value()) {
				return
			}
		}
	}
}

// Backward is All in descending key order, from Last on.
func (it *Iter) Backward() iter.Seq2[[]byte, []byte] {
	return func(yield func(k, v []byte) bool) {
		for ok := it.Last(); ok; ok = it.Prev() {
			if !yield(it.Key(), it.Value()) {
				return
			}
		}
	}
}

// Valid reports whether the iterator is positioned at a key: false once
// its snapshot or txn ended (Error then returns ErrClosed).
func (it *Iter) Valid() bool { return it.valid && it.ok() }

// Key returns the current key, valid until the next positioning call.
func (it *Iter) Key() []byte {
	if !it.valid {
		return nil
	}
	if it.onOv {
		return it.ovs[it.oi].Key
	}
	if it.base != nil {
		return it.base.KeyAt(it.pos)
	}
	return it.ents[it.pos].key
}

// Value returns the current value, valid until the next positioning call.
func (it *Iter) Value() []byte {
	if !it.valid {
		return nil
	}
	if it.onOv {
		return it.ovs[it.oi].Val
	}
	if it.base != nil {
		return it.base.ValueAt(it.pos)
	}
	return it.ents[it.pos].val
}

// Error returns the error that stopped the iterator, if any: ErrClosed
// once its snapshot or txn ended.
func (it *Iter) Error() error {
	if it.err == nil && !it.closed {
		it.ok()
	}
	return it.err
}

// Close releases the iterator. Closing twice, or after its snapshot or
// txn ended (or the DB closed), returns ErrClosed (ErrTxnTooOld if the
// engine aborted its txn as too old); the iterator is released either
// way.
func (it *Iter) Close() error {
	if it.closed {
		return ErrClosed
	}
	var ended error
	if err := it.ownerErr(); errors.Is(err, ErrClosed) || errors.Is(err, ErrTxnTooOld) {
		ended = err
	}
	it.closed = true
	it.valid = false
	// The buffers go back to the pool with no references into pages. Key
	// and Value slices handed out point into page memory, not into these
	// buffers, so reusing them changes nothing a caller holds; the bounds
	// were the iterator's own copies. The handle keeps no reference to
	// anything (it is never reused; see iterSlab).
	clear(it.ents)
	it.sc.ents = it.ents[:0]
	clear(it.ovs)
	it.sc.ovs = it.ovs[:0]
	it.sc.ahead.Clear()
	db, sc := it.db, it.sc
	*it = Iter{closed: true, err: it.err}
	it.live.Close()
	db.iterBufs.Put(sc)
	return ended
}
