package bwkv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/vfs"
)

// blobOpts are options with blob files at a small threshold, small pages
// and data files, and an eager GC.
func blobOpts(threshold int) *bwkv.Options {
	return &bwkv.Options{
		Durability:       bwkv.DurabilityRelaxed,
		BlobThreshold:    threshold,
		PageSplitEntries: 8,
		DeltaChainMax:    3,
		CheckpointBytes:  256 << 10,
		DataFileBytes:    256 << 10,
		WALSegmentBytes:  4 << 20,
		MaxValueSize:     1 << 20,
		GCLiveRatio:      0.9,
		GCSpaceAmp:       1,
	}
}

// blobValue returns a value of n bytes that names key and version.
func blobValue(key string, ver, n int) []byte {
	v := bytes.Repeat([]byte{byte('a' + ver%26)}, n)
	copy(v, fmt.Sprintf("%s:%d:", key, ver))
	return v
}

// TestBlobOptions: BlobThreshold's zero means the default, a negative
// value off, a positive value below the minimum is refused; the stored
// threshold wins on reopen, including "off".
func TestBlobOptions(t *testing.T) {
	o := (&bwkv.Options{}).EnsureDefaults()
	if o.BlobThreshold != bwkv.DefaultBlobThreshold {
		t.Fatalf("default BlobThreshold %d", o.BlobThreshold)
	}
	bad := bwkv.Options{BlobThreshold: 10}
	if err := bad.Clone().EnsureDefaults().Validate(); err == nil || !strings.Contains(err.Error(), "BlobThreshold 10") {
		t.Fatalf("Validate(BlobThreshold 10) = %v", err)
	}
	for _, tc := range []struct{ create, reopen, want int }{
		{1000, -1, 1000}, {-1, 0, -1}, {0, 500, bwkv.DefaultBlobThreshold},
	} {
		dir := t.TempDir()
		db, err := bwkv.Open(dir, &bwkv.Options{BlobThreshold: tc.create})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Put([]byte("k"), make([]byte, 2000)); err != nil {
			t.Fatal(err)
		}
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db, err = bwkv.Open(dir, &bwkv.Options{BlobThreshold: tc.reopen})
		if err != nil {
			t.Fatal(err)
		}
		if got := db.Options().BlobThreshold; got != tc.want {
			t.Errorf("created with %d, reopened with %d: BlobThreshold %d, want %d", tc.create, tc.reopen, got, tc.want)
		}
		if v, err := db.Get([]byte("k")); err != nil || len(v) != 2000 {
			t.Fatalf("get: %d bytes, %v", len(v), err)
		}
		if on := tc.want > 0 && tc.want <= 2000; on != (db.Stats().Checkpoint.BlobReads > 0) {
			t.Errorf("created with %d: %d blob reads", tc.create, db.Stats().Checkpoint.BlobReads)
		}
		db.Close()
	}
}

// TestBlobRoundTrip: values just below, at and far above the threshold
// read back the same across checkpoints, eviction, GC rewrites and
// reopens, by Get and by scans; Get returns a slice the caller owns.
func TestBlobRoundTrip(t *testing.T) {
	const threshold = 1024
	sizes := []int{threshold - 1, threshold, 256 << 10}
	keys := 24
	if testing.Short() || raceEnabled {
		keys = 12
	}
	dir := t.TempDir()
	o := blobOpts(threshold)
	o.CacheBytes = 1 // evict whatever is clean
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	latest := map[string][]byte{}
	put := func(i, ver int) {
		k := fmt.Sprintf("key%04d", i)
		v := blobValue(k, ver, sizes[(i+ver)%len(sizes)])
		if err := db.Put([]byte(k), v); err != nil {
			t.Fatal(err)
		}
		latest[k] = v
	}
	check := func(what string) {
		t.Helper()
		for k, want := range latest {
			got, err := db.Get([]byte(k))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: get %s: %d bytes (want %d), %v", what, k, len(got), len(want), err)
			}
			// The caller owns it: scribbling on it changes nothing.
			for i := range got {
				got[i] = 0
			}
			if again, err := db.Get([]byte(k)); err != nil || !bytes.Equal(again, want) {
				t.Fatalf("%s: get %s after scribbling on the last result: %v", what, k, err)
			}
		}
		snap, err := db.NewSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Close()
		it, err := snap.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for it.First(); it.Valid(); it.Next() {
			if want := latest[string(it.Key())]; !bytes.Equal(it.Value(), want) {
				t.Fatalf("%s: scan %s: %d bytes, want %d", what, it.Key(), len(it.Value()), len(want))
			}
			n++
		}
		if err := it.Close(); err != nil || n != len(latest) {
			t.Fatalf("%s: scan saw %d keys of %d, %v", what, n, len(latest), err)
		}
		if err := db.Check(context.Background()); err != nil {
			t.Fatalf("%s: check: %v", what, err)
		}
	}
	for ver := 0; ver < 3; ver++ {
		for i := 0; i < keys; i++ {
			put(i, ver)
		}
		check(fmt.Sprintf("round %d in memory", ver))
		if err := bwkv.CollectGarbage(db); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("round %d after checkpoints and GC", ver))
	}
	st := db.Stats()
	if st.Checkpoint.BlobsWritten == 0 || st.GC.FilesRewritten+st.GC.FilesRetired == 0 {
		t.Fatalf("blobs written %d, GC rewrote %d and retired %d files", st.Checkpoint.BlobsWritten, st.GC.FilesRewritten, st.GC.FilesRetired)
	}
	if st.BackgroundErrors != 0 {
		t.Fatalf("%d background errors", st.BackgroundErrors)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	check("after reopen")
	if db.Stats().Checkpoint.BlobReads == 0 {
		t.Fatal("reads after reopen read no blob")
	}
	// Deletes, collected.
	for k := range latest {
		if err := db.Delete([]byte(k)); err != nil {
			t.Fatal(err)
		}
		delete(latest, k)
	}
	if err := bwkv.CollectGarbage(db); err != nil {
		t.Fatal(err)
	}
	check("after deleting everything")
	if n := db.Stats().BackgroundErrors; n != 0 {
		t.Fatalf("%d background errors", n)
	}
}

