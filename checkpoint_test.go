package bwkv_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/pool"
	"github.com/bwkv/bwkv/vfs"
)

func TestCheckpointReopen(t *testing.T) {
	dir := t.TempDir()
	o := &bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 3, Durability: bwkv.DurabilityRelaxed}
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for round := 0; round < 3; round++ {
		for i := 0; i < 2000; i++ {
			k := fmt.Sprintf("k%05d", (i*37+round*11)%3000)
			if i%5 == 4 {
				if err := db.Delete([]byte(k)); err != nil {
					t.Fatal(err)
				}
				delete(want, k)
				continue
			}
			v := fmt.Sprintf("v%d-%d", round, i)
			if err := db.Put([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		}
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	st := db.Stats()
	if st.Checkpoint.Count < 3 || st.Checkpoint.FramesWritten == 0 {
		t.Fatalf("checkpoint stats %+v", st.Checkpoint)
	}
	db.Close()
	datas, _ := filepath.Glob(filepath.Join(dir, "*.data"))
	if len(datas) == 0 {
		t.Fatal("no data files written")
	}
	for reopen := 0; reopen < 2; reopen++ {
		db, err = bwkv.Open(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := dbState(t, db); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("reopen %d: state differs (%d keys vs %d)", reopen, len(got), len(want))
		}
		if err := db.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
		rs := db.Stats().Recovery
		t.Logf("reopen %d: replayed %d records", reopen, rs.RecordsReplayed)
		db.Close()
	}
}

// stealPrepare: base values committed, then a txn overwrites, deletes and
// inserts, and a checkpoint publishes its uncommitted versions (steal)
// before the kill.
func stealPrepare(dir string, out *crashOut) {
	db, err := bwkv.Open(dir, &bwkv.Options{PageSplitEntries: 4, DeltaChainMax: 2})
	if err != nil {
		out.line("open error %v", err)
		os.Exit(3)
	}
	openLoser(db, out)
	if err := db.Checkpoint(); err != nil {
		out.line("checkpoint error %v", err)
		os.Exit(3)
	}
	out.line("ready")
}

// rollbackCut: a txn's rollback is cut in the middle: a checkpoint
// publishes (and recycles the log) after half the compensations, and the
// process dies before the end record is logged.
func rollbackCut(dir string, out *crashOut) {
	db, err := bwkv.Open(dir, &bwkv.Options{PageSplitEntries: 4, DeltaChainMax: 2, WALSegmentBytes: 16 << 10, MaxValueSize: 1 << 10})
	if err != nil {
		out.line("open error %v", err)
		os.Exit(3)
	}
	// Fill a few segments so the checkpoint has something to recycle.
	for i := 0; i < 300; i++ {
		db.Put([]byte(fmt.Sprintf("filler%04d", i)), make([]byte, 100))
	}
	tx := openLoser(db, out)
	db.SetTestRollbackHook(func(n int) {
		if n == 5 {
			if err := db.Checkpoint(); err != nil {
				out.line("checkpoint error %v", err)
				os.Exit(3)
			}
			out.line("ready")
			select {} // die here, before the end record
		}
	})
	tx.Rollback()
}

// TestStealUndo: uncommitted versions a checkpoint stole to disk are undone
// from the log's old values after a kill (I3), also when the cut fell in
// the middle of a rollback whose end record never became durable.
func TestStealUndo(t *testing.T) {
	for _, mode := range []string{"steal", "rollback-cut"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			lines := runChild(t, []string{"BWKV_CRASH_DIR=" + dir, "BWKV_CRASH_MODE=" + mode}, waitReady)
			if len(lines) == 0 || lines[len(lines)-1] != "ready" {
				t.Fatalf("child: %q", lines)
			}
			if datas, _ := filepath.Glob(filepath.Join(dir, "*.data")); len(datas) == 0 {
				t.Fatal("the checkpoint wrote no data file")
			}
			for reopen := 0; reopen < 2; reopen++ {
				db, err := bwkv.Open(dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				st := db.Stats().Recovery
				if reopen == 0 && st.LosersUndone != 1 {
					t.Fatalf("recovery %+v, want one loser undone", st)
				}
				checkUndone(t, db)
				if err := db.Check(context.Background()); err != nil {
					t.Fatal(err)
				}
				// A checkpoint after recovery, then the next reopen.
				if err := db.Checkpoint(); err != nil {
					t.Fatal(err)
				}
				db.Close()
			}
		})
	}
}

// TestINVC2 runs splits, merges and consolidations between a cut and its
// publish under concurrent committers, then loses power right after the
// publish: every acknowledged commit is present.
func TestINVC2(t *testing.T) {
	seeds := envInt("BWKV_INVC2_SEEDS", 8)
	switch {
	case testing.Short():
		seeds = 2
	case raceEnabled && os.Getenv("BWKV_INVC2_SEEDS") == "":
		seeds = 4
	}
	for seed := 1; seed <= seeds; seed++ {
		fs := vfs.NewMem()
		o := &bwkv.Options{FS: fs, PageSplitEntries: 4, DeltaChainMax: 2, CheckpointBytes: 1 << 30}
		db, err := bwkv.Open("db", o)
		if err != nil {
			t.Fatal(err)
		}
		const writers = 3
		var mu sync.Mutex
		acked := map[string]string{}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					k := fmt.Sprintf("w%d-%04d", w, rng.IntN(300))
					v := ""
					var err error
					if rng.IntN(3) == 0 {
						err = db.Delete([]byte(k))
					} else {
						v = fmt.Sprintf("%d", i)
						err = db.Put([]byte(k), []byte(v))
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					acked[k] = v
					mu.Unlock()
				}
			}(w)
		}
		// Between each cut and publish the writers keep splitting,
		// merging and consolidating the sealed pages.
		db.SetTestCutHook(func() { time.Sleep(15 * time.Millisecond) })
		for c := 0; c < 4; c++ {
			time.Sleep(10 * time.Millisecond)
			if err := db.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
		db.SetTestCutHook(nil)
		close(stop)
		wg.Wait()
		mu.Lock()
		want := map[string]string{}
		for k, v := range acked {
			if v != "" {
				want[k] = v
			}
		}
		mu.Unlock()
		// Power loss now: only synced state survives.
		clone := fs.CrashClone(vfs.CrashOptions{KeepUnsynced: 0, Seed: int64(seed)})
		st := db.Stats()
		db.Close()
		if st.Tree.Splits == 0 || st.Checkpoint.Count < 4 {
			t.Fatalf("seed %d: workload too small: %+v %+v", seed, st.Tree, st.Checkpoint)
		}
		o.FS = clone
		rdb, err := bwkv.Open("db", o)
		if err != nil {
			t.Fatalf("seed %d: reopen: %v", seed, err)
		}
		got := dbState(t, rdb)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d: after power loss %d keys, want %d", seed, len(got), len(want))
		}
		if err := rdb.Check(context.Background()); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		rdb.Close()
	}
}

