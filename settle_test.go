package bwkv_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/vfs"
)

// TestSettledSpace is docs/crash-safety.md's convergence claim, measured like a user:
// random overwrites of a fixed key set, then no writes and no calls; within
// 60 s the whole directory (data files, log, manifest) is at most 1.3x the
// logical live bytes (keys plus latest values). The default run is small;
// BWKV_SPACE_KEYS=50000 BWKV_SPACE_ROUNDS=5 is the full size.
func TestSettledSpace(t *testing.T) {
	if testing.Short() {
		t.Skip("settles for seconds")
	}
	for _, tc := range []struct {
		name  string
		keys  int
		value int
		o     bwkv.Options
	}{
		{"1KiB", envInt("BWKV_SPACE_KEYS", 5000), 1 << 10, bwkv.Options{}},
		{"1KiB-s2", envInt("BWKV_SPACE_KEYS", 5000), 1 << 10, bwkv.Options{Compression: bwkv.CompressionS2}},
		// Large values in blob files (the default threshold, 4 KiB),
		// and the same without blobs (pages of a few values).
		{"256KiB", envInt("BWKV_SPACE_BIG_KEYS", 40), 256 << 10, bwkv.Options{}},
		{"256KiB-noblobs", envInt("BWKV_SPACE_BIG_KEYS", 40), 256 << 10, bwkv.Options{BlobThreshold: -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if raceEnabled && tc.o.BlobThreshold < 0 {
				t.Skip("the baseline without blobs runs without the race detector")
			}
			testSettledSpace(t, tc.keys, tc.value, envInt("BWKV_SPACE_ROUNDS", 5), tc.o)
		})
	}
}

