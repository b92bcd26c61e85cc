package bwkv_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/bwkv/bwkv"
)

// openFDs counts the process's open file descriptors (Linux).
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors: %v", err)
	}
	return len(ents)
}

// TestBoundedOpenFiles: hundreds of tiny checkpoints leave hundreds of
// data files that pages' chains reach into; with MaxOpenFiles 8 (4 KiB data files, so merging keeps many) and a
// 1-byte cache (every read reloads its page from disk), the process's
// open descriptors stay within the bound plus a few, and every read
// succeeds. Before pool.Files every data file stayed open until retired.
func TestBoundedOpenFiles(t *testing.T) {
	const maxOpen = 8
	rounds := 300
	if testing.Short() {
		rounds = 120
	}
	dir := t.TempDir()
	o := &bwkv.Options{CacheBytes: 1, CheckpointBytes: 1 << 20, DataFileBytes: 4096, MaxOpenFiles: maxOpen, GCLiveRatio: 0.01, GCSpaceAmp: 100, Durability: bwkv.DurabilityRelaxed}
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	base := openFDs(t)
	peak := base
	rng := rand.New(rand.NewPCG(7, 7))
	want := map[string][]byte{}
	key := func(i int) string { return fmt.Sprintf("k%06d", i) }
	// Many leaves, each touched rarely afterwards: the checkpoints' files
	// stay live (a leaf's chain reaches back into them).
	for i := 0; i < 20000; i += 500 {
		err := db.Update(func(tx *bwkv.Txn) error {
			for j := i; j < i+500; j++ {
				if err := tx.Put([]byte(key(j)), []byte("v0")); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for r := range rounds {
		// A few updates scattered over a fixed key space: every leaf's
		// chain reaches into many checkpoints' files.
		err := db.Update(func(tx *bwkv.Txn) error {
			for range 4 {
				k := key(rng.IntN(20000))
				v := fmt.Appendf(nil, "v%d-%s", r, k)
				want[k] = v
				if err := tx.Put([]byte(k), v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		if r%10 == 0 {
			peak = max(peak, openFDs(t))
			for k, v := range want {
				if got, err := db.Get([]byte(k)); err != nil || !bytes.Equal(got, v) {
					t.Fatalf("round %d: Get(%s) = %q, %v; want %q", r, k, got, err, v)
				}
				peak = max(peak, openFDs(t))
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.data"))
	t.Logf("%d checkpoints, %d data files on disk, descriptors: %d after open, peak %d", rounds, len(files), base, peak)
	if len(files) <= 2*maxOpen {
		t.Fatalf("only %d data files: the test does not exercise the bound", len(files))
	}
	// The bound, plus the checkpoint's file being written, one GC output
	// and a GC victim held by a reader.
	if peak > base+maxOpen+3 {
		t.Fatalf("peak %d descriptors, %d after open: more than MaxOpenFiles %d (+3) data files open", peak, base, maxOpen)
	}
	// Reopen: nothing open yet; reads reload every page through the cache.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = bwkv.Open(dir, o); err != nil {
		t.Fatal(err)
	}
	base = openFDs(t)
	peak = base
	for k, v := range want {
		if got, err := db.Get([]byte(k)); err != nil || !bytes.Equal(got, v) {
			t.Fatalf("after reopen: Get(%s) = %q, %v; want %q", k, got, err, v)
		}
		peak = max(peak, openFDs(t))
	}
	if peak > base+maxOpen+3 {
		t.Fatalf("after reopen: peak %d descriptors, %d after open: more than MaxOpenFiles %d (+3) data files", peak, base, maxOpen)
	}
}
