package bwkv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/vfs"
)

// TestCarriedBasesWriteDeltas: a leaf that consolidates between
// checkpoints makes a carried base (never written), so the checkpoints
// write its new deltas instead of a whole base per round, at most 3/4 of
// the bytes here; every value reads back before and after a reopen, and
// Check passes. The same rounds with carrying off are the baseline.
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

// TestCarriedBasesPendingDeltas: carried consolidations whose absorbed
// deltas are not durable yet, several in a row on the same leaves (a
// carried base over a carried base), with checkpoints at irregular
// points, then a power loss: the checkpoints wrote those deltas (the
// pending ones), so after recovery every acknowledged value, and every
// deleted key, reads back, and Check passes. Without the pending deltas
// (mutant_carry_unwritten) the recovered pages lose writes or cannot be
// read. Default chains and leaves, and short chains in small leaves
// (every few writes a consolidation, carried or whole, or a split).
func TestCarriedBasesPendingDeltas(t *testing.T) {
	for _, tc := range []struct {
		name          string
		split, chain  int
		keys, valSize int
	}{
		{"default", 0, 0, 48, 400},
		{"small", 8, 3, 200, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testCarriedPending(t, tc.split, tc.chain, tc.keys, tc.valSize)
		})
	}
}

func testCarriedPending(t *testing.T, split, chain, keys, valSize int) {
	const writes = 3000
	key := func(i int) []byte { return fmt.Appendf(nil, "key%04d", i) }
	val := func(i, r int) []byte { return bytes.Repeat(fmt.Appendf(nil, "%d.%d;", i, r), valSize)[:valSize] }
	fs := vfs.NewMem()
	o := &bwkv.Options{FS: fs, PageSplitEntries: split, DeltaChainMax: chain}
	db, err := bwkv.Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	model := make(map[int][]byte)
	rng := rand.New(rand.NewPCG(3, 4))
	for w := 1; w <= writes; w++ {
		i := rng.IntN(keys)
		if rng.IntN(10) == 0 {
			if err := db.Delete(key(i)); err != nil {
				t.Fatal(err)
			}
			delete(model, i)
		} else {
			v := val(i, w)
			if err := db.Put(key(i), v); err != nil {
				t.Fatal(err)
			}
			model[i] = v
		}
		if rng.IntN(97) == 0 {
			if err := db.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := db.Stats()
	if st.Tree.Carried == 0 {
		t.Fatal("no consolidation carried")
	}
	clone := fs.CrashClone(vfs.CrashOptions{Seed: 1}) // power loss: unsynced writes lost
	db.Close()
	o.FS = clone
	if db, err = bwkv.Open("db", o); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range keys {
		v, err := db.Get(key(i))
		want, ok := model[i]
		switch {
		case ok && (err != nil || !bytes.Equal(v, want)):
			t.Fatalf("key %d: %.20q, %v; want %.20q", i, v, err, want)
		case !ok && !errors.Is(err, bwkv.ErrNotFound):
			t.Fatalf("deleted key %d: %.20q, %v", i, v, err)
		}
	}
	if err := db.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d consolidations carried; checkpoints wrote %d bytes", st.Tree.Carried, st.Tree.Consolidations, st.Checkpoint.Bytes)
}
