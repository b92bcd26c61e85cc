package bwkv_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/pool"
	"github.com/bwkv/bwkv/vfs"
)

// frameLoc is one frame of a data file: its file's name and its header.
type frameLoc struct {
	file string
	h    delta.FrameHeader
}

// frameMap returns every frame of the data files in dir by address.
func frameMap(t *testing.T, dir string) map[uint64]frameLoc {
	t.Helper()
	fs := vfs.Default()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]frameLoc{}
	for _, n := range names {
		if !strings.HasSuffix(n, ".data") {
			continue
		}
		f, err := fs.Open(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		pf, err := pool.OpenFile(f, n)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range pf.Addrs() {
			_, h, err := pf.ReadRaw(nil, a)
			if err != nil {
				t.Fatal(err)
			}
			out[a] = frameLoc{n, h}
		}
		pf.Close()
	}
	return out
}

// pageChain returns page pid's on-disk chain in frames, newest first.
func pageChain(t *testing.T, frames map[uint64]frameLoc, pid uint64) []frameLoc {
	t.Helper()
	var head uint64
	for a, f := range frames {
		if f.h.PID == pid && f.h.Kind != delta.KindBlob {
			head = max(head, a) // a page's newest frame is its head
		}
	}
	var chain []frameLoc
	for a := head; ; {
		f, ok := frames[a]
		if !ok {
			t.Fatalf("page %d's chain links to frame %d, which no data file holds", pid, a)
		}
		chain = append(chain, f)
		if f.h.Kind == delta.KindBase {
			return chain
		}
		a = f.h.Link
	}
}

// leafChain returns the longest on-disk chain in frames (the test's one
// leaf with deltas) and its page's ID.
func leafChain(t *testing.T, frames map[uint64]frameLoc) (uint64, []frameLoc) {
	t.Helper()
	var pid uint64
	var longest []frameLoc
	for _, f := range frames {
		if f.h.Kind == delta.KindBlob || f.h.PID == pid {
			continue
		}
		if c := pageChain(t, frames, f.h.PID); len(c) > len(longest) {
			pid, longest = f.h.PID, c
		}
	}
	return pid, longest
}

// TestGCConsolidatesChains is issue 13 [space] (b): a leaf's on-disk delta
// chain spread over many small data files (one checkpoint per write, GC
// paused) is replaced, when the GC merges those files, by one base frame
// at the chain's head address holding every version: the latest values,
// a snapshot's older ones and each key's version count read back from it
// (the cache is one byte, so reads load the page from disk), after a
// reopen too; and the data files end smaller than when the same rewrite
// copies the frames as they are.
func TestGCConsolidatesChains(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    bwkv.Options
		big  int // every big-th write has a 1000-byte value (0: none)
	}{
		{"plain", bwkv.Options{}, 0},
		{"s2", bwkv.Options{Compression: bwkv.CompressionS2}, 0},
		{"blobs", bwkv.Options{BlobThreshold: 512}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			merged := consolidateRun(t, tc.o, tc.big, false)
			copied := consolidateRun(t, tc.o, tc.big, true)
			t.Logf("data files after the GC: %d bytes consolidated, %d copied as is (%.2fx)", merged, copied, float64(merged)/float64(copied))
			if merged >= copied {
				t.Fatalf("consolidated data files take %d bytes, copied as is %d: want fewer", merged, copied)
			}
		})
	}
}

