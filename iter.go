package bwkv

import (
	"bytes"
	"errors"
	"iter"

	"github.com/bwkv/bwkv/node"
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

// bounds returns the [lo, hi) an IterOptions asks for, as copies.
func (o *IterOptions) bounds() (lo, hi []byte, err error) {
	if o == nil {
		return nil, nil, nil
	}
	if len(o.Prefix) > 0 {
		if o.LowerBound != nil || o.UpperBound != nil {
			return nil, nil, errPrefixWithBound
		}
		return bytes.Clone(o.Prefix), prefixEnd(o.Prefix), nil
	}
	if o.LowerBound != nil {
		lo = bytes.Clone(o.LowerBound)
	}
	if o.UpperBound != nil {
		hi = bytes.Clone(o.UpperBound)
	}
	return lo, hi, nil
}

// prefixEnd returns the smallest key greater than every key with prefix p,
// or nil (unbounded) when p is all 0xff bytes.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// Iter iterates a snapshot's or transaction's view in key order, in both
// directions. It works a leaf at a time: positioning on a leaf collects that
// leaf's visible entries. Key and Value are valid until the next positioning
// call and must not be modified: they point into immutable page memory that
// the engine never mutates or reuses (copy them to keep or change them). An
// Iter is for one goroutine.
type Iter struct {
	db     *DB
	vis    node.Visibility
	lo, hi []byte
	owner  func() error // the snapshot's or txn's liveness check

	// The current leaf's visible entries within bounds.
	ents []iterEntry
	pos  int
	// Fences of the leaf the entries came from (copies).
	pageLow, pageHigh []byte
	pageHasHigh       bool

	valid  bool
	err    error
	closed bool
}

type iterEntry struct {
	key, val []byte // alias immutable page memory
}

func newIter(db *DB, vis node.Visibility, o *IterOptions, owner func() error) (*Iter, error) {
	lo, hi, err := o.bounds()
	if err != nil {
		return nil, err
	}
	it := &Iter{db: db, vis: vis, owner: owner, lo: lo, hi: hi}
	if b, ok := db.iterBufs.Get().(*[]iterEntry); ok {
		it.ents = (*b)[:0]
	}
	return it, nil
}

func (it *Iter) ok() bool {
	if it.closed {
		it.err = ErrClosed
	} else if err := it.owner(); err != nil {
		// Its snapshot or txn ended (closed, committed, rolled back):
		// the iterator is closed for its user, whatever ended the owner.
		if errors.Is(err, ErrTxnDone) {
			err = ErrClosed
		}
		it.err = err
	}
	if it.err != nil {
		it.valid = false
		return false
	}
	return true
}

// load materializes the visible entries of leaf p within [from, to) and
// the iterator's bounds.
func (it *Iter) load(p *node.Page, from, to []byte) {
	b := p.Base
	lo := from
	if it.lo != nil && (lo == nil || bytes.Compare(it.lo, lo) > 0) {
		lo = it.lo
	}
	if len(b.Low) > 0 && (lo == nil || bytes.Compare(b.Low, lo) > 0) {
		lo = b.Low
	}
	hi := to
	if it.hi != nil && (hi == nil || bytes.Compare(it.hi, hi) < 0) {
		hi = it.hi
	}
	if b.High != nil && (hi == nil || bytes.Compare(b.High, hi) < 0) {
		hi = b.High
	}
	clear(it.ents) // drop references to the previous leaf
	it.ents = it.ents[:0]
	it.pageLow = append(it.pageLow[:0], b.Low...)
	it.pageHasHigh = b.High != nil
	it.pageHigh = append(it.pageHigh[:0], b.High...)
	// Every key of the leaf lies in its fences: a bound equal to a fence
	// needs no binary search and no per-entry compare (a scan crossing
	// into the next leaf starts at its low fence).
	if lo != nil && bytes.Equal(lo, b.Low) {
		lo = nil
	}
	if hi != nil && b.High != nil && bytes.Equal(hi, b.High) {
		hi = nil
	}
	p.Visible(lo, hi, it.vis, func(k, v []byte) {
		it.ents = append(it.ents, iterEntry{k[:len(k):len(k)], v[:len(v):len(v)]})
	})
}

// seekGE positions at the first visible key >= key (key nil: the start).
func (it *Iter) seekGE(key []byte) bool {
	for {
		if it.hi != nil && key != nil && bytes.Compare(key, it.hi) >= 0 {
			return it.invalidate()
		}
		k := key
		if k == nil {
			k = []byte{}
		}
		p, err := it.db.tree.Leaf(k)
		if err != nil {
			it.err = it.db.readErr(err)
			return it.invalidate()
		}
		it.load(p, key, nil)
		if len(it.ents) > 0 {
			it.pos = 0
			it.valid = true
			return true
		}
		if !it.pageHasHigh {
			return it.invalidate()
		}
		key = append([]byte(nil), it.pageHigh...)
	}
}

// seekLT positions at the last visible key < key (key nil: the end).
func (it *Iter) seekLT(key []byte) bool {
	for {
		if it.lo != nil && key != nil && bytes.Compare(key, it.lo) <= 0 {
			return it.invalidate()
		}
		p, err := it.db.tree.LeafBelow(key)
		if err != nil {
			it.err = it.db.readErr(err)
			return it.invalidate()
		}
		it.load(p, nil, key)
		if len(it.ents) > 0 {
			it.pos = len(it.ents) - 1
			it.valid = true
			return true
		}
		if len(it.pageLow) == 0 {
			return it.invalidate()
		}
		key = append([]byte(nil), it.pageLow...)
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
	return it.seekGE(it.lo)
}

// Last positions at the last key in bounds.
func (it *Iter) Last() bool {
	if !it.ok() {
		return false
	}
	return it.seekLT(it.hi)
}

// SeekGE positions at the first key >= k in bounds.
func (it *Iter) SeekGE(k []byte) bool {
	if !it.ok() {
		return false
	}
	if it.lo != nil && bytes.Compare(k, it.lo) < 0 {
		k = it.lo
	}
	return it.seekGE(bytes.Clone(k))
}

// SeekLT positions at the last key < k in bounds.
func (it *Iter) SeekLT(k []byte) bool {
	if !it.ok() {
		return false
	}
	if it.hi != nil && bytes.Compare(k, it.hi) > 0 {
		k = it.hi
	}
	return it.seekLT(bytes.Clone(k))
}

// Next moves to the next key.
func (it *Iter) Next() bool {
	if !it.ok() || !it.valid {
		return false
	}
	it.pos++
	if it.pos < len(it.ents) {
		return true
	}
	if !it.pageHasHigh {
		return it.invalidate()
	}
	return it.seekGE(append([]byte(nil), it.pageHigh...))
}

// Prev moves to the previous key.
func (it *Iter) Prev() bool {
	if !it.ok() || !it.valid {
		return false
	}
	it.pos--
	if it.pos >= 0 {
		return true
	}
	if len(it.pageLow) == 0 {
		return it.invalidate()
	}
	return it.seekLT(append([]byte(nil), it.pageLow...))
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

// Valid reports whether the iterator is positioned at a key.
func (it *Iter) Valid() bool { return it.valid }

// Key returns the current key, valid until the next positioning call.
func (it *Iter) Key() []byte {
	if !it.valid {
		return nil
	}
	return it.ents[it.pos].key
}

// Value returns the current value, valid until the next positioning call.
func (it *Iter) Value() []byte {
	if !it.valid {
		return nil
	}
	return it.ents[it.pos].val
}

// Error returns the error that stopped the iterator, if any.
func (it *Iter) Error() error { return it.err }

// Close releases the iterator. Closing twice returns ErrClosed.
func (it *Iter) Close() error {
	if it.closed {
		return ErrClosed
	}
	it.closed = true
	it.valid = false
	// The entry buffer goes back to the pool with no references into
	// pages; Key and Value slices handed out point into page memory, not
	// into this buffer, so reusing it changes nothing a caller holds.
	clear(it.ents)
	b := it.ents[:0]
	it.ents = nil
	it.db.iterBufs.Put(&b)
	return nil
}
