package bwkv

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwkv/bwkv/checkpoint"
	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/failpoints"
	"github.com/bwkv/bwkv/gc"
	"github.com/bwkv/bwkv/generation"
	"github.com/bwkv/bwkv/manifest"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

// ckptState is the checkpointer's mailbox and counters.
type ckptState struct {
	req  chan chan error // DB.Checkpoint: cut now, reply after the publish
	kick chan struct{}   // dirty bytes passed CheckpointBytes

	count, bytes, framesWritten, framesSkipped, stalls atomic.Uint64
	blobs, blobBytes, blobsReused                      atomic.Uint64
	nanos, frontier, installed                         atomic.Uint64
	// writing is the id of the data file a checkpoint is writing (0: none).
	writing atomic.Uint64
	// analysisStart is the last publish's (the log below it is covered).
	analysisStart atomic.Uint64
	// settle is the idle settler's state (settle.go). Checkpointer
	// goroutine only.
	settle settleState

	pubMu sync.Mutex
	// published is closed and replaced at each publish (backpressure
	// waiters block on it). Guarded by pubMu.
	published chan struct{}
}

func newCkptState() ckptState {
	return ckptState{req: make(chan chan error), kick: make(chan struct{}, 1), published: make(chan struct{})}
}

func (c *ckptState) publishedCh() chan struct{} {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	return c.published
}

func (c *ckptState) renew() {
	c.pubMu.Lock()
	close(c.published)
	c.published = make(chan struct{})
	c.pubMu.Unlock()
}

func (db *DB) kickCheckpoint() {
	select {
	case db.ckpt.kick <- struct{}{}:
	default:
	}
}

// afterWrite runs after each frame-producing write: it asks for a cut when
// the hot generation passed CheckpointBytes. O(1).
func (db *DB) afterWrite() {
	if db.gens.Hot().Bytes() >= db.opts.CheckpointBytes && db.gens.Sealed() == nil {
		db.kickCheckpoint()
	}
	db.cache.Check()
}

