package bwkv_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bwkv/bwkv"
)

// TestCarriedBasesWriteDeltas: a leaf that consolidates between
// checkpoints, its base and older deltas durable, consolidates only its
// durable part (a carried base, never written), so the checkpoints write
// its new deltas instead of a whole base per round, about half the bytes
// here; every value reads back before and after a reopen, and Check
// passes. The same rounds with carrying off are the baseline.
func TestCarriedBasesWriteDeltas(t *testing.T) {
	const keys, rounds, perRound = 24, 60, 3
	key := func(i int) []byte { return fmt.Appendf(nil, "key%04d", i) }
	val := func(i, r int) []byte { return bytes.Repeat(fmt.Appendf(nil, "%d.%d;", i, r), 250)[:1000] }
	run := func(t *testing.T, carry bool) bwkv.Stats {
		dir := t.TempDir()
		o := &bwkv.Options{Durability: bwkv.DurabilityRelaxed}
		if !carry {
			o = bwkv.WithTestNoCarry(o)
		}
		db, err := bwkv.Open(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { db.Close() }()
		last := make([]int, keys)
		for i := range keys {
			if err := db.Put(key(i), val(i, 0)); err != nil {
				t.Fatal(err)
			}
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for r := 1; r <= rounds; r++ {
			for range perRound {
				i := rng.IntN(keys)
				if err := db.Put(key(i), val(i, r)); err != nil {
					t.Fatal(err)
				}
				last[i] = r
			}
			if err := db.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
		check := func() {
			t.Helper()
			for i := range keys {
				if v, err := db.Get(key(i)); err != nil || !bytes.Equal(v, val(i, last[i])) {
					t.Fatalf("key %d: %q, %v; want round %d", i, v, err, last[i])
				}
			}
		}
		check()
		st := db.Stats()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if db, err = bwkv.Open(dir, o); err != nil {
			t.Fatal(err)
		}
		check()
		if err := db.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
		return st
	}
	on, off := run(t, true), run(t, false)
	t.Logf("checkpoint bytes: carried %d (%d of %d consolidations carried), whole bases %d (%d consolidations)",
		on.Checkpoint.Bytes, on.Tree.Carried, on.Tree.Consolidations, off.Checkpoint.Bytes, off.Tree.Consolidations)
	if on.Tree.Carried == 0 || off.Tree.Carried != 0 {
		t.Fatalf("carried consolidations: %d with carrying, %d without", on.Tree.Carried, off.Tree.Carried)
	}
	if 4*on.Checkpoint.Bytes > 3*off.Checkpoint.Bytes {
		t.Fatalf("checkpoints wrote %d bytes with carried bases, %d without: want at most 3/4", on.Checkpoint.Bytes, off.Checkpoint.Bytes)
	}
}
