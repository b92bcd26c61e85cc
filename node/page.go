package node

import (
	"bytes"
	"hash/maphash"
	"sync/atomic"
	"unsafe"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/internal/base"
)

// Page is one published page state. Immutable.
type Page struct {
	Base *delta.Base
	// Head is the newest delta (nil: none).
	Head *delta.Delta
	// Len is the chain length.
	Len int
	// Removed marks a page merged away: its PID no longer routes keys and a
	// traversal that meets it restarts from the root.
	Removed bool
	// Filter has one bit set per chain key (a 64-bit Bloom filter with one
	// hash): a point read whose bit is clear skips the chain walk.
	Filter uint64
	// Size is the memory of the base and chain, and of a carried base's
	// index (delta.Carry.IndexBytes) (0 on a state built from a base
	// alone: Bytes computes it).
	Size int
	// Stub is set on an evicted leaf whose entries are on disk only (see
	// Stub); Base then holds no entries.
	Stub *Stub

	// sorted is the chain in key order, built the first time a scan of
	// this state needs it (sortedChain) and shared by every later scan:
	// the state is immutable. Its memory is counted in Size by Prepend.
	sorted atomic.Pointer[sortedChain]
}

// joint is a state without a chain and its base, allocated together. A
// descent, and a scan's hop to a sibling, reads a page's state and then
// its base: side by side they cost fewer cache misses than two objects
// allocated apart.
type joint struct {
	st Page
	b  delta.Base
}

// NewState builds bd's page (as delta.Builder.Finish does) and returns a
// state holding only that base, the two in one allocation. The builder
// must not be used afterwards.
func NewState(bd *delta.Builder, low, high []byte, sibling uint64, level uint8) *Page {
	j := new(joint)
	bd.FinishInto(&j.b, low, high, sibling, level)
	j.st.Base = &j.b
	return &j.st
}

// PrefetchState hints the caches to load the state and, for a state
// allocated with its base (NewState), the base's fields right after it:
// a scan stepping to p then finds both in cache. For a state allocated
// apart the second part warms unrelated memory, which changes nothing.
// A hint only: it reads nothing of p.
func (p *Page) PrefetchState() {
	base.Prefetch(unsafe.Pointer(p), int(unsafe.Sizeof(joint{})))
}

// sortEntryBytes is the memory one chain delta takes in a sortedChain
// (a ver), counted per delta at Prepend so the cache budget owns it.
const sortEntryBytes = 64

// OverDisk returns stub p seen with disk, the versions of one key its
// durable state holds (newest first, as a base of that key alone), under
// its chain: for that key, Get and Versions answer as they would on the
// full page. For the point read or write of a page that stays on disk;
// the view is never installed.
func (p *Page) OverDisk(disk *delta.Base) *Page {
	return &Page{Base: disk, Head: p.Head, Len: p.Len, Filter: p.Filter}
}

// Bytes returns the memory the state holds: its base and its chain.
func (p *Page) Bytes() int {
	if p.Size == 0 {
		return p.Base.Bytes()
	}
	return p.Size
}

var filterSeed = maphash.MakeSeed()

// keyHash is a chain delta's Delta.KeyHash: never 0, which means unset.
func keyHash(key []byte) uint64 { return maphash.Bytes(filterSeed, key) | 1<<63 }

// keyBit is key's bit in a page's Filter.
func keyBit(h uint64) uint64 { return 1 << (h & 63) }

// chainOf returns where a walk of p's chain for key starts (nil: no chain
// delta can hold key, by the Filter) and key's keyHash for sameKey. The
// key is hashed only when p has a chain.
func (p *Page) chainOf(key []byte) (*delta.Delta, uint64) {
	if p.Head == nil {
		return nil, 0
	}
	h := keyHash(key)
	if p.Filter&keyBit(h) == 0 {
		return nil, h
	}
	return p.Head, h
}

// sameKey reports whether chain delta d holds key, whose keyHash is h.
func sameKey(d *delta.Delta, key []byte, h uint64) bool {
	return (d.KeyHash == 0 || d.KeyHash == h) && bytes.Equal(d.Key, key)
}

// Visibility decides whether a version written by txid is visible to the
// reader. Implementations must be safe for concurrent use.
type Visibility interface {
	Visible(txid uint64) bool
	// Low returns a txid below which every version is visible unless a
	// CLR masks it (the lowest unretired txid, or 0).
	Low() uint64
}

// Covers reports whether the page routes key (it is live and key lies in
// its fences).
func (p *Page) Covers(key []byte) bool {
	return !p.Removed && p.Base.Covers(key)
}

// Prepend returns a new state with d as the newest delta.
func (p *Page) Prepend(d *delta.Delta) *Page {
	d.Next = p.Head
	d.KeyHash = keyHash(d.Key)
	return &Page{Base: p.Base, Head: d, Len: p.Len + 1, Filter: p.Filter | keyBit(d.KeyHash), Size: p.Bytes() + d.Size() + sortEntryBytes, Stub: p.Stub}
}

