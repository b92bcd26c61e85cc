package bwkv_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/bwkv/bwkv"
)

// TestLeafSizeFollowsData: a database whose live data outgrows twice
// CacheBytes splits its leaves small (the tree is marked large after the
// publish that shows it, and at once when it is opened again), and goes
// back to whole leaves when the data is below 1.5 times (here: opened
// again with a larger cache); every value reads back throughout.
func TestLeafSizeFollowsData(t *testing.T) {
	dir := t.TempDir()
	o := bwkv.WithTestGCVerify(&bwkv.Options{Durability: bwkv.DurabilityRelaxed, CacheBytes: 1 << 20})
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	key := func(i int) []byte { return fmt.Appendf(nil, "key%06d", i) }
	val := func(i int) []byte { return bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 500) }
	put := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if err := db.Put(key(i), val(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	check := func(n int) {
		t.Helper()
		for i := range n {
			if v, err := db.Get(key(i)); err != nil || !bytes.Equal(v, val(i)) {
				t.Fatalf("key %d: %d bytes, %v", i, len(v), err)
			}
		}
	}
	put(0, 1000) // ~1 MiB: not large
	if bwkv.TreeLarge(db) {
		t.Fatalf("large with %d live bytes and a 1 MiB cache", db.Stats().GC.LiveBytes)
	}
	put(1000, 4000) // ~4 MiB: large
	if !bwkv.TreeLarge(db) {
		t.Fatalf("not large with %d live bytes and a 1 MiB cache", db.Stats().GC.LiveBytes)
	}
	check(4000)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = bwkv.Open(dir, o); err != nil {
		t.Fatal(err)
	}
	if !bwkv.TreeLarge(db) {
		t.Fatal("not large at once after the reopen")
	}
	check(4000)
	// Opened with a cache the data fits in, the tree is not large.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	o.CacheBytes = 64 << 20
	if db, err = bwkv.Open(dir, o); err != nil {
		t.Fatal(err)
	}
	if bwkv.TreeLarge(db) {
		t.Fatalf("large with %d live bytes and a 64 MiB cache", db.Stats().GC.LiveBytes)
	}
	put(4000, 4500)
	check(4500)
}

// TestLeavesLargeRule: large above twice the cache, small again below 1.5
// times, and between the two the tree keeps what it was.
func TestLeavesLargeRule(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		was  bool
		live int64
		want bool
	}{
		{false, 100 * mib, false}, {false, 200 * mib, false}, {false, 201 * mib, true},
		{false, 175 * mib, false}, {true, 175 * mib, true}, {true, 150 * mib, true},
		{true, 149 * mib, false}, {true, 0, false}, {true, 1 << 40, true},
	} {
		if got := bwkv.LeavesLarge(c.was, c.live, 100*mib); got != c.want {
			t.Errorf("was %v, %d MiB live, 100 MiB cache: %v, want %v", c.was, c.live/mib, got, c.want)
		}
	}
}