// consolidateRun runs TestGCConsolidatesChains' workload and checks, and
// returns the data files' bytes after the GC. copyAsIs turns consolidation
// off (the baseline).
func consolidateRun(t *testing.T, o bwkv.Options, big int, copyAsIs bool) int64 {
	const keys, writes = 8, 30
	dir := t.TempDir()
	o.Durability = bwkv.DurabilityRelaxed
	o.DeltaChainMax = 64 // no consolidation in memory: the chain stays on disk
	o.CacheBytes = 1
	o.DataFileBytes = 1 << 20 // every checkpoint's file is small: one GC batch merges them all
	o.PageSplitEntries = 32
	opts := bwkv.WithTestSettle(bwkv.WithTestGCVerify(&o), time.Hour, time.Hour)
	if copyAsIs {
		opts = bwkv.WithTestGCNoConsolidate(opts)
	}
	db, err := bwkv.Open(dir, bwkv.WithTestGCPaused(opts))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	// 65 fillers: the 65th write consolidates the root leaf and splits
	// it, so the keys below land, with an empty chain, in a leaf that is
	// not the root (the root is never evicted).
	for i := 0; i < 65; i++ {
		if err := db.Put([]byte(fmt.Sprintf("a%03d", i)), []byte("filler")); err != nil {
			t.Fatal(err)
		}
	}
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%02d", i)) }
	versions := map[string][]string{}
	var snap *bwkv.Snapshot
	var snapWant map[string]string
	for i := 0; i < writes; i++ {
		k := key(i % keys)
		v := fmt.Sprintf("%s-%d-%s", k, i, strings.Repeat("v", 100))
		if big > 0 && i%big == 0 {
			v += strings.Repeat("b", 900)
		}
		if err := db.Put(k, []byte(v)); err != nil {
			t.Fatal(err)
		}
		versions[string(k)] = append(versions[string(k)], v)
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		if i == writes/2 {
			if snap, err = db.NewSnapshot(); err != nil {
				t.Fatal(err)
			}
			snapWant = map[string]string{}
			for k, vs := range versions {
				snapWant[k] = vs[len(vs)-1]
			}
		}
	}
	check := func(when string, db *bwkv.DB, snap *bwkv.Snapshot) {
		t.Helper()
		// Every read below loads the leaf from the data files.
		bwkv.EvictAll(db)
		loads := db.Stats().Cache.Misses
		for k, vs := range versions {
			got, err := db.Get([]byte(k))
			if err != nil || string(got) != vs[len(vs)-1] {
				t.Fatalf("%s: get %s = %.30q, %v; want %.30q", when, k, got, err, vs[len(vs)-1])
			}
			if n, err := db.KeyVersions([]byte(k)); err != nil || n != len(vs) {
				t.Fatalf("%s: %s has %d versions (%v), want %d", when, k, n, err, len(vs))
			}
			if snap == nil {
				continue
			}
			got, err = snap.Get([]byte(k))
			if want, ok := snapWant[k]; !ok && err == nil || ok && (err != nil || string(got) != want) {
				t.Fatalf("%s: snapshot get %s = %.30q, %v; want %.30q", when, k, got, err, want)
			}
		}
		if n := db.Stats().Cache.Misses - loads; n == 0 {
			t.Fatalf("%s: no page read from the data files", when)
		}
		if err := db.Check(context.Background()); err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	check("before the GC", db, snap)

	before := frameMap(t, dir)
	pid, chain := leafChain(t, before)
	files := map[string]bool{}
	for _, f := range chain {
		files[f.file] = true
	}
	if len(chain) < writes || len(files) < writes {
		t.Fatalf("page %d's chain holds %d frames in %d files, want a chain of about %d frames over as many files", pid, len(chain), len(files), writes)
	}
	head := chain[0].h.Addr

	db.SetTestGCPaused(false)
	if err := bwkv.CollectGarbage(db); err != nil {
		t.Fatal(err)
	}
	st := db.Stats()
	if st.BackgroundErrors != 0 {
		t.Fatalf("%d background errors", st.BackgroundErrors)
	}
	after := frameMap(t, dir)
	chain2 := pageChain(t, after, pid)
	var pageFrames int
	for _, f := range after {
		if f.h.PID == pid && f.h.Kind != delta.KindBlob {
			pageFrames++
		}
	}
	t.Logf("page %d: chain of %d frames in %d files before the GC, %d frames after; GC %+v", pid, len(chain), len(files), len(chain2), st.GC)
	if copyAsIs {
		if st.GC.PagesConsolidated != 0 || len(chain2) != len(chain) {
			t.Fatalf("copy as is: %d pages consolidated, chain of %d frames (was %d)", st.GC.PagesConsolidated, len(chain2), len(chain))
		}
	} else {
		switch {
		case st.GC.PagesConsolidated == 0:
			t.Fatal("the GC consolidated no page")
		case len(chain2) != 1 || pageFrames != 1:
			t.Fatalf("page %d: chain of %d frames, %d frames in the files after the GC; want one base frame", pid, len(chain2), pageFrames)
		case chain2[0].h.Addr != head || chain2[0].h.Kind != delta.KindBase:
			t.Fatalf("page %d's chain is a %s frame at %d, want a base frame at the old head %d", pid, chain2[0].h.Kind, chain2[0].h.Addr, head)
		case before[head].file == chain2[0].file:
			t.Fatalf("the base at %d is in %s, where the head delta was: want the rewrite's new file", head, chain2[0].file)
		}
	}
	if big > 0 {
		var blobs int
		for _, f := range after {
			if f.h.Kind == delta.KindBlob {
				blobs++
			}
		}
		if want := (writes + big - 1) / big; blobs != want {
			t.Fatalf("%d blob frames after the GC, want %d (one per large version)", blobs, want)
		}
	}
	check("after the GC", db, snap)
	data, _ := dataDirSize(t, dir)

	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = bwkv.Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	check("after a reopen", db, nil)
	if err := bwkv.CollectGarbage(db); err != nil {
		t.Fatal(err)
	}
	if n := db.Stats().BackgroundErrors; n != 0 {
		t.Fatalf("%d background errors after the reopen", n)
	}
	return data
}