// maskSet is a tiny set of txids whose versions a CLR hides, for one key.
type maskSet struct {
	inline [4]uint64
	n      int
	more   []uint64
}

func (m *maskSet) add(t uint64) {
	if m.n < len(m.inline) {
		m.inline[m.n] = t
		m.n++
		return
	}
	m.more = append(m.more, t)
}

func (m *maskSet) has(t uint64) bool {
	for i := 0; i < m.n; i++ {
		if m.inline[i] == t {
			return true
		}
	}
	for _, x := range m.more {
		if x == t {
			return true
		}
	}
	return false
}

func (m *maskSet) reset() { m.n = 0; m.more = m.more[:0] }

// hides applies one version of the key, newest first, to the set: a CLR
// joins it and is itself no version a reader sees; a version of a txid a
// newer CLR compensated is masked. It reports whether the version is
// hidden either way.
func (m *maskSet) hides(txid uint64, flags delta.Flags) bool {
	if flags&delta.CLR == 0 && m.n == 0 {
		return false // the common case, inlined
	}
	return m.hidesSlow(txid, flags)
}

// hidesSlow is hides for a CLR or a non-empty set. Not inlined, so that
// hides is.
//
//go:noinline
func (m *maskSet) hidesSlow(txid uint64, flags delta.Flags) bool {
	if flags&delta.CLR != 0 {
		m.add(txid)
		return true
	}
	return m.has(txid)
}

// Get returns the value of the newest version of key visible under vis.
// found is false when no version is visible or the visible one is a
// tombstone. The returned slice aliases immutable page memory: copy it
// before handing it out.
func (p *Page) Get(key []byte, vis Visibility) (val []byte, found bool) {
	var mask maskSet
	d, h := p.chainOf(key)
	for ; d != nil; d = d.Next {
		if !sameKey(d, key, h) {
			continue
		}
		if mask.hides(d.TxID, d.Flags) || !vis.Visible(d.TxID) {
			continue
		}
		return d.Value, d.Flags&delta.Tombstone == 0
	}
	b := p.Base
	for i := b.Search(key); i < b.Len(); i++ {
		// Ask for the value now: its lines arrive while the key is
		// compared and the version checked, before the caller copies it.
		b.PrefetchValue(i)
		if !b.KeyEqual(i, key) {
			break
		}
		e := b.At(i)
		if mask.hides(e.TxID, e.Flags) || !vis.Visible(e.TxID) {
			continue
		}
		return e.Value, e.Flags&delta.Tombstone == 0
	}
	return nil, false
}

// ChainMasks reports whether p's chain holds a CLR of key: one that may
// mask a version of key below the chain (tree's peek then reads key's
// durable versions down to the base).
func (p *Page) ChainMasks(key []byte) bool {
	d, h := p.chainOf(key)
	for ; d != nil; d = d.Next {
		if d.Flags&delta.CLR != 0 && sameKey(d, key, h) {
			return true
		}
	}
	return false
}

// Version is one version of a key as seen by Versions.
type Version struct {
	TxID  uint64
	Seq   uint32
	Flags delta.Flags
	Value []byte
}

// Versions calls fn for every version of key, newest first, skipping CLRs
// and the versions they mask, until fn returns false.
func (p *Page) Versions(key []byte, fn func(v Version) bool) {
	var mask maskSet
	d, h := p.chainOf(key)
	for ; d != nil; d = d.Next {
		if !sameKey(d, key, h) {
			continue
		}
		if mask.hides(d.TxID, d.Flags) {
			continue
		}
		if !fn(Version{d.TxID, d.Seq, d.Flags, d.Value}) {
			return
		}
	}
	b := p.Base
	for i := b.Search(key); i < b.Len(); i++ {
		if !b.KeyEqual(i, key) {
			return
		}
		e := b.At(i)
		if mask.hides(e.TxID, e.Flags) {
			continue
		}
		if !fn(Version{e.TxID, e.Seq, e.Flags, e.Value}) {
			return
		}
	}
}

// Has reports whether the page holds the exact version (txid, seq) of key,
// CLRs included (recovery's redo skips a version already present).
func (p *Page) Has(key []byte, txid uint64, seq uint32) bool {
	d, h := p.chainOf(key)
	for ; d != nil; d = d.Next {
		if d.TxID == txid && d.Seq == seq && sameKey(d, key, h) {
			return true
		}
	}
	b := p.Base
	for i := b.Search(key); i < b.Len(); i++ {
		if !b.KeyEqual(i, key) {
			return false
		}
		e := b.At(i)
		if e.TxID == txid && e.Seq == seq {
			return true
		}
	}
	return false
}
