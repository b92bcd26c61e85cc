package bwkv_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/delta"
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
	out := map[uint64]frameLoc{}
	frameHeaders(t, vfs.Default(), dir, func(file string, h delta.FrameHeader) {
		out[h.Addr] = frameLoc{file, h}
	})
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

// chainOpts returns the options of the consolidation tests: no
// consolidation in memory, a one-byte cache, small data files, the GC's
// self-check on and the GC paused (and with copyAsIs, no consolidation).
func chainOpts(o bwkv.Options, copyAsIs bool) (paused, running *bwkv.Options) {
	o.Durability = bwkv.DurabilityRelaxed
	o.DeltaChainMax = 64 // no consolidation in memory: the chain stays on disk
	o.CacheBytes = 1
	o.DataFileBytes = 1 << 20 // every checkpoint's file is small: one GC batch merges them all
	o.PageSplitEntries = 32
	// No consolidation by the evictor either (CacheBytes 1 keeps it busy).
	opts := bwkv.WithTestNoShorten(bwkv.WithTestSettle(bwkv.WithTestGCVerify(&o), time.Hour, time.Hour))
	if copyAsIs {
		opts = bwkv.WithTestGCNoConsolidate(opts)
	}
	return bwkv.WithTestGCPaused(opts), opts
}

// openChain opens a database in dir with chainOpts' paused options (and
// cacheBytes instead of their one-byte cache, if positive) and makes one
// leaf with a 30-delta chain on disk over 8 keys (writeChain). It returns
// the database (closed at the test's end), each key's values, the leaf's
// PID and its chain on disk.
func openChain(t *testing.T, dir string, cacheBytes int64) (*bwkv.DB, map[string][]string, uint64, []frameLoc) {
	t.Helper()
	paused, _ := chainOpts(bwkv.Options{}, false)
	if cacheBytes > 0 {
		paused.CacheBytes = cacheBytes
	}
	return openChainWith(t, dir, paused)
}

// openChainWith is openChain with the options o.
func openChainWith(t *testing.T, dir string, o *bwkv.Options) (*bwkv.DB, map[string][]string, uint64, []frameLoc) {
	t.Helper()
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	versions := writeChain(t, db, 8, 30, 0, nil)
	pid, chain := leafChain(t, frameMap(t, dir))
	return db, versions, pid, chain
}

