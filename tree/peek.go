package tree

import (
	"bytes"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

// Point accesses of pages left on disk. Once the cache is full, loading
// a stub leaf for one key evicts another page to make room, and a page
// is worth that only if it is used again before it would itself be
// evicted. The cache decides at the miss (Env.Admit); a page it does not
// admit is searched on disk for the key (Env.Peek: its frames are read
// and scanned, nothing is decoded or installed) and stays a stub. A
// write then goes onto the stub's chain, as a blind insert does, with
// the key's durable versions (its old value and conflict check) taken
// from the peek.

// Peek is what Env.Peek found in a leaf's durable chain.
type Peek struct {
	// Disk holds the key's versions, newest first, as a base of that key
	// alone, with the page's fences and sibling link (its base frame's).
	Disk *delta.Base
	// Bytes is what the peek read, Frames the frames it read.
	Bytes, Frames int
	// Chain indexes the chain, when the peek read all of it (no index
	// given).
	Chain node.DiskChain
}

// Peeked carries a peek from a transaction's read to its write of the
// same key (GetLeafPeeked, WriteAtPeeked): the key's durable versions
// under the stub whose durable state starts at addr. Frames are
// immutable, so they stay the key's durable versions for as long as the
// page's stub keeps that address. The zero value holds nothing.
type Peeked struct {
	pid  pagetable.PID
	addr uint64
	key  []byte
	disk *delta.Base
}

// of returns the durable versions it holds for key under stub p of pid,
// or nil.
func (pk *Peeked) of(pid pagetable.PID, p *node.Page, key []byte) *delta.Base {
	if pk == nil || pk.disk == nil || pk.pid != pid || pk.addr != p.Base.Addr || !bytes.Equal(pk.key, key) {
		return nil
	}
	return pk.disk
}

// keep records a peek in pk (nil: not kept).
func (pk *Peeked) keep(pid pagetable.PID, p *node.Page, key []byte, disk *delta.Base) {
	if pk != nil {
		*pk = Peeked{pid: pid, addr: p.Base.Addr, key: append(pk.key[:0], key...), disk: disk}
	}
}

// peekable reports whether a point access of key on stub p is answered
// from disk: key may have durable versions, the stub's chain is short
// enough to take one more delta, and the cache does not admit the page.
func (t *Tree) peekable(p *node.Page, key []byte) bool {
	return t.env.Peek != nil && p.MayContain(key) && p.Len+p.Stub.DiskLen < 2*t.stubChainMax() && !t.env.Admit(p.Stub)
}

// peek reads key's durable versions under stub p of pid. It returns nil
// (and no error) if the read failed after the page moved on: the caller
// finds the page again. low, if not 0, lets the read end at the first
// version of key below it (Env.Peek), unless p's chain holds a CLR of key
// that could mask that version.
func (t *Tree) peek(pid pagetable.PID, p *node.Page, key []byte, low uint64) (*delta.Base, error) {
	var chain *node.DiskChain
	if p.Stub.Chain.Indexed() {
		chain = &p.Stub.Chain
	}
	if low != 0 && p.ChainMasks(key) {
		low = 0
	}
	// A copy: key reaching a func value would make every caller's key
	// escape, the point reads that never peek included.
	pk, err := t.env.Peek(pid, p.Base.Addr, bytes.Clone(key), chain, low)
	if err != nil {
		if t.pt.Slot(pid).Load() != p {
			return nil, nil
		}
		return nil, err
	}
	t.peeks.Add(1)
	t.missed.Add(int64(pk.Bytes))
	return pk.Disk, nil
}

// loadLeaf is load for leaf pid in a point access of key. A leaf with
// nothing in memory that the cache does not admit is not loaded: its chain
// is searched for key (Env.Peek), and the leaf comes back as a stub made
// from what that read (its base frame's fences, a filter that rules out
// no key), with the peek kept in pk for the caller.
func (t *Tree) loadLeaf(pid pagetable.PID, key []byte, pk *Peeked) (*node.Page, error) {
	slot := t.pt.Lookup(pid)
	if t.env.Peek == nil || slot == nil || slot.Load() != nil || t.env.Admit(nil) {
		return t.load(pid) // in memory, or to be loaded
	}
	for {
		addr := slot.Disk.Load()
		if p := slot.Load(); p != nil {
			return p, nil
		}
		if addr == 0 {
			return nil, nil
		}
		clock := t.missed.Load()
		r, err := t.env.Peek(pid, addr, bytes.Clone(key), nil, 0)
		if err != nil {
			if slot.Load() != nil || slot.Disk.Load() != addr {
				continue // the page moved on while we read: read it again
			}
			return nil, err
		}
		t.peeks.Add(1)
		t.missed.Add(int64(r.Bytes))
		st := node.DiskStub(r.Disk, addr, r.Frames-1, r.Chain)
		st.Stub.Miss(clock)
		slot.Mu.Lock()
		if slot.Load() == nil && slot.Disk.Load() == addr {
			t.pt.Account(slot, int64(st.Bytes()), false)
			t.stubBytes.Add(int64(st.Stub.Own))
			slot.Store(st)
			slot.Mu.Unlock()
			if t.env.Loaded != nil {
				t.env.Loaded(pid) // an eviction candidate
			}
			pk.keep(pid, st, key, r.Disk)
			return st, nil
		}
		slot.Mu.Unlock()
	}
}

// low returns the lowest unretired txid for a writer's peek to settle at
// (Env.Peek), or 0 (no settling) without a Retention.
func (t *Tree) low() uint64 {
	if t.env.Retention == nil {
		return 0
	}
	return t.env.Retention.Low()
}

// MissedBytes returns the bytes of the pages read from disk since the
// tree was made, loaded or peeked: the page cache's clock for admitting
// pages (cache.Cache.Admit).
func (t *Tree) MissedBytes() int64 { return t.missed.Load() }
