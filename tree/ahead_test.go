package tree

import (
	"fmt"
	"testing"

	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

// TestAheadWalksToSibling: the steps read the sibling's slot, then its
// published state, then its base, and stop after the base's entries.
func TestAheadWalksToSibling(t *testing.T) {
	tr := newTestTree()
	for i := 0; i < 40; i++ {
		put(t, tr, fmt.Sprintf("k%03d", i), uint32(i+1))
	}
	p, err := tr.Leaf([]byte("k000"))
	if err != nil || p == nil {
		t.Fatal(p, err)
	}
	sib := p.Base.Sibling
	if sib == 0 {
		t.Fatal("the first leaf has no sibling")
	}
	var a Ahead
	tr.StartAhead(&a, sib)
	if a.Done() || a.slot != tr.pt.Lookup(pagetable.PID(sib)) {
		t.Fatalf("start: done %v, slot %p", a.Done(), a.slot)
	}
	a.Step()
	if a.p != tr.pt.Load(pagetable.PID(sib)) {
		t.Fatal("the first step did not read the sibling's state")
	}
	for i := 0; i < 2; i++ {
		if a.Done() {
			t.Fatalf("done after %d steps, want 3", i+1)
		}
		a.Step()
	}
	if !a.Done() {
		t.Fatal("not done after the entries")
	}
	a.Step() // a step past the end does nothing
	if !a.Done() || a.p != tr.pt.Load(pagetable.PID(sib)) {
		t.Fatal("a step past the end changed the walk")
	}
	a.Clear()
	if !a.Done() || a.p != nil || a.slot != nil {
		t.Fatal("Clear kept references")
	}
}

// TestAheadStops: nothing to warm (no sibling, a PID whose chunk was
// never allocated, an empty slot) and a stub sibling, whose base holds no
// entries, end the walk early.
func TestAheadStops(t *testing.T) {
	tr := newTestTree()
	put(t, tr, "a", 1)
	var a Ahead
	for _, pid := range []uint64{0, 1 << 27} {
		tr.StartAhead(&a, pid)
		if !a.Done() {
			t.Fatalf("sibling %d: not done", pid)
		}
	}

	empty := tr.pt.Alloc()
	tr.StartAhead(&a, uint64(empty))
	if a.Done() {
		t.Fatal("an allocated slot's walk ended at its start")
	}
	a.Step()
	if !a.Done() {
		t.Fatal("an empty slot's walk went on")
	}

	leaf, err := tr.Leaf([]byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	stub := tr.pt.Alloc()
	tr.pt.Slot(stub).Store(&node.Page{Base: leaf.Base, Stub: &node.Stub{}})
	tr.StartAhead(&a, uint64(stub))
	a.Step()
	if a.Done() {
		t.Fatal("the walk ended before reading the stub's state")
	}
	a.Step()
	if !a.Done() {
		t.Fatal("a stub's walk went on to its entries")
	}
}
