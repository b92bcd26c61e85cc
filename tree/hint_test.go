package tree

import (
	"fmt"
	"testing"

	"github.com/bwkv/bwkv/pagetable"
)

// TestLeafHints: a read that uses the hints answers from the hinted leaf
// while it covers the key, and from a descent once it does not (the leaf
// split, or the hint names another leaf or a page that is gone), with the
// right value every time.
func TestLeafHints(t *testing.T) {
	tr := newTestTree()
	tr.hints.on.Store(true)
	for i := range 40 {
		put(t, tr, fmt.Sprintf("k%05d", i*100), 1)
	}
	key := []byte("k00500")
	get := func(k []byte) uint64 {
		t.Helper()
		v, ok, leaf, err := tr.GetLeaf(k, allVisible{})
		if err != nil || !ok || string(v) != string(k) {
			t.Fatalf("get %s = %q %v %v", k, v, ok, err)
		}
		return leaf
	}
	var leaf uint64
	for range 200 { // a miss records its leaf one time in hintStoreEvery
		leaf = get(key)
	}
	h := tr.hints.of(key)
	if pid, p := tr.hinted(h, key); p == nil || uint64(pid) != leaf {
		t.Fatalf("after 200 reads the hint gives %d (%v), want the leaf %d", pid, p != nil, leaf)
	}
	// The leaf splits under the hint: keys next to key move right.
	for i := range 20 {
		put(t, tr, fmt.Sprintf("k%05d", 501+i), 1)
	}
	for range 50 {
		if got := get(key); !tr.pt.Load(pagetable.PID(got)).Covers(key) {
			t.Fatalf("read answered from leaf %d, which does not cover %s", got, key)
		}
	}
	// A hint naming another leaf (a stale or reused PID) is not taken.
	other := get([]byte("k03900"))
	if other == leaf {
		t.Fatal("want two leaves")
	}
	h.slot.Store(h.tag | other)
	if _, p := tr.hinted(h, key); p != nil {
		t.Fatalf("the hint to leaf %d, which does not cover %s, was taken", other, key)
	}
	get(key)
	h.slot.Store(h.tag | 1<<40) // no such page
	get(key)
	if err := tr.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestLeafHintsAdapt: the hints are used while a window of probes hits at
// least 1 in hintMinRate, and not after a window that does not.
func TestLeafHintsAdapt(t *testing.T) {
	var h leafHints
	window := func(hits int) {
		for i := range hintWindow {
			h.count(i < hits)
		}
	}
	window(hintWindow / hintMinRate)
	if !h.on.Load() {
		t.Fatalf("a window of %d hits in %d left the hints off", hintWindow/hintMinRate, hintWindow)
	}
	window(hintWindow/hintMinRate - 1)
	if h.on.Load() {
		t.Fatal("a window below the hit rate left the hints on")
	}
	window(hintWindow)
	if !h.on.Load() {
		t.Fatal("a window of hits left the hints off")
	}
}
