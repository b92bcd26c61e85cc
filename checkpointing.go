package bwkv

import (
	"fmt"
	"time"

	"github.com/bwkv/bwkv/checkpoint"
	"github.com/bwkv/bwkv/failpoints"
	"github.com/bwkv/bwkv/generation"
)

// newCheckpointer wires the checkpointer to the engine (checkpoint.LoopEnv).
// It runs after the cache is made and before recovery (whose undo may
// degrade the DB, which wakes throttled writers).
func (db *DB) newCheckpointer() *checkpoint.Checkpointer {
	interval, _ := db.hooks.settleTimes()
	return checkpoint.New(checkpoint.LoopEnv{
		Gens:            db.gens,
		Cache:           db.cache,
		LogHead:         db.logHead,
		CheckpointBytes: db.opts.CheckpointBytes,
		ReadOnly:        &db.readOnly,
		Stop:            db.stop,
		ErrClosed:       ErrClosed,
		Degraded:        db.degradedErr,
		Cut:             db.cut,
		Publish:         db.publish,
		CollectGarbage:  db.gc.worker.Collect,
		GCRetry:         gcRetry,
		Settle:          db.settle,
		SettleInterval:  interval,
		BackgroundError: db.backgroundError,
		Log:             db.log,
		StallBegin: func() {
			if f := db.events().StallBegin; f != nil {
				f()
			}
		},
		StallEnd: func(d time.Duration) {
			if f := db.events().StallEnd; f != nil {
				f(StallInfo{Duration: d})
			}
		},
	})
}

// logHead is the log's head, 0 before recovery opened the log.
func (db *DB) logHead() uint64 {
	if db.wal == nil {
		return 0
	}
	return uint64(db.wal.Head())
}

// kickCheckpoint asks the checkpointer for a cut.
func (db *DB) kickCheckpoint() { db.ckpt.Kick() }

// afterWrite runs after each frame-producing write: the checkpointer may
// be due (checkpoint.Checkpointer.AfterWrite), the evictor too. O(1).
func (db *DB) afterWrite() {
	db.ckpt.AfterWrite()
	db.cache.Check()
}

// backpressure makes a writer wait, before it takes any lock, while the
// checkpointer lags or the cache is over its hard limit
// (checkpoint.Checkpointer.Throttle). O(1) when it does not wait.
func (db *DB) backpressure() { db.ckpt.Throttle() }

// degradedErr is nil while the DB is healthy, else the error a write gets
// (errReadOnly): nothing more is published after an unrecoverable I/O error.
func (db *DB) degradedErr() error {
	if db.degraded.Load() == nil {
		return nil
	}
	return db.errReadOnly()
}

// cut seals the hot generation for a checkpoint (nil: a sealed one is
// pending) and runs the cut test hook. It logs the open transactions'
// before-images (logImages) before the gate closes, then inside it,
// before it reads the frontier, those of the writes made in between; if
// that fails the DB degrades, so the sealed generation is never
// published (Checkpointer.Attempt).
func (db *DB) cut() *generation.Gen {
	// The images the open transactions owe so far, logged before the
	// gate closes, while writers go on: a long transaction's writes since
	// the last cut (up to MaxTxnLag of log) are imaged here, not with
	// every writer waiting. Inside the gate only the writes made
	// meanwhile are left.
	n, err := db.logImages()
	if err != nil {
		_ = db.degrade(err)
	}
	db.hooks.runCutImages(false, n)
	g := db.gens.Cut(func() uint64 {
		n, err := 0, error(nil)
		if !failpoints.Skip(failpoints.MutCutNoGateImages) {
			n, err = db.logImages()
		}
		if err != nil {
			_ = db.degrade(err)
		}
		db.hooks.runCutImages(true, n)
		return uint64(db.wal.Head())
	})
	if g != nil {
		db.hooks.runCut()
	}
	return g
}

// logImages logs the before-images every open transaction owes (Txn.logImages)
// and returns how many. The cut calls it twice: before the gate, for
// most of them, and inside the gate's write side, where no write is
// between its log record and its place in tx.writes, so that every write
// the cut seals is imaged below the frontier. O(open transactions +
// their writes not imaged yet).
func (db *DB) logImages() (int, error) {
	if failpoints.Skip(failpoints.MutCutNoImages) {
		return 0, nil
	}
	if err := failpoints.Hit(failpoints.CheckpointImages); err != nil {
		return 0, fmt.Errorf("bwkv: cut: %w", err)
	}
	n := 0
	for _, tx := range db.txns.all() {
		k, err := tx.logImages()
		n += k
		if err != nil {
			return n, fmt.Errorf("bwkv: cut: before-image: %w", err)
		}
	}
	return n, nil
}

