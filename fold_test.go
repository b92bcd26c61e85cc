package bwkv_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/delta"
)

// foldOpts are the options of the fold tests: consolidation at 4 deltas,
// a cache that holds everything, no settling, no shortening by the
// evictor, the GC paused (the chains on disk stay as the checkpoints
// wrote them), and chains on disk folded up to foldMax deltas (negative:
// no folding).
func foldOpts(foldMax int) *bwkv.Options {
	o := &bwkv.Options{Durability: bwkv.DurabilityRelaxed, DeltaChainMax: 4, CacheBytes: 64 << 20, PageSplitEntries: 64}
	o = bwkv.WithTestFoldMax(bwkv.WithTestNoShorten(bwkv.WithTestSettle(bwkv.WithTestGCVerify(o), time.Hour, time.Hour)), foldMax)
	return bwkv.WithTestGCPaused(o)
}

// foldWrites makes, after 65 fillers that split the root leaf (into two
// leaves that take the keys without splitting again), rounds of
// overwrites of keys keys in one leaf, a checkpoint after each round
// when ckpt is set (else one at the end), and returns each key's newest
// value.
func foldWrites(t *testing.T, db *bwkv.DB, keys, rounds int, ckpt bool) map[string]string {
	t.Helper()
	for i := 0; i < 65; i++ {
		if err := db.Put([]byte(fmt.Sprintf("a%03d", i)), []byte("filler")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for r := 0; r < rounds; r++ {
		for i := 0; i < keys; i++ {
			k := fmt.Sprintf("key%02d", i)
			v := fmt.Sprintf("%s-%d-%s", k, r, strings.Repeat("v", 200))
			if err := db.Put([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		}
		if ckpt {
			if err := db.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	return want
}

// baseFrames counts page pid's base frames in frames.
func baseFrames(frames map[uint64]frameLoc, pid uint64) int {
	n := 0
	for _, f := range frames {
		if f.h.PID == pid && f.h.Kind == delta.KindBase {
			n++
		}
	}
	return n
}

func checkValues(t *testing.T, db *bwkv.DB, want map[string]string, when string) {
	t.Helper()
	for k, v := range want {
		got, err := db.Get([]byte(k))
		if err != nil || string(got) != v {
			t.Fatalf("%s: Get(%s) = %.20q, %v; want %.20q", when, k, got, err, v)
		}
	}
}

// TestFoldedCheckpoints: a consolidation over a durable base folds the
// chain (node.Fold): the checkpoints write the chain's deltas on top of
// the base frame already on disk instead of a new base frame per
// consolidation, so the leaf's chain on disk is that base and every delta
// written since, and the data files take fewer bytes than without
// folding. The folded state answers every read, on disk after eviction
// (the stub indexes the folded chain: a peek reads the key's deltas and
// the base), and after a reopen; the settle's squash then writes the leaf
// as one base frame. With several consolidations between two
// checkpoints the folds stack (each over the one before, not durable yet)
// and the one checkpoint writes all their deltas.
func TestFoldedCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		name string
		ckpt bool // a checkpoint after every round: each fold is over a durable base
	}{{"durable", true}, {"stacked", false}} {
		t.Run(tc.name, func(t *testing.T) {
			const keys, rounds = 6, 8 // 48 writes, one consolidation per 5
			dir := t.TempDir()
			db, err := bwkv.Open(dir, foldOpts(100))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { db.Close() }()
			want := foldWrites(t, db, keys, rounds, tc.ckpt)
			st := db.Stats()
			if st.Tree.Folds < 8 {
				t.Fatalf("%d of %d consolidations folded; want every one of the leaf's (at least 8)", st.Tree.Folds, st.Tree.Consolidations)
			}
			checkValues(t, db, want, "folded")
			frames := frameMap(t, dir)
			pid, chain := leafChain(t, frames)
			bases := baseFrames(frames, pid)
			if bases != 1 || len(chain) != keys*rounds+1 {
				t.Fatalf("page %d has %d base frames on disk and a chain of %d frames; want its first base under all %d deltas", pid, bases, len(chain), keys*rounds)
			}
			// Evicted, every key is read from the folded chain on disk,
			// through the index the fold handed to the stub.
			if bwkv.StubAll(db) == 0 {
				t.Fatal("no leaf stubbed")
			}
			if n := bwkv.StubIndexed(db, pid); n != keys*rounds {
				t.Fatalf("the stub indexes %d delta frames; the chain on disk has %d", n, keys*rounds)
			}
			for k, v := range want {
				got, ok, n, err := bwkv.PeekStub(db, pid, []byte(k), false)
				if err != nil || !ok || string(got) != v || n != rounds+1 {
					t.Fatalf("peek of %s = %.20q, %v, %v after %d frames; want %.20q after its %d deltas and the base", k, got, ok, err, n, v, rounds)
				}
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db, err = bwkv.Open(dir, foldOpts(100))
			if err != nil {
				t.Fatal(err)
			}
			checkValues(t, db, want, "reopened")
			if err := db.Check(context.Background()); err != nil {
				t.Fatal(err)
			}
			// The settle's squash writes the folded leaf as one base frame.
			if err := bwkv.SquashPage(db, pid); err != nil {
				t.Fatal(err)
			}
			if err := db.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			if c := pageChain(t, frameMap(t, dir), pid); len(c) != 1 {
				t.Fatalf("after the squash, page %d's chain on disk has %d frames; want one base", pid, len(c))
			}
			checkValues(t, db, want, "squashed")
		})
	}
}

// TestFoldBound: folding stops where the chain on disk would pass its
// bound, and that consolidation writes a base frame. Without folding every consolidation writes a base frame and the
// checkpoints write more bytes.
func TestFoldBound(t *testing.T) {
	run := func(foldMax int) (bwkv.Stats, int, int) {
		dir := t.TempDir()
		db, err := bwkv.Open(dir, foldOpts(foldMax))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		want := foldWrites(t, db, 6, 8, true)
		checkValues(t, db, want, fmt.Sprintf("fold bound %d", foldMax))
		frames := frameMap(t, dir)
		pid, chain := leafChain(t, frames)
		bases := baseFrames(frames, pid)
		return db.Stats(), bases, len(chain) - 1
	}
	none, noneBases, _ := run(-1)
	if none.Tree.Folds != 0 {
		t.Fatalf("%d folds with folding off", none.Tree.Folds)
	}
	bound, boundBases, deltas := run(12)
	// At most 12 folded, and the chain in memory above them (at most
	// DeltaChainMax) as deltas too.
	if bound.Tree.Folds == 0 || boundBases < 2 || deltas > 12+4 {
		t.Fatalf("bound 12: %d folds, %d base frames, a chain of %d deltas on disk; want folds, more than one base, at most 16 deltas", bound.Tree.Folds, boundBases, deltas)
	}
	all, _, _ := run(100)
	t.Logf("checkpoint bytes: %d no fold (%d bases), %d bound 12 (%d bases), %d unbounded", none.Checkpoint.Bytes, noneBases, bound.Checkpoint.Bytes, boundBases, all.Checkpoint.Bytes)
	if !(all.Checkpoint.Bytes < bound.Checkpoint.Bytes && bound.Checkpoint.Bytes < none.Checkpoint.Bytes) {
		t.Fatalf("checkpoint bytes %d (unbounded folds), %d (bound 12), %d (no folds): want each fewer than the next", all.Checkpoint.Bytes, bound.Checkpoint.Bytes, none.Checkpoint.Bytes)
	}
}