func testSettledSpace(t *testing.T, keys, valSize, rounds int, o bwkv.Options) {
	dir := t.TempDir()
	o.Durability = bwkv.DurabilityRelaxed
	db, err := bwkv.Open(dir, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(uint64(keys), uint64(valSize)))
	latest := map[string]int{} // key -> value length
	val := make([]byte, valSize)
	start := time.Now()
	for r := 0; r < rounds; r++ {
		for i := 0; i < keys; i++ {
			k := fmt.Sprintf("key%08d", rng.IntN(keys))
			if r == 0 {
				k = fmt.Sprintf("key%08d", i)
			}
			for j := range val {
				val[j] = byte(rng.Uint32())
			}
			if err := db.Put([]byte(k), val); err != nil {
				t.Fatal(err)
			}
			latest[k] = len(k) + valSize
		}
	}
	var live int64
	for _, n := range latest {
		live += int64(n)
	}
	t.Logf("%d x %d B x %d rounds written in %v; live %d bytes", keys, valSize, rounds, time.Since(start), live)
	// A hang detector, not a performance assertion: docs/crash-safety.md promises
	// 1.3x within 60 s of the last write.
	last := time.Now()
	var total int64
	for {
		_, total = dataDirSize(t, dir)
		if float64(total) <= 1.3*float64(live) || time.Since(last) > 60*time.Second {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	data, _ := dataDirSize(t, dir)
	st := db.Stats()
	t.Logf("after %v idle: directory %d bytes (data files %d) = %.3fx live; GC: %+v", time.Since(last).Round(time.Millisecond),
		total, data, float64(total)/float64(live), st.GC)
	checkSettledDir(t, dir, total, live, "60 s after the last write")
	if st.BackgroundErrors != 0 {
		t.Fatalf("%d background errors", st.BackgroundErrors)
	}
	if blobs := db.Options().BlobThreshold; (blobs > 0 && valSize >= blobs) != (st.Checkpoint.BlobsWritten > 0) {
		t.Fatalf("BlobThreshold %d, %d-byte values: %d blobs written", blobs, valSize, st.Checkpoint.BlobsWritten)
	}
	// Small files merge (8 at a time): the count stays O(data /
	// DataFileBytes).
	files := 0
	for name := range listDir(t, dir) {
		if strings.HasSuffix(name, ".data") {
			files++
		}
	}
	fileBytes := db.Options().DataFileBytes
	if limit := 8 + int(data/(fileBytes/4)); files > limit {
		t.Fatalf("%d data files for %d bytes of data (DataFileBytes %d), want at most %d", files, data, fileBytes, limit)
	}
	t.Logf("%d data files", files)
}

// TestGCMergesSmallFiles: many small checkpoints of new keys leave small,
// fully-live data files, which no live ratio makes victims; the GC merges
// them (8 at a time), so their count stays bounded.
func TestGCMergesSmallFiles(t *testing.T) {
	dir := t.TempDir()
	o := gcOpts()
	o.DataFileBytes = 1 << 20
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	latest := map[string]string{}
	for b := 0; b < 40; b++ {
		for i := 0; i < 50; i++ {
			k := gcKey(b*50 + i)
			v := fmt.Sprintf("%s-%s", k, strings.Repeat("v", 200))
			if err := db.Put([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			latest[k] = v
		}
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	if err := bwkv.CollectGarbage(db); err != nil {
		t.Fatal(err)
	}
	files := 0
	for name := range listDir(t, dir) {
		if strings.HasSuffix(name, ".data") {
			files++
		}
	}
	st := db.Stats()
	t.Logf("%d data files after 40 checkpoints; GC %+v", files, st.GC)
	if files > 8 || st.GC.FilesRewritten < 8 {
		t.Fatalf("%d data files (%d rewritten), want the small ones merged", files, st.GC.FilesRewritten)
	}
	if st.BackgroundErrors != 0 {
		t.Fatalf("%d background errors", st.BackgroundErrors)
	}
	checkLatest(t, db, latest)
}

// settleWorkload puts n values of about 1 KiB over 40 keys, one commit
// each (Sync: acknowledged means durable), then idles for the settler;
// onAck sees each acknowledged commit. It returns the state after each
// commit.
func settleWorkload(t *testing.T, db *bwkv.DB, n int, idle time.Duration, onAck func(int)) []map[string]string {
	states := []map[string]string{{}}
	cur := map[string]string{}
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("key%02d", (i*7)%40)
		v := fmt.Sprintf("%d-%s", i, strings.Repeat("x", 1000))
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		cur[k] = v
		next := make(map[string]string, len(cur))
		for k, v := range cur {
			next[k] = v
		}
		states = append(states, next)
		if onAck != nil {
			onAck(i + 1)
		}
	}
	time.Sleep(idle)
	return states
}

// TestSettlePowerLoss crashes (power loss: some, half or all unsynced
// data kept, torn last writes) at operations while an idle database
// settles (its checkpoints, page consolidations, log rotation and
// recycling, GC rounds): the clone reopens to every acknowledged commit,
// passes Check, and recovers to the same state twice.
func TestSettlePowerLoss(t *testing.T) {
	const commits = 400
	idle := 150 * time.Millisecond
	opts := func(fs vfs.FS) *bwkv.Options {
		return bwkv.WithTestSettle(&bwkv.Options{FS: fs, PageSplitEntries: 8, DeltaChainMax: 4, WALSegmentBytes: 4 << 20, MaxValueSize: 2 << 10},
			5*time.Millisecond, 5*time.Millisecond)
	}
	fs := vfs.NewMem()
	db, err := bwkv.Open("db", opts(fs))
	if err != nil {
		t.Fatal(err)
	}
	var written int64
	settleWorkload(t, db, commits, idle, func(n int) {
		if n == commits {
			written = fs.Ops()
		}
	})
	st := db.Stats()
	db.Close()
	total := fs.Ops()
	if st.Checkpoint.Count == 0 || total-written < 10 {
		t.Fatalf("the idle database did not settle: %d checkpoints, %d operations after the writes", st.Checkpoint.Count, total-written)
	}
	segs, _ := fs.List("db/wal")
	t.Logf("%d operations while settling; %d checkpoints; log segments after: %v", total-written, st.Checkpoint.Count, segs)
	// Crash points count from the end of each run's own writes (the
	// settler's timing, and so the operations before it, varies a little
	// between runs).
	span := total - written
	stride := max(1, span/40)
	if testing.Short() {
		stride = max(1, span/6)
	}
	checked := 0
	for j := int64(1); j <= span; j += stride {
		for _, keep := range []float64{0, 0.5, 1} {
			what := fmt.Sprintf("power loss at op %d after the writes (keep %.1f)", j, keep)
			fs := vfs.NewMem()
			var clone *vfs.MemFS
			var doneAt atomic.Int64
			fs.SetHook(func(op vfs.Op) {
				if d := doneAt.Load(); d > 0 && op.Index == d+j && clone == nil {
					clone = fs.CrashClone(vfs.CrashOptions{KeepUnsynced: keep, TornLastWrite: true, Seed: j})
				}
			})
			db, err := bwkv.Open("db", opts(fs))
			if err != nil {
				t.Fatal(err)
			}
			states := settleWorkload(t, db, commits, idle, func(n int) {
				if n == commits {
					doneAt.Store(fs.Ops())
				}
			})
			db.Close()
			if clone == nil {
				continue // this run settled in fewer operations
			}
			rdb, err := bwkv.Open("db", opts(clone))
			if err != nil {
				t.Fatalf("%s: reopen: %v", what, err)
			}
			got := dbState(t, rdb)
			if fmt.Sprint(got) != fmt.Sprint(states[commits]) {
				t.Fatalf("%s: recovered state is not the state after all %d acknowledged commits", what, commits)
			}
			if err := rdb.Check(context.Background()); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			rdb.Close()
			rdb, err = bwkv.Open("db", opts(clone))
			if err != nil {
				t.Fatalf("%s: second reopen: %v", what, err)
			}
			if got2 := dbState(t, rdb); fmt.Sprint(got2) != fmt.Sprint(got) {
				t.Fatalf("%s: I6: recovering twice differs", what)
			}
			rdb.Close()
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no crash point was reached")
	}
	t.Logf("%d crash points", checked)
}

// checkSettledDir fails the test, listing dir's files, if the directory's
// total bytes exceed 1.3x the live data: the settled bound (when says at
// what point).
func checkSettledDir(t *testing.T, dir string, total, live int64, when string) {
	t.Helper()
	if float64(total) <= 1.3*float64(live) {
		return
	}
	for name, sz := range listDir(t, dir) {
		t.Logf("%s %d", name, sz)
	}
	t.Fatalf("directory %.3fx the live data %s, want <= 1.3x", float64(total)/float64(live), when)
}