// TestBlobWrittenOnce: checkpointing a page again (new deltas, then a
// consolidated base) does not write its unchanged blob values again. With
// carried bases the consolidations write no base at all (the checkpoints
// write the small deltas); without, each consolidated base reuses the
// blobs' references.
func TestBlobWrittenOnce(t *testing.T) {
	for _, carry := range []bool{true, false} {
		t.Run(fmt.Sprintf("carry=%v", carry), func(t *testing.T) {
			o := blobOpts(1024)
			if !carry {
				o = bwkv.WithTestNoCarry(o)
			}
			testBlobWrittenOnce(t, o, carry)
		})
	}
}

func testBlobWrittenOnce(t *testing.T, o *bwkv.Options, carry bool) {
	db := openTest(t, o)
	for i := 0; i < 4; i++ {
		if err := db.Put(fmt.Appendf(nil, "big%d", i), blobValue("big", i, 8<<10)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	st := db.Stats().Checkpoint
	if st.BlobsWritten != 4 || st.BlobBytes < 4*8<<10 {
		t.Fatalf("first checkpoint wrote %d blobs (%d bytes), want 4", st.BlobsWritten, st.BlobBytes)
	}
	// Small writes to the same page, enough to consolidate it more than
	// once (DeltaChainMax 3), each batch checkpointed.
	for r := 0; r < 4; r++ {
		for j := 0; j < 4; j++ {
			if err := db.Put(fmt.Appendf(nil, "big%d-small", j), fmt.Appendf(nil, "s%d", r)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	st2 := db.Stats().Checkpoint
	if st2.BlobsWritten != st.BlobsWritten || st2.BlobBytes != st.BlobBytes {
		t.Fatalf("rewriting the page wrote %d more blobs (%d bytes)", st2.BlobsWritten-st.BlobsWritten, st2.BlobBytes-st.BlobBytes)
	}
	switch carried := db.Stats().Tree.Carried; {
	case carry && carried == 0:
		t.Fatal("no consolidation carried")
	case !carry && st2.BlobsReused == 0:
		t.Fatal("no consolidated base reused a blob")
	}
	for i := 0; i < 4; i++ {
		if v, err := db.Get(fmt.Appendf(nil, "big%d", i)); err != nil || !bytes.Equal(v, blobValue("big", i, 8<<10)) {
			t.Fatalf("big%d: %d bytes, %v", i, len(v), err)
		}
	}
}

// TestBlobCorruption: a flipped byte in a blob frame fails the read that
// needs it with a *CorruptionError (no panic, no wrong bytes); other keys
// still read.
func TestBlobCorruption(t *testing.T) {
	dir := t.TempDir()
	o := blobOpts(1024)
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	val := blobValue("victim", 0, 4096)
	copy(val[100:], "NEEDLE-IN-THE-BLOB")
	if err := db.Put([]byte("victim"), val); err != nil {
		t.Fatal(err)
	}
	// Enough other keys that the victim's page holds only a few.
	for i := 0; i < 40; i++ {
		if err := db.Put(fmt.Appendf(nil, "other%02d", i), []byte("small")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.data"))
	flipped := false
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, []byte("NEEDLE-IN-THE-BLOB")); i >= 0 {
			b[i+3] ^= 0x40
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
			flipped = true
		}
	}
	if !flipped {
		t.Fatal("the value is in no data file")
	}
	db, err = bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Get([]byte("victim"))
	var ce *bwkv.CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, bwkv.ErrCorruption) {
		t.Fatalf("get of the damaged blob = %v, want a *CorruptionError", err)
	}
	// Check reports the page it cannot read.
	if err := db.Check(context.Background()); err == nil {
		t.Fatal("Check passed a damaged blob")
	}
	if v, err := db.Get([]byte("other00")); err != nil || string(v) != "small" {
		t.Fatalf("an undamaged key: %q, %v", v, err)
	}
}

// blobFrames counts the blob frames in dir's data files.
func blobFrames(t *testing.T, fs vfs.FS, dir string) int {
	t.Helper()
	n := 0
	frameHeaders(t, fs, dir, func(_ string, h delta.FrameHeader) {
		if h.Kind == delta.KindBlob {
			n++
		}
	})
	return n
}
