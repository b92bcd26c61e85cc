package tree

import (
	"unsafe"

	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

// Ahead warms the CPU caches for a forward scan's crossing into the leaf
// right of the one it reads, while it reads it. The crossing (RightLeaf,
// then the first keys) is a chain of dependent loads, each a likely cache
// miss: the sibling's mapping-table slot, its state, its base, and the
// base's entries and keys. Ahead takes them one step at a time: each Step
// reads the line the previous one asked for (by then in cache, or on its
// way) and asks for the next one with a prefetch hint, which returns at
// once. The scan spaces the steps over the entries of the current leaf.
//
// A hint only: Ahead reads published, immutable states and changes
// nothing; RightLeaf loads and checks the sibling as it would without it.
type Ahead struct {
	slot  *pagetable.Slot[node.Page]
	p     *node.Page
	stage uint8
}

// aheadDone is the stage after the last step.
const aheadDone = 4

// StartAhead starts warming for the leaf with PID sibling (0: none) and
// takes the first step.
func (t *Tree) StartAhead(a *Ahead, sibling uint64) {
	a.Clear()
	if sibling == 0 {
		return
	}
	slot := t.pt.Lookup(pagetable.PID(sibling))
	if slot == nil {
		return
	}
	a.slot, a.stage = slot, 1
	base.Prefetch(unsafe.Pointer(slot), 8)
}

// Done reports whether every step was taken (or there is nothing to
// warm).
func (a *Ahead) Done() bool { return a.stage >= aheadDone }

// Step takes the next step: the state, then the base's fields, then its
// entries and keys.
func (a *Ahead) Step() {
	switch a.stage {
	case 1:
		a.p = a.slot.Load()
		if a.p == nil {
			a.stage = aheadDone
			return
		}
		a.p.PrefetchState()
	case 2:
		b := a.p.Base
		if b == nil || a.p.Stub != nil {
			a.stage = aheadDone
			return
		}
		b.PrefetchHeader()
	case 3:
		a.p.Base.PrefetchEntries()
	}
	a.stage++
}

// Clear drops the references Ahead holds.
func (a *Ahead) Clear() { *a = Ahead{stage: aheadDone} }
