package tree

import (
	"hash/maphash"
	"math/rand/v2"
	"sync/atomic"

	"github.com/bwkv/bwkv/internal/invariants"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

// Leaf hints of point reads.
//
// Under a skewed load most reads are of a few keys, and each read descended
// every level to the same leaf (the descent was 22% of W2's CPU). hints
// maps a 64-bit hash of a key to the leaf a read of that key ended at: the
// slot (the hash's low bits) holds the leaf's PID and a tag (the hash's top
// 16 bits), so a read of another key that hashes to the slot misses on the
// tag alone, without touching the page. On a tag match the read takes the
// page only if it is a resident live leaf whose fences cover the key, the
// test a descent ends with (findHint), so a stale hint (the leaf split,
// merged, was evicted, or its PID reused) costs that check and then the
// descent. Only reads use hints: a writer descends, and so completes the
// half splits it crosses.
//
// Under a uniform load nearly every read misses, and the hash and the slot
// cost a uniform read of 1M keys ~4%. So the hints are used only while
// they pay: one read in hintProbeEvery probes them whatever the state and
// counts a hit or a miss; every hintWindow probes decide, by the hit rate,
// whether the other reads use them. A read that does not costs one random
// draw and one load of a flag nobody writes in a steady state. Invariants
// and race builds (the test suites) use the hints on every read, so every
// suite's reads go through them.

const (
	// hintSlots is the number of hints (a power of two): 8 KiB.
	hintSlots = 1 << 10
	// hintProbeEvery: one read in this many probes the hints.
	hintProbeEvery = 64
	// hintWindow probes decide; hints are used at a hit rate of at least
	// 1/hintMinRate.
	hintWindow  = 256
	hintMinRate = 4
	// hintStoreEvery: one miss in this many records its leaf, so a hot
	// key's slot, once right, is not written again and misses seldom
	// write the shared slots.
	hintStoreEvery = 4
	hintTagShift   = 48
	hintPIDMask    = 1<<hintTagShift - 1
)

type leafHints struct {
	seed  maphash.Seed
	slots [hintSlots]atomic.Uint64 // tag<<hintTagShift | PID; 0: none
	// on says the reads that do not probe use the hints.
	on atomic.Bool
	// window counts the probes of the current window (low 32 bits) and
	// their hits (high 32 bits).
	window atomic.Uint64
}

// hint is key's slot and tag; use says whether the read uses it.
type hint struct {
	slot       *atomic.Uint64
	tag        uint64
	use, probe bool
}

// of returns key's hint; its use is false when the read does not use hints.
func (h *leafHints) of(key []byte) hint {
	probe := rand.Uint32()%hintProbeEvery == 0
	if !probe && !h.on.Load() && !invariants.Enabled {
		return hint{}
	}
	x := maphash.Bytes(h.seed, key)
	return hint{&h.slots[x&(hintSlots-1)], x >> hintTagShift << hintTagShift, true, probe}
}

// count records a probe's outcome and, at the end of a window, decides.
func (h *leafHints) count(hit bool) {
	d := uint64(1)
	if hit {
		d |= 1 << 32
	}
	w := h.window.Add(d)
	if uint32(w) < hintWindow {
		return
	}
	if h.window.CompareAndSwap(w, 0) { // one prober decides; a lost CAS drops a window
		on := (w>>32)*hintMinRate >= hintWindow
		if h.on.Load() != on {
			h.on.Store(on)
		}
	}
}

// hinted returns the leaf h names for its key if it still covers key and
// is resident (no disk read); else (0, nil).
func (t *Tree) hinted(h hint, key []byte) (pagetable.PID, *node.Page) {
	if !h.use {
		return 0, nil
	}
	pid, p := t.hintedLeaf(h, key)
	if h.probe {
		t.hints.count(p != nil)
	}
	return pid, p
}

func (t *Tree) hintedLeaf(h hint, key []byte) (pagetable.PID, *node.Page) {
	v := h.slot.Load()
	if v&^hintPIDMask != h.tag || v&hintPIDMask == 0 {
		return 0, nil
	}
	pid := pagetable.PID(v & hintPIDMask)
	slot := t.pt.Lookup(pid)
	if slot == nil {
		return 0, nil
	}
	p := slot.Load()
	if p == nil || p.Base.Level != 0 || !p.Covers(key) {
		return 0, nil
	}
	slot.Touched()
	t.hits.add()
	return pid, p
}

// remember records pid as h's leaf (sometimes; see hintStoreEvery).
func (h hint) remember(pid pagetable.PID) {
	if !h.use || uint64(pid) > hintPIDMask || rand.Uint32()%hintStoreEvery != 0 {
		return
	}
	if v := h.tag | uint64(pid); h.slot.Load() != v {
		h.slot.Store(v)
	}
}
