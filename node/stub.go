package node

import (
	"bytes"
	"hash/maphash"
	"math/bits"
	"sync/atomic"

	"github.com/bwkv/bwkv/delta"
)

// Stub describes the on-disk part of an evicted leaf. A stub page keeps the
// leaf's fences, sibling and level in an entry-less Base whose Addr is the
// page's newest durable frame, a Bloom filter over every key that durable
// state holds, and, as its chain, the deltas installed since (blind writes).
//
// A stub answers exactly for a key its filter rules out: no version of that
// key exists below the chain, so a write of it is an insert (no old value,
// no conflict beyond the chain) and a read of it sees only the chain. Any
// other key needs the full page (Tree.Full). Immutable.
type Stub struct {
	bits []uint64
	// n counts the keys added (with repeats across re-stubs: an estimate
	// that only sizes the filter).
	n int
	// DiskLen counts the delta frames above the base on disk (a full load
	// reads DiskLen+1 frames).
	DiskLen int
	// Own is the memory of the stub state without its chain.
	Own int
	// Chain indexes the durable chain under the stub's base address (the
	// zero value: not indexed).
	Chain DiskChain
	// missed is the cache clock (plus one; 0: none) at the last point read
	// or write that missed the page (Miss).
	missed atomic.Int64
	// short records whether the last miss came soon after the one before
	// it (Short).
	short atomic.Bool
}

// Miss records a point access that did not find the page in memory at
// cache clock now (the bytes of pages read from disk so far:
// tree.Tree.MissedBytes), and returns the clock of the previous one (ok
// false: none recorded since the page was last in memory). O(1), safe
// for concurrent use: the only mutable part of a stub.
func (s *Stub) Miss(now int64) (prev int64, ok bool) {
	p := s.missed.Swap(now + 1)
	return p - 1, p != 0
}

// Short records whether the miss just recorded (Miss) came soon after
// the one before it, by the caller's measure, and reports whether the one
// before that did too: two short reuse distances in a row. O(1), safe for
// concurrent use.
func (s *Stub) Short(short bool) bool { return s.short.Swap(short) && short }

var stubSeed = maphash.MakeSeed()

// DiskChain indexes a leaf's durable chain, so that a point read of one
// key on disk reads only the frames that may hold it: Frames are the
// chain's delta frames from the top down, each with its key's ChainHash,
// and Rest is the address where the chain goes on unindexed, read frame
// by frame down to the base (the base frame's own address when every
// delta is indexed; 0: no index, the whole chain is read from its head).
// A data-file GC rewrite may consolidate the chain at a frame the index
// skips; the frames below stay readable until their files are rewritten,
// and a reader that finds one gone reads the chain from its head instead.
type DiskChain struct {
	Frames []ChainFrame
	Rest   uint64
}

// ChainFrame is one delta frame of a DiskChain.
type ChainFrame = delta.ChainFrame

// maxChainIndex bounds the frames a DiskChain indexes; the rest of a
// longer chain is read frame by frame.
const maxChainIndex = 128

// ChainHash is the hash of a key that a DiskChain keeps per frame: the
// key's keyHash folded, so a delta in a chain has it without hashing its
// key again (DeltaChainHash).
func ChainHash(key []byte) uint32 { return foldHash(keyHash(key)) }

// DeltaChainHash is ChainHash of d's key, from the hash d keeps once it
// joined a chain.
func DeltaChainHash(d *delta.Delta) uint32 {
	if d.KeyHash == 0 {
		return ChainHash(d.Key)
	}
	return foldHash(d.KeyHash)
}

func foldHash(h uint64) uint32 { return uint32(h ^ h>>32) }

// Indexed reports whether the chain has an index.
func (c *DiskChain) Indexed() bool { return c.Rest != 0 }

// Bound returns c with at most maxChainIndex frames indexed.
func (c DiskChain) Bound() DiskChain {
	if len(c.Frames) > maxChainIndex {
		c.Rest = c.Frames[maxChainIndex].Addr
		c.Frames = c.Frames[:maxChainIndex:maxChainIndex]
	}
	return c
}

// bytes is the index's memory.
func (c *DiskChain) bytes() int { return 16 * cap(c.Frames) }

