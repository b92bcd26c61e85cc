package wal_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bwkv/bwkv/vfs"
	"github.com/bwkv/bwkv/wal"
)

// walRun is the state of a workload as a crash or a failure finds it.
type walRun struct {
	appended []logged
	acked    wal.LSN       // every record below was reported durable by Sync
	from     wal.LSN       // the replay start a manifest would hold (Recycle's bound)
	onAck    func(*walRun) // called when acked or from advance
	mode     logMode
}

// logMode is how a crash test's log is laid out: plain (format 2) or with
// records bound to their LSN and retired segments reused (Options.BindLSN,
// Options.Spares: format 3).
type logMode struct {
	bind   bool
	spares int
}

func (m logMode) String() string {
	if m.bind {
		return fmt.Sprintf("bound,spares=%d", m.spares)
	}
	return "plain"
}

// logModes are the layouts every crash test runs with.
var logModes = []logMode{{}, {bind: true, spares: 2}}

func (m logMode) options(fs vfs.FS, dir string) wal.Options {
	return wal.Options{FS: fs, Dir: dir, SegmentBytes: wal.MinSegmentBytes, BindLSN: m.bind, Spares: m.spares}
}

// runWorkload writes transactions of 1-4 records, syncing each, and
// recycles every 40 records, on a single goroutine so that every file
// operation happens inside one of its calls. It stops at the first error,
// which it returns.
func runWorkload(fs vfs.FS, rng *rand.Rand, n int, run *walRun, dir string) error {
	w, err := wal.Open(run.mode.options(fs, dir), 0)
	if err != nil {
		return err
	}
	defer w.Close()
	for len(run.appended) < n {
		for range 1 + rng.IntN(4) {
			r := genRecord(rng, len(run.appended))
			lsn, err := w.Append(&r)
			if err != nil {
				return err
			}
			run.appended = append(run.appended, logged{lsn, r})
		}
		if err := w.Sync(w.Head()); err != nil {
			return err
		}
		run.acked = w.DurableLSN()
		if run.onAck != nil {
			run.onAck(run)
		}
		if len(run.appended)%40 < 4 {
			// A record boundary inside the durable log, as analysisStart is.
			run.from = run.appended[len(run.appended)*3/4].lsn
			if run.onAck != nil {
				run.onAck(run)
			}
			if err := w.Recycle(run.from); err != nil {
				return err
			}
		}
	}
	return w.Close()
}

// checkRecovered replays a log left by run and checks the reader rules'
// promises: no corruption, every acknowledged record present, nothing but a
// prefix of what was appended; then the writer continues it and the result
// replays whole.
func checkRecovered(t *testing.T, fs vfs.FS, run walRun, dir, what string) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s: %s", what, fmt.Sprintf(format, args...))
	}
	// The frontier is the acknowledged LSN: every byte below was fsynced,
	// which is what the manifest's frontier promises.
	got, res, err := replayBound(t, fs, dir, run.from, run.acked, run.mode.bind)
	if err != nil {
		fail("replay from %d, frontier %d: %v", run.from, run.acked, err)
	}
	want := run.appended
	for len(want) > 0 && want[0].lsn < run.from {
		want = want[1:]
	}
	if len(got) > len(want) {
		fail("replayed %d records, only %d appended", len(got), len(want))
	}
	checkRecords(t, got, want[:len(got)])
	if len(got) < len(want) && want[len(got)].lsn < run.acked {
		fail("acknowledged record at %d lost (log ends at %d, acked %d)", want[len(got)].lsn, res.End, run.acked)
	}

	w, err := wal.Open(run.mode.options(fs, dir), res.End)
	if err != nil {
		fail("Open at %d: %v", res.End, err)
	}
	r := wal.Record{Type: wal.Commit, TxID: 424242}
	lsn, err := w.Append(&r)
	if err != nil {
		fail("Append after recovery: %v", err)
	}
	if err := w.Close(); err != nil {
		fail("Close after recovery: %v", err)
	}
	again, res2, err := replayBound(t, fs, dir, run.from, lsn+1, run.mode.bind)
	if err != nil {
		fail("replay after recovery: %v", err)
	}
	checkRecords(t, again, append(got[:len(got):len(got)], logged{lsn, r}))
	if res2.TornBytes != 0 {
		fail("%d torn bytes after recovery", res2.TornBytes)
	}
}

// TestPowerLoss clones the file system as a power loss would leave it after
// every operation of a workload (no, half and all unsynced data kept, torn
// last writes) and checks each clone recovers (docs/crash-safety.md, layer 5).
func TestPowerLoss(t *testing.T) {
	for _, m := range logModes {
		t.Run(m.String(), func(t *testing.T) { testPowerLoss(t, m) })
	}
}

func testPowerLoss(t *testing.T, m logMode) {
	rng := newRand(t)
	mem := vfs.NewMem()
	run := walRun{mode: m}
	type crash struct {
		fs  *vfs.MemFS
		run walRun
		op  vfs.Op
		opt vfs.CrashOptions
	}
	var crashes []crash
	mem.SetHook(func(op vfs.Op) {
		for i, opt := range []vfs.CrashOptions{
			{},
			{KeepUnsynced: 0.5, TornLastWrite: true},
			{KeepUnsynced: 1},
			{KeepUnsynced: 1, TornLastWrite: true},
		} {
			opt.Seed = op.Index*4 + int64(i)
			snap := run
			snap.appended = run.appended[:len(run.appended):len(run.appended)]
			crashes = append(crashes, crash{mem.CrashClone(opt), snap, op, opt})
		}
	})
	if err := runWorkload(mem, rng, 250, &run, "/db/wal"); err != nil {
		t.Fatal(err)
	}
	mem.SetHook(nil)
	t.Logf("%d operations, %d crash states", mem.Ops(), len(crashes))
	for _, c := range crashes {
		checkRecovered(t, c.fs, c.run, "/db/wal", fmt.Sprintf("crash after %v %+v", c.op, c.opt))
	}
}

// TestIOErrors fails each operation of a workload in turn with EIO, ENOSPC
// and a short write (docs/crash-safety.md, layer 6): the failing call returns an error
// wrapping the fault, the writer stays failed, nothing acknowledged is lost
// and the log reopens.
func TestIOErrors(t *testing.T) {
	for _, m := range logModes {
		t.Run(m.String(), func(t *testing.T) { testIOErrors(t, m) })
	}
}

func testIOErrors(t *testing.T, m logMode) {
	seed := newRand(t).Uint64()
	var total int64
	{
		inj := vfs.NewInjector(vfs.NewMem())
		run := walRun{mode: m}
		if err := runWorkload(inj, rand.New(rand.NewPCG(seed, 0)), 150, &run, "/db/wal"); err != nil {
			t.Fatal(err)
		}
		total = inj.Ops()
	}
	for i := int64(1); i <= total; i++ {
		for _, kind := range []vfs.FaultKind{vfs.FaultEIO, vfs.FaultENOSPC, vfs.FaultShortWrite} {
			mem := vfs.NewMem()
			inj := vfs.NewInjector(mem)
			inj.SetFailAt(i, kind)
			run := walRun{mode: m}
			err := runWorkload(inj, rand.New(rand.NewPCG(seed, 0)), 150, &run, "/db/wal")
			what := fmt.Sprintf("%v at op %d", kind, i)
			if err == nil || !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("%s: workload returned %v, want the injected fault", what, err)
			}
			checkRecovered(t, mem, run, "/db/wal", what)
		}
	}
	t.Logf("%d operations, each failed 3 ways", total)
}
