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
	"github.com/bwkv/bwkv/vfs"
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

// checkAfterReopen checks that every key reads its latest value, closes
// db, reopens dir and checks again; it returns the reopened DB.
func checkAfterReopen(t *testing.T, db *bwkv.DB, dir string, latest map[string]string) *bwkv.DB {
	t.Helper()
	checkLatest(t, db, latest)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = reopenGC(t, dir)
	checkLatest(t, db, latest)
	return db
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
	checkSettledDir(t, dir, total, live, "after Compact")
	if st.BackgroundErrors != 0 {
		t.Fatalf("%d background errors", st.BackgroundErrors)
	}
	db = checkAfterReopen(t, db, dir, latest)
	db.Close()
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
	db = checkAfterReopen(t, db, dir, latest)
	db.Close()
}

// TestCompactIOErrors: an I/O error at any of Compact's file operations
// (sampled evenly, EIO and ENOSPC) makes Compact return an error that
// wraps the fault or ErrReadOnly, or succeed if the step that failed is
// retried, never hang or lose data: after a reopen every key reads its
// latest value and Check passes.
func TestCompactIOErrors(t *testing.T) {
	run := func(failAt int64, kind vfs.FaultKind) (total int64, compactErr error) {
		fs := vfs.NewMem()
		inj := vfs.NewInjector(fs)
		opts := func(fs vfs.FS) *bwkv.Options {
			return bwkv.WithTestSettle(&bwkv.Options{FS: fs, CheckpointBytes: 256 << 10, DataFileBytes: 256 << 10,
				WALSegmentBytes: 1 << 20, MaxValueSize: 4 << 10, MaxKeySize: 1 << 10}, time.Hour, time.Hour)
		}
		db, err := bwkv.Open("db", opts(inj))
		if err != nil {
			t.Fatal(err)
		}
		latest, _ := compactWrites(t, db, 800, 100)
		if err := db.Sync(); err != nil {
			t.Fatal(err)
		}
		base := inj.Ops()
		if failAt > 0 {
			inj.SetFailAt(base+failAt, kind)
		}
		compactErr = db.Compact(context.Background())
		total = inj.Ops() - base
		db.Close()
		rdb, err := bwkv.Open("db", opts(fs))
		if err != nil {
			t.Fatalf("fail at %d (%v): reopen: %v", failAt, kind, err)
		}
		defer rdb.Close()
		checkLatest(t, rdb, latest)
		if err := rdb.Check(context.Background()); err != nil {
			t.Fatalf("fail at %d (%v): Check: %v", failAt, kind, err)
		}
		return total, compactErr
	}
	total, err := run(0, vfs.FaultNone)
	if err != nil || total == 0 {
		t.Fatalf("clean Compact: %v after %d file operations", err, total)
	}
	samples := total // every operation
	if testing.Short() || raceEnabled {
		samples = min(total, 12) // about 0.2 s a run under the race detector
	}
	failed := 0
	for s := int64(0); s < samples; s++ {
		i := 1 + s*(total-1)/max(samples-1, 1)
		for _, kind := range []vfs.FaultKind{vfs.FaultEIO, vfs.FaultENOSPC} {
			_, err := run(i, kind)
			if err != nil {
				failed++
				if !errors.Is(err, vfs.ErrInjected) && !errors.Is(err, bwkv.ErrReadOnly) {
					t.Fatalf("%v at op %d of %d: Compact returned %v, which wraps neither the fault nor ErrReadOnly", kind, i, total, err)
				}
			}
		}
	}
	t.Logf("%d file operations in a clean Compact; %d of %d faulted runs returned an error", total, failed, 2*samples)
	if failed == 0 {
		t.Fatal("no injected fault reached Compact's caller")
	}
}

// TestCompactClose: Close while Compact runs; Compact returns nil or
// ErrClosed, and Close returns.
func TestCompactClose(t *testing.T) {
	dir := t.TempDir()
	db, err := bwkv.Open(dir, bwkv.WithTestSettle(&bwkv.Options{Durability: bwkv.DurabilityRelaxed, CheckpointBytes: 1 << 20}, time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	latest, _ := compactWrites(t, db, 4000, 200)
	done := make(chan error, 1)
	go func() { done <- db.Compact(context.Background()) }()
	time.Sleep(time.Millisecond)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, bwkv.ErrClosed) {
			t.Fatalf("Compact during Close: %v, want nil or ErrClosed", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Compact did not return after Close")
	}
	db = reopenGC(t, dir)
	defer db.Close()
	checkLatest(t, db, latest)
}