// writeChain makes a leaf with a long on-disk chain: 65 fillers (the
// 65th write consolidates the root leaf and splits it, so the keys below
// land, with an empty chain, in a leaf that is not the root, which is
// never evicted), then writes overwrites of keys keys, each followed by
// a checkpoint (one data file per delta). Every big-th value has 1000
// bytes (0: none). after runs after each write. It returns each key's
// values, oldest first.
func writeChain(t *testing.T, db *bwkv.DB, keys, writes, big int, after func(i int, versions map[string][]string)) map[string][]string {
	t.Helper()
	for i := 0; i < 65; i++ {
		if err := db.Put([]byte(fmt.Sprintf("a%03d", i)), []byte("filler")); err != nil {
			t.Fatal(err)
		}
	}
	versions := map[string][]string{}
	for i := 0; i < writes; i++ {
		k := fmt.Sprintf("key%02d", i%keys)
		v := fmt.Sprintf("%s-%d-%s", k, i, strings.Repeat("v", 100))
		if big > 0 && i%big == 0 {
			v += strings.Repeat("b", 900)
		}
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		versions[k] = append(versions[k], v)
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		if after != nil {
			after(i, versions)
		}
	}
	return versions
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
	paused, opts := chainOpts(o, copyAsIs)
	db, err := bwkv.Open(dir, paused)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	var snap *bwkv.Snapshot
	var snapWant map[string]string
	versions := writeChain(t, db, keys, writes, big, func(i int, versions map[string][]string) {
		if i != writes/2 {
			return
		}
		var err error
		if snap, err = db.NewSnapshot(); err != nil {
			t.Fatal(err)
		}
		snapWant = map[string]string{}
		for k, vs := range versions {
			snapWant[k] = vs[len(vs)-1]
		}
	})
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
	if st.BackgroundErrors != 0 || st.GC.ConsolidateErrors != 0 || st.GC.AccountingMismatched != 0 {
		t.Fatalf("%d background errors, %d chains not consolidated, %d mismatched in the junk accounting",
			st.BackgroundErrors, st.GC.ConsolidateErrors, st.GC.AccountingMismatched)
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

// TestGCConsolidateRacesLoad: a page load races a rewrite that
// consolidates the page's chain. One that read the old head delta before
// the rewrite and follows its link after the rewrite deleted the frames
// below reads the chain again from the head, now the consolidated base
// (loadPage; without the retry the read fails: no file holds the
// address). One that read the whole old chain before the rewrite
// committed returns correct versions, but its chain is not recorded in
// the GC's ledger (gc.Ledger.Loaded: the epoch moved), which would
// otherwise hold dropped frames under the same head.
func TestGCConsolidateRacesLoad(t *testing.T) {
	for _, at := range []string{"head", "base"} {
		t.Run(at, func(t *testing.T) { testGCConsolidateRacesLoad(t, at) })
	}
}

func testGCConsolidateRacesLoad(t *testing.T, at string) {
	dir := t.TempDir()
	db, versions, pid, chain := openChain(t, dir, 0)
	head := chain[0].h.Addr
	trigger := head
	if at == "base" {
		trigger = chain[len(chain)-1].h.Addr
	}
	bwkv.EvictAll(db)

	var fired atomic.Bool
	heads := 0 // reads of the head frame by the load below
	var gcErr error
	db.SetTestFrameReadHook(func(p, addr uint64) {
		if p != pid {
			return
		}
		if addr == head {
			heads++
		}
		if addr != trigger || fired.Swap(true) {
			return
		}
		// The load read the old frame: the GC consolidates the chain and
		// deletes the victims before it reads on. (The GC's own reads of
		// the chain, in the checkpointer, pass here too.)
		db.SetTestGCPaused(false)
		gcErr = bwkv.CollectGarbage(db)
	})
	k := "key05"
	got, err := db.Get([]byte(k))
	db.SetTestFrameReadHook(nil)
	if gcErr != nil {
		t.Fatal(gcErr)
	}
	if err != nil || string(got) != versions[k][len(versions[k])-1] {
		t.Fatalf("get %s = %.30q, %v; want %.30q", k, got, err, versions[k][len(versions[k])-1])
	}
	st := db.Stats()
	if st.GC.PagesConsolidated == 0 || !fired.Load() {
		t.Fatalf("%d pages consolidated: the load did not race the rewrite", st.GC.PagesConsolidated)
	}
	if at == "head" && heads < 2 {
		t.Fatalf("the load read the head %d times, want a second read after the rewrite", heads)
	}
	if c := pageChain(t, frameMap(t, dir), pid); len(c) != 1 || c[0].h.Addr != head {
		t.Fatalf("page %d's chain after the GC: %d frames", pid, len(c))
	}
	if c := db.LedgerChain(pid); len(c) > 1 {
		t.Fatalf("the ledger holds page %d's chain %v, the disk only the base at %d", pid, c, head)
	}
	for k, vs := range versions {
		if n, err := db.KeyVersions([]byte(k)); err != nil || n != len(vs) {
			t.Fatalf("%s has %d versions (%v), want %d", k, n, err, len(vs))
		}
	}
	if c := db.LedgerChain(pid); at == "head" && (len(c) != 1 || c[0] != head) {
		t.Fatalf("after the load read again since the rewrite, the ledger holds page %d's chain %v, want [%d]", pid, c, head)
	}
	if err := bwkv.CollectGarbage(db); err != nil {
		t.Fatal(err)
	}
	if n := db.Stats().BackgroundErrors; n != 0 {
		t.Fatalf("%d background errors", n)
	}
}

// TestGCConsolidateKeepsStubRoot: a stub leaf reads its chain from its
// base's address (the head when it was made) and replays its own chain on
// top; once blind inserts onto it are published, that address lies below
// the page's durable head. A consolidation must keep it (its top is at or
// below it, gc.Env.LoadRoot), or the stub's full load finds no frame there.
func TestGCConsolidateKeepsStubRoot(t *testing.T) {
	dir := t.TempDir()
	db, versions, pid, chain := openChain(t, dir, 64<<20) // no evictor at work: the test makes the stub
	root := chain[0].h.Addr
	if bwkv.StubAll(db) == 0 {
		t.Fatal("no leaf stubbed")
	}
	// Blind inserts onto the stub (new keys), published: the page's head
	// moves above the stub's base address.
	for i := 0; i < 4; i++ {
		k := fmt.Sprintf("new%02d", i)
		if err := db.Put([]byte(k), []byte(k)); err != nil {
			t.Fatal(err)
		}
		versions[k] = []string{k}
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if head := pageChain(t, frameMap(t, dir), pid)[0].h.Addr; head <= root {
		t.Fatalf("page %d's head %d, want above the stub's base address %d", pid, head, root)
	}
	db.SetTestGCPaused(false)
	if err := bwkv.CollectGarbage(db); err != nil {
		t.Fatal(err)
	}
	// Reads of the old keys load the stub in full from its base address.
	for k, vs := range versions {
		got, err := db.Get([]byte(k))
		if err != nil || string(got) != vs[len(vs)-1] {
			t.Fatalf("get %s = %.30q, %v; want %.30q", k, got, err, vs[len(vs)-1])
		}
		if n, err := db.KeyVersions([]byte(k)); err != nil || n != len(vs) {
			t.Fatalf("%s has %d versions (%v), want %d", k, n, err, len(vs))
		}
	}
	after := pageChain(t, frameMap(t, dir), pid)
	last := after[len(after)-1].h
	if last.Addr != root || db.Stats().GC.PagesConsolidated == 0 {
		t.Fatalf("page %d's chain after the GC ends at a %s frame at %d (%d frames), want the consolidated base at the stub's base address %d", pid, last.Kind, last.Addr, len(after), root)
	}
	if err := bwkv.CollectGarbage(db); err != nil {
		t.Fatal(err)
	}
	if n := db.Stats().BackgroundErrors; n != 0 {
		t.Fatalf("%d background errors", n)
	}
}

// TestGCConsolidatesOpenTxnChain: a leaf's on-disk chain holding two
// writes of one key by a transaction still open (each in its own frame)
// is consolidated like any other: the GC's merge keeps every version
// (it sees only part of the chain), so the open transaction's older
// write is not dropped there, and the merge is not refused for a
// version count that does not add up.
func TestGCConsolidatesOpenTxnChain(t *testing.T) {
	dir := t.TempDir()
	paused, _ := chainOpts(bwkv.Options{}, false)
	db, err := bwkv.Open(dir, paused)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	writeChain(t, db, 8, 20, 0, func(i int, _ map[string][]string) {
		if i == 3 || i == 9 {
			if err := tx.Put([]byte("key99"), []byte(fmt.Sprint("open-", i))); err != nil {
				t.Fatal(err)
			}
		}
	})
	before := frameMap(t, dir)
	pid, chain := leafChain(t, before)
	// A resident stub pins the GC's merge at or below the address it
	// reads its chain from (gc.Env.LoadRoot), and the one-byte cache's
	// evictor leaves the leaf full, a stub or gone depending on timing:
	// drop every leaf, so the GC may consolidate the whole chain.
	bwkv.EvictAll(db)
	db.SetTestGCPaused(false)
	if err := bwkv.CollectGarbage(db); err != nil {
		t.Fatal(err)
	}
	chain2 := pageChain(t, frameMap(t, dir), pid)
	st := db.Stats()
	t.Logf("page %d: chain of %d frames before the GC, %d after; GC %+v", pid, len(chain), len(chain2), st.GC)
	if st.GC.PagesConsolidated == 0 || st.GC.ConsolidateErrors != 0 || len(chain2) != 1 {
		t.Fatalf("page %d: %d pages consolidated (%d refused), chain of %d frames after the GC (was %d): want one base frame", pid, st.GC.PagesConsolidated, st.GC.ConsolidateErrors, len(chain2), len(chain))
	}
	bwkv.EvictAll(db)
	if n, err := db.KeyVersions([]byte("key99")); err != nil || n != 2 {
		t.Fatalf("key99 has %d versions (%v) after the GC, want the open txn's 2", n, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if v, err := db.Get([]byte("key99")); err != nil || string(v) != "open-9" {
		t.Fatalf("get key99 = %q, %v; want open-9", v, err)
	}
	if err := db.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
}
