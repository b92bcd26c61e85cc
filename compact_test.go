package bwkv_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
)

// compactWrites writes keys in random order, then overwrites a random
// half of them, leaving leaves with delta chains and data files with
// junk; it returns the latest value of every key and the live bytes.
func compactWrites(t *testing.T, db *bwkv.DB, keys, valSize int) (map[string]string, int64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(keys), 3))
	latest := make(map[string]string, keys)
	put := func(i, round int) {
		k := fmt.Sprintf("ck%07d", i)
		v := fmt.Sprintf("%s-%d-%0*d", k, round, valSize, rng.IntN(1e9))
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		latest[k] = v
	}
	for _, i := range rng.Perm(keys) {
		put(i, 0)
	}
	for n := 0; n < keys/2; n++ {
		put(rng.IntN(keys), 1)
	}
	var live int64
	for k, v := range latest {
		live += int64(len(k) + len(v))
	}
	return latest, live
}

// TestCompact: after random inserts and overwrites, Compact leaves no
// leaf with a delta chain, the data files within GCSpaceAmp and the whole
// directory within 1.3x the live keys and values, at once rather than
// after the idle settle (which this test holds off); every key reads its
// latest value, before and after a reopen.
func TestCompact(t *testing.T) {
	dir := t.TempDir()
	o := bwkv.WithTestSettle(&bwkv.Options{Durability: bwkv.DurabilityRelaxed, CheckpointBytes: 1 << 20, DataFileBytes: 1 << 20}, time.Hour, time.Hour)
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	latest, live := compactWrites(t, db, 6000, 300)
	st := db.Stats()
	if st.Tree.ChainHist[0] == st.Tree.Leaves {
		t.Fatalf("precondition: no leaf has a chain after the writes (%d leaves)", st.Tree.Leaves)
	}
	_, before := dataDirSize(t, dir)
	if err := db.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	st = db.Stats()
	data, total := dataDirSize(t, dir)
	t.Logf("leaves %d, chains %v; directory %d -> %d bytes (data files %d), live %d: %.2fx; GC space amp %.2f",
		st.Tree.Leaves, st.Tree.ChainHist, before, total, data, live, float64(total)/float64(live), st.GC.SpaceAmplification)
	if st.Tree.ChainHist[0] != st.Tree.Leaves {
		t.Fatalf("after Compact %d of %d leaves have a chain (histogram %v)", st.Tree.Leaves-st.Tree.ChainHist[0], st.Tree.Leaves, st.Tree.ChainHist)
	}
	if amp, want := st.GC.SpaceAmplification, db.Options().GCSpaceAmp; amp > want {
		t.Fatalf("data files' space amplification %.2f after Compact, want <= GCSpaceAmp %.2f", amp, want)
	}
	if float64(total) > 1.3*float64(live) {
		for name, sz := range listDir(t, dir) {
			t.Logf("%s %d", name, sz)
		}
		t.Fatalf("directory %.2fx the live data after Compact, want <= 1.3x", float64(total)/float64(live))
	}
	if st.BackgroundErrors != 0 {
		t.Fatalf("%d background errors", st.BackgroundErrors)
	}
	checkLatest(t, db, latest)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = reopenGC(t, dir)
	defer db.Close()
	checkLatest(t, db, latest)
}

// TestCompactErrors: a cancelled context, a closed database and a
// read-only one.
func TestCompactErrors(t *testing.T) {
	dir := t.TempDir()
	db, err := bwkv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := db.Compact(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Compact with a cancelled context: %v, want context.Canceled", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(context.Background()); !errors.Is(err, bwkv.ErrClosed) {
		t.Fatalf("Compact after Close: %v, want ErrClosed", err)
	}
	ro, err := bwkv.Open(dir, &bwkv.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Compact(context.Background()); !errors.Is(err, bwkv.ErrReadOnly) {
		t.Fatalf("Compact of a read-only database: %v, want ErrReadOnly", err)
	}
}

// TestCompactWhileWriting: Compact returns while a writer keeps writing
// (its passes are bounded), and nothing the writer or the first phase
// wrote is lost, before or after a reopen.
func TestCompactWhileWriting(t *testing.T) {
	dir := t.TempDir()
	o := &bwkv.Options{Durability: bwkv.DurabilityRelaxed, CheckpointBytes: 1 << 20, DataFileBytes: 1 << 20}
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	latest, _ := compactWrites(t, db, 3000, 200)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprintf("ck%07d", i%3000)
			v := fmt.Sprintf("%s-w%d", k, i)
			if err := db.Put([]byte(k), []byte(v)); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			latest[k] = v
			mu.Unlock()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = db.Compact(ctx)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Compact while writing: %v", err)
	}
	checkLatest(t, db, latest)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = reopenGC(t, dir)
	defer db.Close()
	checkLatest(t, db, latest)
}