// publish is the checkpoint of one sealed generation: the step that
// aborts the transactions too old (abortTxnsTooOld), the run
// (checkpoint.Run), then what the engine learns from the publish.
func (db *DB) publish(g *generation.Gen) error {
	// open are the transactions open when the run starts: they bound its
	// analysis start (Env.OldestActive), after abortTxnsTooOld.
	var open []*Txn
	env := &checkpoint.Env{
		FS:            db.fs,
		Dir:           db.dir,
		Table:         db.pt,
		Gens:          db.gens,
		WAL:           db.wal,
		Manifest:      db.man,
		OldestActive:  func() (uint64, bool) { return oldestFirstLSN(open) },
		Oracle:        db.mv.Now,
		Format:        db.format,
		Writing:       &db.writing,
		Ledger:        db.gc.ledger,
		Compressor:    db.newCompressor(),
		Heat:          db.heat,
		Idle:          db.idle.checkpointing,
		BlobThreshold: db.opts.BlobThreshold,
	}
	ev := db.events()
	if ev.CheckpointBegin != nil {
		ev.CheckpointBegin(CheckpointBeginInfo{DirtyBytes: g.Bytes()})
	}
	start := time.Now()
	open = db.openTxns()
	db.abortTxnsTooOld(open)
	res, err := checkpoint.Run(env, g)
	if ev.CheckpointEnd != nil {
		info := CheckpointEndInfo{Duration: time.Since(start), Err: err}
		if err == nil {
			info.Bytes, info.Frames = res.Bytes, res.Frames
		}
		ev.CheckpointEnd(info)
	}
	if err != nil {
		if fatalIO(err) {
			return db.degrade(err)
		}
		return err
	}
	// INV-P2: PIDs removed in this generation are reusable now.
	db.pt.Reclaim(g.ID)
	db.sizeLeaves()
	db.gc.worker.Published()
	db.ckpt.Published(res, uint64(g.Installed()))
	db.cache.OfferPublished(g)
	return nil
}

// openTxns returns the transactions open now.
func (db *DB) openTxns() []*Txn { return db.txns.all() }

// abortTxnsTooOld is the checkpoint step that enforces MaxTxnLag: it aborts
// (ErrTxnTooOld) every transaction of open whose first record is more than
// MaxTxnLag log bytes behind the head. O(open transactions), once per
// checkpoint.
func (db *DB) abortTxnsTooOld(open []*Txn) {
	head := uint64(db.wal.Head())
	for _, tx := range open {
		tx.mu.Lock()
		began, first, done := tx.began, uint64(tx.first), tx.done
		tx.mu.Unlock()
		// A txn that logged its first record after head was read is
		// ahead of it, not behind (head-first would wrap around).
		if began && !done && first < head && head-first > uint64(db.opts.MaxTxnLag) {
			db.abortTooOld(tx)
		}
	}
}

// oldestFirstLSN returns the smallest first LSN of the transactions of open
// that logged a record (false: none). Those abortTxnsTooOld aborted are
// still counted: their end records are not durable yet.
func oldestFirstLSN(open []*Txn) (uint64, bool) {
	var oldest uint64
	found := false
	for _, tx := range open {
		tx.mu.Lock()
		began, first := tx.began, uint64(tx.first)
		tx.mu.Unlock()
		if began && (!found || first < oldest) {
			oldest, found = first, true
		}
	}
	return oldest, found
}

// abortTooOld rolls back a transaction that pins the log too far back;
// its next call returns ErrTxnTooOld.
func (db *DB) abortTooOld(tx *Txn) {
	tx.mu.Lock()
	if tx.done {
		tx.mu.Unlock()
		return
	}
	tx.tooOld = true
	tx.mu.Unlock()
	db.stats.tooOld.Add(1)
	_ = tx.rollback(true)
}

// sizeLeaves marks the tree large (tree.Tree.SetLarge: smaller leaves)
// while the data files' live bytes exceed largeDataFactor x CacheBytes,
// and small again once they fall below smallDataFactor x (leavesLarge).
// At Open (before recovery) and after each publish, in O(data files).
func (db *DB) sizeLeaves() {
	_, live := db.man.FileBytes()
	db.tree.SetLarge(leavesLarge(db.tree.Large(), live, db.opts.CacheBytes))
}

// leavesLarge is sizeLeaves' rule: whether the tree is large with live
// bytes of data and a cache of cache bytes, given whether it was.
func leavesLarge(was bool, live, cache int64) bool {
	if was {
		return float64(live) >= smallDataFactor*float64(cache)
	}
	return float64(live) > largeDataFactor*float64(cache)
}