// TestSupersededFramesSkipped: 100 hot keys overwritten many times; the
// checkpoints write a small fraction of the frame bytes installed in
// memory, because superseded deltas never reach disk.
func TestSupersededFramesSkipped(t *testing.T) {
	n := envInt("BWKV_HOT_WRITES", hotWritesDefault)
	if testing.Short() {
		n = 50_000
	}
	db := openTest(t, &bwkv.Options{CheckpointBytes: 4 << 20})
	val := make([]byte, 32)
	for i := 0; i < n; i++ {
		if err := db.Put([]byte(fmt.Sprintf("hot%03d", i%100)), val); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	c := db.Stats().Checkpoint
	ratio := float64(c.Bytes) / float64(c.InstalledBytes)
	t.Logf("%d overwrites: %d checkpoints wrote %d bytes of %d installed (%.2f%%), %d frames written, %d skipped",
		n, c.Count, c.Bytes, c.InstalledBytes, 100*ratio, c.FramesWritten, c.FramesSkipped)
	if c.FramesSkipped == 0 || ratio > 0.10 {
		t.Fatalf("checkpoint wrote %.1f%% of installed frame bytes, want <= 10%%", 100*ratio)
	}
}

// TestBoundedWAL: with checkpoints running, the log on disk stays within a
// few segments however much is written.
func TestBoundedWAL(t *testing.T) {
	dir := t.TempDir()
	const seg = 256 << 10
	db, err := bwkv.Open(dir, &bwkv.Options{Durability: bwkv.DurabilityRelaxed, WALSegmentBytes: seg,
		MaxValueSize: 4 << 10, MaxKeySize: 1 << 10, CheckpointBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	val := make([]byte, 512)
	maxLog := int64(0)
	for i := 0; i < 20_000; i++ {
		if err := db.Put([]byte(fmt.Sprintf("k%05d", i%3000)), val); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 {
			if sz := dirSize(t, filepath.Join(dir, "wal")); sz > maxLog {
				maxLog = sz
			}
		}
	}
	written := db.Stats().WAL.Bytes
	t.Logf("log bytes written %d, largest log on disk %d (%d segments of %d)", written, maxLog, (maxLog+seg-1)/seg, seg)
	if maxLog > 3*seg {
		t.Fatalf("log on disk reached %d bytes (> 3 segments) after %d written", maxLog, written)
	}
}

// TestHotPageCheckpoints: one page rewritten over and over asks for a
// cut by its log, not by the bases its consolidations install: a
// generation counts the page about once (it writes it once), so the
// checkpoints number about the log written over CheckpointBytes, and the
// log on disk stays within a few segments. Before, each consolidation's
// base counted in full and the same writes asked for a cut about five
// times as often (a 20 KiB base per 12 puts of 200 bytes: 382 cuts).
func TestHotPageCheckpoints(t *testing.T) {
	dir := t.TempDir()
	const seg, ckpt = 256 << 10, 64 << 10
	db, err := bwkv.Open(dir, &bwkv.Options{Durability: bwkv.DurabilityRelaxed, WALSegmentBytes: seg,
		MaxValueSize: 4 << 10, MaxKeySize: 1 << 10, CheckpointBytes: ckpt})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	val := make([]byte, 200)
	maxLog := int64(0)
	for i := 0; i < 20_000; i++ {
		if err := db.Put([]byte(fmt.Sprintf("hot%03d", i%100)), val); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 {
			maxLog = max(maxLog, dirSize(t, filepath.Join(dir, "wal")))
		}
	}
	st := db.Stats()
	bound := st.WAL.Bytes/ckpt + 3
	t.Logf("log bytes written %d, checkpoints %d (bound %d), installed %d, largest log on disk %d", st.WAL.Bytes, st.Checkpoint.Count, bound, st.Checkpoint.InstalledBytes, maxLog)
	if st.Checkpoint.Count > bound {
		t.Fatalf("%d checkpoints for %d log bytes, want <= %d", st.Checkpoint.Count, st.WAL.Bytes, bound)
	}
	if maxLog > 3*seg {
		t.Fatalf("log on disk reached %d bytes (> 3 segments)", maxLog)
	}
}

func dirSize(t *testing.T, dir string) int64 {
	var n int64
	for _, sz := range listDir(t, dir) {
		n += sz
	}
	return n
}

// TestReopenCostIndependentOfHistory: the process dies (a crash clone that
// keeps unsynced data, as after kill -9) after 1x and after 11x the writes;
// the second recovery does not replay 10x the records.
func TestReopenCostIndependentOfHistory(t *testing.T) {
	fs := vfs.NewMem()
	o := &bwkv.Options{FS: fs, Durability: bwkv.DurabilityRelaxed, CheckpointBytes: 256 << 10}
	db, err := bwkv.Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	write := func(n, from int) {
		for i := from; i < from+n; i++ {
			if err := db.Put([]byte(fmt.Sprintf("k%06d", i%20000)), []byte(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	replayed := func() uint64 {
		// Flush the log's user-space buffer first, so the clone holds
		// every record written, as the OS would after kill -9 of a
		// Sync-mode process.
		if err := db.Sync(); err != nil {
			t.Fatal(err)
		}
		clone := fs.CrashClone(vfs.CrashOptions{KeepUnsynced: 1})
		oo := *o
		oo.FS = clone
		rdb, err := bwkv.Open("db", &oo)
		if err != nil {
			t.Fatal(err)
		}
		defer rdb.Close()
		if got := len(dbState(t, rdb)); got != 20000 {
			t.Fatalf("clone holds %d keys, want 20000", got)
		}
		return rdb.Stats().Recovery.RecordsReplayed
	}
	const n = 20_000
	write(n, 0)
	r1 := replayed()
	write(10*n, n)
	r2 := replayed()
	t.Logf("replayed %d records after %d writes, %d after %d", r1, n, r2, 11*n)
	// Each write logs 3 records: the first reopen could replay up to 3n,
	// the second up to 33n without checkpoints. Both stay below n: the
	// replay is bounded by the checkpoint interval, not by history.
	if r1 >= n || r2 >= n {
		t.Fatalf("recovery replayed %d records after %d writes and %d after %d", r1, n, r2, 11*n)
	}
}

// TestMaxTxnLag: a transaction that pins the log more than MaxTxnLag bytes
// behind the head is aborted by the engine; its next call says so, and its
// write is rolled back.
func TestMaxTxnLag(t *testing.T) {
	db := openTest(t, &bwkv.Options{MaxTxnLag: 64 << 10})
	mustPut(t, db, "pinned", "old")
	tx := mustBegin(t, db)
	mustPut(t, tx, "pinned", "new")
	for i := 0; i < 2000; i++ {
		mustPut(t, db, fmt.Sprintf("k%04d", i), string(make([]byte, 100)))
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Put([]byte("x"), []byte("y")); !errors.Is(err, bwkv.ErrTxnTooOld) {
		t.Fatalf("put on a lagging txn: %v, want ErrTxnTooOld", err)
	}
	if err := tx.Commit(); !errors.Is(err, bwkv.ErrTxnTooOld) {
		t.Fatalf("commit of a lagging txn: %v, want ErrTxnTooOld", err)
	}
	wantValue(t, db.Get, "pinned", "old")
	if st := db.Stats().Txn; st.TooOld != 1 {
		t.Fatalf("stats: %+v", st)
	}
	// With the txn gone the log can be recycled.
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
}

// TestMaxTxnLagNoCheckpoint: a lagging transaction learns it is too old
// at its next call, not at the next checkpoint: with CheckpointBytes far
// above what the test writes no checkpoint runs, yet each kind of call
// after the log passed MaxTxnLag returns ErrTxnTooOld and rolls the write
// back; a transaction within its lag, and one that never wrote, go on.
func TestMaxTxnLagNoCheckpoint(t *testing.T) {
	const lag = 64 << 10
	// No idle settle either (its checkpoint would abort the txns too).
	db := openTest(t, bwkv.WithTestSettle(&bwkv.Options{MaxTxnLag: lag, CheckpointBytes: 1 << 30}, time.Hour, time.Hour))
	calls := map[string]func(tx *bwkv.Txn) error{
		"get":    func(tx *bwkv.Txn) error { _, err := tx.Get([]byte("other")); return err },
		"put":    func(tx *bwkv.Txn) error { return tx.Put([]byte("x"), []byte("y")) },
		"delete": func(tx *bwkv.Txn) error { return tx.Delete([]byte("x")) },
		"iter":   func(tx *bwkv.Txn) error { _, err := tx.NewIter(nil); return err },
		"commit": func(tx *bwkv.Txn) error { return tx.Commit() },
	}
	for name, call := range calls {
		mustPut(t, db, "pinned-"+name, "old")
		tx := mustBegin(t, db)
		mustPut(t, tx, "pinned-"+name, "new")
		reader := mustBegin(t, db) // never writes: no record pins the log
		recent := mustBegin(t, db)
		for i := 0; i < 1000; i++ { // about 2x lag of log
			mustPut(t, db, fmt.Sprintf("k%04d", i), string(make([]byte, 100)))
		}
		mustPut(t, recent, "recent-"+name, "v")
		if err := call(tx); !errors.Is(err, bwkv.ErrTxnTooOld) {
			t.Fatalf("%s on a lagging txn: %v, want ErrTxnTooOld", name, err)
		}
		if err := tx.Commit(); !errors.Is(err, bwkv.ErrTxnTooOld) {
			t.Fatalf("%s: commit after: %v, want ErrTxnTooOld", name, err)
		}
		wantValue(t, db.Get, "pinned-"+name, "old")
		wantValue(t, reader.Get, "pinned-"+name, "old")
		if err := reader.Commit(); err != nil {
			t.Fatalf("%s: the reader's commit: %v", name, err)
		}
		if err := recent.Commit(); err != nil {
			t.Fatalf("%s: the recent txn's commit: %v", name, err)
		}
		wantValue(t, db.Get, "recent-"+name, "v")
	}
	st := db.Stats()
	if st.Checkpoint.Count != 0 {
		t.Fatalf("%d checkpoints ran: the test must see the txn's own call abort it", st.Checkpoint.Count)
	}
	if st.Txn.TooOld != uint64(len(calls)) {
		t.Fatalf("stats: %d too-old aborts, want %d", st.Txn.TooOld, len(calls))
	}
}

// TestCorruptFrameFailsOnlyItsReads: a data-file frame whose CRC fails
// makes the reads that touch its page return ErrCorruption; Open and every
// other read work.
func TestCorruptFrameFailsOnlyItsReads(t *testing.T) {
	// With a codec on, the damaged frame is a compressed one: the CRC
	// catches the flip before the decoder sees it.
	for _, c := range []bwkv.Compression{bwkv.CompressionNone, bwkv.CompressionS2, bwkv.CompressionZstd} {
		t.Run(c.String(), func(t *testing.T) { testCorruptFrame(t, c) })
	}
}

func testCorruptFrame(t *testing.T, codec bwkv.Compression) {
	dir := t.TempDir()
	o := &bwkv.Options{PageSplitEntries: 8, Durability: bwkv.DurabilityRelaxed, Compression: codec}
	val := func(i int) string { return fmt.Sprintf("v%d-%s", i, strings.Repeat("x", 40)) }
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	for i := 0; i < n; i++ {
		mustPut(t, db, fmt.Sprintf("k%05d", i), val(i))
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Find a leaf base frame (compressed, with a codec) and flip a byte
	// inside it.
	datas, _ := filepath.Glob(filepath.Join(dir, "*.data"))
	name := datas[len(datas)-1]
	f, err := vfs.Default().Open(name)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := pool.OpenFile(f, name)
	if err != nil {
		t.Fatal(err)
	}
	var victim pool.FrameRef
	for _, a := range pf.Addrs() {
		fr, err := pf.ReadFrame(a)
		if err != nil {
			t.Fatal(err)
		}
		_, h, err := pf.ReadRaw(nil, a)
		if err != nil {
			t.Fatal(err)
		}
		if fr.Base != nil && fr.Base.Level == 0 && fr.Base.Keys > 2 && (h.Codec != delta.CodecNone) == (codec != bwkv.CompressionNone) {
			victim, _ = pf.Lookup(a)
			break
		}
	}
	pf.Close()
	if victim.Len == 0 {
		t.Fatal("no leaf base frame found")
	}
	flipByte(t, name, victim.Offset+int64(victim.Len)/2)

	db, err = bwkv.Open(dir, o)
	if err != nil {
		t.Fatalf("open with a corrupt frame: %v", err)
	}
	defer db.Close()
	bad, good := 0, 0
	for i := 0; i < n; i++ {
		v, err := db.Get([]byte(fmt.Sprintf("k%05d", i)))
		switch {
		case errors.Is(err, bwkv.ErrCorruption):
			var ce *bwkv.CorruptionError
			if !errors.As(err, &ce) || ce.File == "" {
				t.Fatalf("corruption error without a file: %v", err)
			}
			bad++
		case err != nil:
			t.Fatalf("get: %v", err)
		case string(v) != val(i):
			t.Fatalf("k%05d = %q", i, v)
		default:
			good++
		}
	}
	t.Logf("%d reads failed with ErrCorruption, %d succeeded", bad, good)
	if bad == 0 || good == 0 || bad > n/4 {
		t.Fatalf("%d bad and %d good reads: want only the corrupt page's reads to fail", bad, good)
	}
}

// TestCheckpointPreallocatesDataFiles: a checkpoint reserves its data
// file's size before its first write (pool.FileWriter.Reserve), at least
// the size the file ends with: writes into reserved blocks change no file
// size, and on ext4 the writes that grew the file were the slow ones
// (docs/crash-safety.md, publishing step 3).
func TestCheckpointPreallocatesDataFiles(t *testing.T) {
	afs := &allocFS{FS: vfs.NewMem(), first: map[string]int64{}}
	db, err := bwkv.Open("db", &bwkv.Options{FS: afs, Durability: bwkv.DurabilityRelaxed})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 2000 {
		if err := db.Put(fmt.Appendf(nil, "k%05d", i), make([]byte, 1024)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	afs.mu.Lock()
	defer afs.mu.Unlock()
	files := 0
	for name, reserved := range afs.first {
		if !strings.HasSuffix(name, ".data") {
			continue
		}
		files++
		fi, err := afs.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case reserved < 0:
			t.Errorf("%s: written before any preallocation", name)
		case reserved < fi.Size():
			t.Errorf("%s: %d bytes reserved, the file ends with %d", name, reserved, fi.Size())
		}
	}
	if files == 0 {
		t.Fatal("the checkpoint wrote no data file")
	}
}

// allocFS records, for each file created, the size of its first
// preallocation if that came before its first write, else -1.
type allocFS struct {
	vfs.FS
	mu    sync.Mutex
	first map[string]int64
}

func (fs *allocFS) Create(name string) (vfs.File, error) {
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &allocFile{File: f, fs: fs, name: name}, nil
}

type allocFile struct {
	vfs.File
	fs   *allocFS
	name string
}

func (f *allocFile) note(size int64) {
	f.fs.mu.Lock()
	if _, ok := f.fs.first[f.name]; !ok {
		f.fs.first[f.name] = size
	}
	f.fs.mu.Unlock()
}

func (f *allocFile) WriteAt(p []byte, off int64) (int, error) {
	f.note(-1)
	return f.File.WriteAt(p, off)
}

func (f *allocFile) Write(p []byte) (int, error) {
	f.note(-1)
	return f.File.Write(p)
}

func (f *allocFile) Allocate(size int64) error {
	f.note(size)
	return vfs.Preallocate(f.File, size)
}
