package bwkv

import (
	"time"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/gc"
	"github.com/bwkv/bwkv/manifest"
	"github.com/bwkv/bwkv/pagetable"
	"github.com/bwkv/bwkv/pool"
)

// The root's side of the data-file GC (docs/crash-safety.md; the gc package holds
// the accounting, the victim choice, the rewrite protocol and the round
// driver, gc.Worker, which the checkpointer's loop runs after each
// attempt): the ledger and the worker wired to the engine, and the
// page loader's and the collector's views of them.

const (
	// gcDrainWait bounds how long a round waits for the readers of a
	// retired file before leaving its deletion to the next round. Readers
	// hold a file for one frame read.
	gcDrainWait = time.Second
	// gcRetry is the pause before a round that left work behind runs
	// again on a quiet database.
	gcRetry = 100 * time.Millisecond
	// gcMergeSmall is the number of small data files (below a quarter
	// of DataFileBytes) at which the GC merges them (gc.Policy.MergeSmall).
	gcMergeSmall = 8
)

// gcState is the GC's part of the DB. Both are nil for a read-only DB (no
// background work, no accounting).
type gcState struct {
	ledger *gc.Ledger
	worker *gc.Worker // the round driver, run by the checkpointer's loop
	policy gc.Policy  // the collector's victim policy (tests read it)
}

// initGC sets up the ledger and the collector (Open, before recovery:
// the ledger records the chains recovery loads).
func (db *DB) initGC() {
	if db.opts.ReadOnly {
		return
	}
	g := &db.gc
	g.policy = gc.Policy{
		LiveRatio:  db.opts.GCLiveRatio,
		SpaceAmp:   db.opts.GCSpaceAmp,
		RoundBytes: 4 * max(db.opts.CheckpointBytes, db.opts.DataFileBytes),
		FileBytes:  db.opts.DataFileBytes,
		MergeSmall: gcMergeSmall,
	}
	g.ledger = gc.NewLedger(func(pid, head uint64) (gc.Chain, error) {
		return db.readChain(pagetable.PID(pid), head, nil)
	})
	coll := gc.New(&gc.Env{
		FS:        db.fs,
		Dir:       db.dir,
		Manifest:  db.man,
		Ledger:    g.ledger,
		Files:     gcFiles{db},
		Path:      db.dataPath,
		Writing:   &db.writing,
		Stop:      db.stop,
		Yield:     func() bool { return db.ckpt.Due() },
		DrainWait: gcDrainWait,
		Verify:    db.hooks.verifyGC(),
		// The consolidated bases take the checkpoints' codec.
		Compressor:    db.newCompressor(),
		NoConsolidate: db.hooks.gcNoConsolidate,
		LoadRoot:      db.gcLoadRoot,
	}, g.policy)
	g.worker = gc.NewWorker(coll, gc.WorkerEnv{
		Skip:            func() bool { return db.readOnly.Load() || db.hooks.gcPaused.Load() },
		RoundDone:       db.gcRoundDone,
		Fatal:           fatalIO,
		Degrade:         func(err error) { _ = db.degrade(err) },
		BackgroundError: db.backgroundError,
		Log:             db.log,
	})
}

// gcRoundDone reports a GC round (GCRound event) and wakes the writers
// held by backpressure while it ran.
func (db *DB) gcRoundDone(d time.Duration, more bool, err error) {
	if f := db.events().GCRound; f != nil {
		f(GCRoundInfo{Duration: d, More: more, Err: err})
	}
	db.ckpt.Wake()
}

// gcLoaded is the page loader's hook: the chain it read, having sampled
// epoch e first, is the page's durable chain (docs/crash-safety.md
// accounting) unless a consolidating rewrite committed meanwhile.
func (db *DB) gcLoaded(pid pagetable.PID, c gc.Chain, e gc.Epoch) {
	if db.gc.ledger != nil {
		db.gc.ledger.Loaded(uint64(pid), c, e)
	}
}

// gcLoadRoot is the GC's view of where a resident page would read its
// chain from, when that is below its durable head (gc.Env.LoadRoot): a
// stub reads from its base's address (tree.Tree's full load) and replays
// its chain, whose published deltas lie above that address.
func (db *DB) gcLoadRoot(pid uint64) (uint64, bool) {
	p := db.pt.Load(pagetable.PID(pid))
	if p == nil || p.Stub == nil {
		return 0, false
	}
	return p.Base.Addr, true
}

// gcEpoch samples the GC's rewrite epoch before a page load reads a
// chain (gc.Ledger.Epoch; 0 for a read-only DB, which runs no GC).
func (db *DB) gcEpoch() gc.Epoch {
	if db.gc.ledger == nil {
		return 0
	}
	return db.gc.ledger.Epoch()
}

// gcMoved reports whether a chain read that sampled e may have crossed a
// consolidating rewrite (gc.Ledger.Moved): a frame it followed a link to
// may be gone, replaced by the base at a newer address of the chain.
func (db *DB) gcMoved(e gc.Epoch) bool {
	return db.gc.ledger != nil && db.gc.ledger.Moved(e)
}

func (db *DB) gcStats() GCStats {
	if db.gc.worker == nil {
		return GCStats{}
	}
	s := db.gc.worker.Stats()
	out := GCStats{
		FilesRewritten: s.FilesRewritten,
		FilesRetired:   s.FilesRetired,
		FilesDeleted:   s.FilesDeleted,
		BytesWritten:   s.BytesWritten,
		DataBytes:      s.DataBytes,
		LiveBytes:      s.LiveBytes,
		Rounds:         s.Rounds,

		PagesConsolidated:  s.PagesConsolidated,
		FramesConsolidated: s.FramesConsolidated,
		ConsolidateErrors:  s.ConsolidateErrors,
	}
	out.AccountingUnread, out.AccountingMismatched = db.gc.ledger.Misses()
	if s.BytesDeleted > s.BytesWritten {
		out.BytesReclaimed = s.BytesDeleted - s.BytesWritten
	}
	if s.LiveBytes > 0 {
		out.SpaceAmplification = float64(s.DataBytes) / float64(s.LiveBytes)
	}
	return out
}

// gcFiles is the collector's view of the cache (gc.Files).
type gcFiles struct{ db *DB }

func (g gcFiles) Frames(id manifest.FileID) ([]pool.PageFrame, error) {
	h, err := g.db.files.Acquire(uint64(id))
	if err != nil {
		return nil, err
	}
	defer g.db.files.Release(h)
	f := h.File()
	if pf, ok := f.PageFrames(); ok {
		return pf, nil
	}
	addrs := f.Addrs() // a version 1 file: PIDs unknown (0)
	pf := make([]pool.PageFrame, len(addrs))
	for i, a := range addrs {
		pf[i].Addr = a
	}
	return pf, nil
}

func (g gcFiles) ReadRaw(id manifest.FileID, addr uint64, dst []byte) ([]byte, delta.FrameHeader, error) {
	h, err := g.db.files.Acquire(uint64(id))
	if err != nil {
		return dst, delta.FrameHeader{}, err
	}
	defer g.db.files.Release(h)
	return h.File().ReadRaw(dst, addr)
}

func (g gcFiles) Retire(id manifest.FileID) <-chan struct{} { return g.db.files.Retire(uint64(id)) }

func (g gcFiles) Deleted(id manifest.FileID) { g.db.files.Forget(uint64(id)) }