// backpressure makes a writer wait, before it takes any lock, while the
// hot generation holds 2x CheckpointBytes because the checkpointer lags
// (a publish or a GC round is running), or while resident pages exceed the cache's hard limit (dirty pages the
// evictor cannot drop until a checkpoint publishes them). The wait is
// bounded (10 s): a checkpointer that keeps failing (a full disk) must not
// hang writers forever; the stall count shows it.
func (db *DB) backpressure() {
	var start time.Time
	for i := 0; i < 100 && !db.readOnly.Load() && db.mustWait(); i++ {
		if i == 0 {
			db.ckpt.stalls.Add(1)
			start = time.Now()
			if f := db.events().StallBegin; f != nil {
				f()
			}
			defer func() {
				if f := db.events().StallEnd; f != nil {
					f(StallInfo{Duration: time.Since(start)})
				}
			}()
		}
		ch := db.ckpt.publishedCh()
		select {
		case <-ch:
		case <-db.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// mustWait reports whether a writer must wait for the next publish. O(1).
func (db *DB) mustWait() bool {
	if db.gens.Hot().Bytes() >= 2*db.opts.CheckpointBytes && (db.gens.Sealed() != nil || db.gc.running.Load()) {
		return true
	}
	return db.cache.MustWait()
}

// checkpointLoop is the one background checkpointer.
func (db *DB) checkpointLoop() {
	defer db.bg.Done()
	var waiters []chan error
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	interval, _ := db.hooks.settleTimes()
	settle := time.NewTicker(interval)
	defer settle.Stop()
	for {
		select {
		case <-db.stop:
			for _, w := range waiters {
				w <- ErrClosed
			}
			return
		case w := <-db.ckpt.req:
			waiters = append(waiters, w)
		case <-db.ckpt.kick:
		case <-retry.C:
		case <-settle.C:
			db.settle()
			continue
		}
		err := db.checkpointOnce(len(waiters) > 0)
		if err != nil && db.degraded.Load() == nil {
			db.backgroundError(err)
			db.log.Warn("bwkv: checkpoint failed; will retry", "err", err)
			retry.Reset(time.Second)
		}
		// GC runs here, after the publish, so no other manifest commit
		// interleaves with it (gc.go).
		if db.collectGarbage(len(waiters) > 0) && err == nil {
			retry.Reset(gcRetry)
		}
		for _, w := range waiters {
			w <- err
		}
		waiters = waiters[:0]
	}
}

// checkpointOnce publishes a pending sealed generation (a failed earlier
// attempt) and then, if asked or due, cuts and publishes the hot one.
func (db *DB) checkpointOnce(force bool) error {
	if db.degraded.Load() != nil {
		// Nothing more is published after an unrecoverable I/O error:
		// the next open recovers from the log.
		return db.errReadOnly()
	}
	if g := db.gens.Sealed(); g != nil {
		if err := db.publish(g); err != nil {
			return err
		}
	}
	pressure := db.cache.TakePressure() && db.gens.Hot().Frames() > 0
	if !force && !pressure && db.gens.Hot().Bytes() < db.opts.CheckpointBytes {
		return nil
	}
	if err := failpoints.Hit(failpoints.CheckpointCut); err != nil {
		return fmt.Errorf("bwkv: checkpoint: %w", err)
	}
	g := db.gens.Cut(func() uint64 { return uint64(db.wal.Head()) })
	if g == nil {
		return errors.New("bwkv: checkpoint: a sealed generation is pending")
	}
	db.hooks.runCut()
	return db.publish(g)
}

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
		Writing:       &db.ckpt.writing,
		Ledger:        db.gc.ledger,
		Compressor:    db.newCompressor(),
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
	db.gcPublished()
	c := &db.ckpt
	c.count.Add(1)
	c.bytes.Add(uint64(res.Bytes))
	c.framesWritten.Add(uint64(res.Frames))
	c.blobs.Add(uint64(res.Blobs))
	c.blobBytes.Add(uint64(res.BlobBytes))
	c.blobsReused.Add(uint64(res.BlobsReused))
	c.framesSkipped.Add(uint64(res.Skipped))
	c.installed.Add(uint64(g.Bytes()))
	c.nanos.Add(uint64(res.Duration))
	c.frontier.Store(res.Frontier)
	c.analysisStart.Store(res.AnalysisStart)
	c.renew()
	db.cache.OfferPublished(g)
	return nil
}

// openTxns returns the transactions open now.
func (db *DB) openTxns() []*Txn {
	db.txMu.Lock()
	defer db.txMu.Unlock()
	open := make([]*Txn, 0, len(db.txns))
	for tx := range db.txns {
		open = append(open, tx)
	}
	return open
}

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

// loadPage reads a page's frames from its newest durable frame back to its
// base (readChain, gc.go) and rebuilds the state. The chain it read is the
// page's durable chain: the GC's accounting keeps it (gcLoaded).
//
// A GC rewrite may consolidate the chain while it is read: the frames
// below the consolidated base's address are then gone, so a read that
// followed an old link into them fails. A failed read that crossed such
// a rewrite (gcMoved) reads the chain again from addr, which now leads to
// the base.
func (db *DB) loadPage(pid pagetable.PID, addr uint64) (*node.Page, error) {
	var deltas []*delta.Delta
	var base *delta.Base
	var chain gc.Chain
	var epoch gc.Epoch
	for attempt := 0; ; attempt++ {
		epoch = db.gcEpoch()
		deltas, base = deltas[:0], nil
		var err error
		chain, err = db.readChain(pid, addr, func(fr *delta.Frame) {
			if fr.Base != nil {
				base = fr.Base
			} else {
				deltas = append(deltas, fr.Delta)
			}
		})
		if err == nil {
			break
		}
		if attempt >= readRetries || !db.gcMoved(epoch) {
			return nil, err
		}
	}
	db.gcLoaded(pid, chain, epoch)
	p := &node.Page{Base: base}
	for i := len(deltas) - 1; i >= 0; i-- {
		p = p.Prepend(deltas[i])
	}
	return p, nil
}

// removeOrphans deletes every data file the manifest's file set does not
// name: those at or above its next file id, those whose id a checkpoint
// reserved (step 2) but never published (a crash before step 4), and those
// recorded as pending deletes.
func (db *DB) removeOrphans(st *manifest.State) error {
	names, err := db.fs.List(db.dir)
	if err != nil {
		return fmt.Errorf("bwkv: open %s: %w", db.dir, err)
	}
	removed := false
	for _, n := range names {
		id, ok := checkpoint.ParseDataFileName(n)
		if !ok {
			continue
		}
		_, pending := st.PendingDeletes[id]
		_, named := st.Files[id]
		if !named || pending {
			if err := db.fs.Remove(filepath.Join(db.dir, n)); err != nil {
				return fmt.Errorf("bwkv: open %s: remove orphan %s: %w", db.dir, n, err)
			}
			removed = true
		}
	}
	if removed {
		return db.fs.SyncDir(db.dir)
	}
	return nil
}

// checkFiles verifies that the manifest names only data files that exist
// and that no other data file remains (docs/crash-safety.md, I5).
func (db *DB) checkFiles() error {
	if db.man == nil {
		return nil
	}
	st := db.man.State()
	names, err := db.fs.List(db.dir)
	if err != nil {
		return fmt.Errorf("bwkv: check: %w", err)
	}
	onDisk := map[manifest.FileID]bool{}
	var errs []error
	writing := manifest.FileID(db.ckpt.writing.Load())
	for _, n := range names {
		if id, ok := checkpoint.ParseDataFileName(n); ok {
			onDisk[id] = true
			// A retired file awaiting deletion (the GC unlinks it once
			// no reader holds it; Open deletes it) is not an orphan.
			_, pending := st.PendingDeletes[id]
			// A read-only open leaves a crashed checkpoint's file (at or
			// above the next file id) for the next read-write open to
			// delete; it is not damage.
			leftover := db.opts.ReadOnly && id >= st.NextFileID
			if _, named := st.Files[id]; !named && !pending && !leftover && id != writing {
				errs = append(errs, fmt.Errorf("bwkv: check: orphan data file %s", n))
			}
		}
	}
	for id := range st.Files {
		if !onDisk[id] {
			errs = append(errs, fmt.Errorf("bwkv: check: manifest names missing data file %s", checkpoint.DataFileName(id)))
		}
	}
	return errors.Join(errs...)
}