// stubChain indexes the durable chain of p, a leaf whose every frame is
// durable (NewStub): p's deltas, then, on a stub, the stub's own index
// (or its head, unindexed below); on a carried base, the index of the
// delta frames it stands for (delta.Carry; or its address, unindexed
// below); else p's base frame. A frame without an address (a page built
// outside the generational pool) leaves it unindexed.
func stubChain(p *Page) DiskChain {
	below := DiskChain{Rest: p.Base.Addr}
	if p.Stub != nil {
		if p.Stub.Chain.Indexed() {
			below = p.Stub.Chain
		}
	} else if c := p.Base.Carry(); c != nil && c.Rest != 0 {
		below = DiskChain{Frames: c.Index, Rest: c.Rest}
	}
	if below.Rest == 0 {
		return DiskChain{}
	}
	c := DiskChain{Frames: make([]ChainFrame, 0, min(p.Len+len(below.Frames), maxChainIndex+1))}
	for d := p.Head; d != nil; d = d.Next {
		if d.Addr == 0 {
			return DiskChain{}
		}
		c.Frames = append(c.Frames, ChainFrame{Addr: d.Addr, Hash: DeltaChainHash(d)})
		if len(c.Frames) > maxChainIndex {
			return c.Bound()
		}
	}
	for _, f := range below.Frames {
		c.Frames = append(c.Frames, f)
		if len(c.Frames) > maxChainIndex {
			return c.Bound()
		}
	}
	c.Rest = below.Rest
	return c
}

const stubHashes = 5

func stubHash(key []byte) (uint64, uint64) {
	h := maphash.Bytes(stubSeed, key)
	return h, h>>32 | h<<32 | 1
}

func (s *Stub) add(key []byte) {
	m := uint64(len(s.bits) * 64)
	h, d := stubHash(key)
	for i := 0; i < stubHashes; i++ {
		b := h % m
		s.bits[b/64] |= 1 << (b % 64)
		h += d
	}
}

// MayContain reports whether key may have versions below the chain (false
// is exact: it has none).
func (s *Stub) MayContain(key []byte) bool {
	m := uint64(len(s.bits) * 64)
	h, d := stubHash(key)
	for i := 0; i < stubHashes; i++ {
		b := h % m
		if s.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
		h += d
	}
	return true
}

// MayContain reports whether key may have versions in the page that the
// state does not hold in memory (always false for a full page).
func (p *Page) MayContain(key []byte) bool { return p.Stub != nil && p.Stub.MayContain(key) }

// NewStub returns the stub state of p, a leaf whose every frame is durable
// with head its newest frame's address. The stub shares no memory with p's
// base (fences are copied), so the base's slab can be reclaimed.
func NewStub(p *Page, head uint64) *Page {
	b := p.Base
	keys, diskLen := p.Len, p.Len
	if p.Stub == nil {
		keys += b.Keys
		depth, _ := b.DiskChain() // a carried base's delta frames on disk
		diskLen += depth
	} else {
		keys += p.Stub.n
		diskLen += p.Stub.DiskLen
	}
	// About 16 bits per key and 5 hashes: well under 1% false positives.
	words := 1 << bits.Len(uint(max(keys, 4)*16/64-1))
	if p.Stub != nil {
		words = max(words, len(p.Stub.bits))
	}
	s := &Stub{bits: make([]uint64, words), n: keys, DiskLen: diskLen, Chain: stubChain(p)}
	if p.Stub != nil {
		s.missed.Store(p.Stub.missed.Load()) // the page stayed on disk
		s.short.Store(p.Stub.short.Load())
		// Fold the old filter into the new one: sizes are powers of two,
		// so a key's bit positions modulo the old size are the old ones.
		for i := range s.bits {
			s.bits[i] = p.Stub.bits[i%len(p.Stub.bits)]
		}
	}
	var prev []byte
	for i := 0; i < b.Len(); i++ {
		if k := b.KeyAt(i); i == 0 || !bytes.Equal(k, prev) {
			s.add(k)
			prev = k
		}
	}
	for d := p.Head; d != nil; d = d.Next {
		s.add(d.Key)
	}
	var bd delta.Builder
	nb := bd.Finish(bytes.Clone(b.Low), cloneHigh(b.High), b.Sibling, b.Level)
	nb.Addr = head
	st := &Page{Base: nb, Stub: s}
	st.Size = nb.Bytes() + 8*len(s.bits) + 32 + s.Chain.bytes()
	s.Own = st.Size
	return st
}

// DiskStub returns the stub state of a leaf read from disk for one key
// only: fences holds the page's fences and sibling (its base frame's),
// head is its newest durable frame's address, diskLen the delta frames
// above its base and chain their index (if the read made one). Its
// filter rules out no key: every key may have versions on disk.
func DiskStub(fences *delta.Base, head uint64, diskLen int, chain DiskChain) *Page {
	var bd delta.Builder
	nb := bd.Finish(fences.Low, fences.High, fences.Sibling, 0)
	nb.Addr = head
	s := &Stub{bits: []uint64{^uint64(0)}, DiskLen: diskLen, Chain: chain.Bound()}
	st := &Page{Base: nb, Stub: s}
	st.Size = nb.Bytes() + 8 + 32 + s.Chain.bytes()
	s.Own = st.Size
	return st
}

func cloneHigh(h []byte) []byte {
	if h == nil {
		return nil
	}
	return bytes.Clone(h)
}
