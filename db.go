package bwkv

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwkv/bwkv/cache"
	"github.com/bwkv/bwkv/checkpoint"
	"github.com/bwkv/bwkv/generation"
	"github.com/bwkv/bwkv/manifest"
	"github.com/bwkv/bwkv/mvcc"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
	"github.com/bwkv/bwkv/pool"
	"github.com/bwkv/bwkv/tree"
	"github.com/bwkv/bwkv/vfs"
	"github.com/bwkv/bwkv/wal"
)

// Directory layout.
const (
	lockName = "LOCK"
	walDir   = "wal"
)

// leafSplitBytes bounds a leaf's key and value bytes: with large values a
// leaf splits before PageSplitEntries keys, which bounds what each
// consolidation copies.
const leafSplitBytes = 32 << 10

// Leaves of a database whose data far outgrows the cache split at
// smallLeafBytes instead: most reads and writes then load their leaf from
// disk, and a quarter of the bytes is a quarter of the read and decode per
// miss (2M keys of 1 KiB with a 256 MiB cache: updates +6% to +25% in
// paired runs), while in memory whole leaves are cheaper (fewer pages to
// write, split and consolidate: 8 KiB leaves cost a write-heavy load 25%
// with the data in the cache). The data counts as large from
// largeDataFactor times CacheBytes of live frame bytes, and as small again
// below smallDataFactor times (hysteresis: a size near the bound does not
// flip-flop). sizeLeaves decides at Open and after each publish.
const (
	smallLeafBytes  = 8 << 10
	largeDataFactor = 2.0
	smallDataFactor = 1.5
)

// hotAfter: a page whose durable head was published less than this long
// ago is hot, and its next checkpoint frames are stored uncompressed
// (checkpoint.Heat): they are superseded within about that long, and
// compressing them would be CPU thrown away. Long enough to cover the
// rewrite period of pages under a steady update load, short against the
// idle settle (settleIdle), whose frames are then cold and compressed.
const hotAfter = 2 * time.Second

// DB is an open database. All methods are safe for concurrent use.
type DB struct {
	dir  string
	opts Options
	fs   vfs.FS
	lock io.Closer
	log  *slog.Logger

	tree *tree.Tree
	pt   *pagetable.Table[node.Page]
	mv   *mvcc.Manager
	wal  *wal.Writer // nil when read-only
	gens *generation.Manager
	man  *manifest.Manifest
	// format holds the persisted format options in force.
	format manifest.FormatOptions
	// logBound: the log's records are bound to their LSN (format 3 and
	// later; wal.Options.BindLSN), which lets the log reuse its retired
	// segment files. A database of an older format keeps its log's layout.
	logBound bool
	// deferOld: writes log their old value apart, in a before-image at
	// the next cut while their txn is open (format 4 and later;
	// Txn.logImages).
	deferOld bool

	files *pool.Files // open data files: bounded, reference counted (files.go)

	ckpt  *checkpoint.Checkpointer // the checkpointer and its throttle (checkpoint/)
	cache *cache.Cache             // the page cache and its evictor (cache/)
	// writing is the id of the data file a checkpoint is writing (0:
	// none): Check does not call it an orphan (checkpoint.Env.Writing).
	writing atomic.Uint64
	// idle is the idle settler's state (settle.go). Checkpointer
	// goroutine only.
	idle settleState
	// heat picks the hot pages, whose checkpoint frames are stored plain
	// (checkpoint.Heat). Checkpointer goroutine only.
	heat *checkpoint.Heat
	// hooks are the test knobs of this DB (hooks.go); zero outside tests.
	hooks testHooks
	gc    gcState // data-file GC (gc.go)

	recovery RecoveryStats
	// logEnd is where a WALRecoveryTruncateDamaged open cut a damaged
	// log (when logCut); open records it in the manifest.
	logEnd wal.LSN
	logCut bool
	// recovering is set while Open's recovery runs (read-only opens
	// evict only after it).
	recovering atomic.Bool
	// recovered holds, while recovery runs, the transactions whose
	// commit or end record it has met (retention.go); nil otherwise.
	recovered atomic.Pointer[recoveredTxns]
	// degraded holds the error that made the DB read-only (a failed
	// fsync of the log, the manifest or a data file: fatalIO); nil while
	// healthy.
	degraded atomic.Pointer[error]

	closed   atomic.Bool
	readOnly atomic.Bool // opened read-only or degraded

	txns *txnSet // open transactions, rolled back by Close

	snapPool sync.Pool // *snapSlab (snapshot.go)
	hot      [hotStripes]hotStripe
	iterBufs sync.Pool // *iterScratch: iterators' reusable buffers (iter.go)

	commitsSinceRetire atomic.Int64
	stop               chan struct{}
	bg                 sync.WaitGroup

	stats dbCounters
}

type dbCounters struct {
	commits, aborts, conflicts, tooOld, bgErrors atomic.Uint64
	// deadlocks and lockTimeouts count the conflicts a lock wait ended
	// with (a cycle in the wait-for chain, LockTimeout passed).
	deadlocks, lockTimeouts atomic.Uint64
	// hotRestarts counts Update attempts restarted to queue on a hot
	// key's stripe (hot.go).
	hotRestarts atomic.Uint64
	// blobReads counts blob frames read (pages.go, readBlob).
	blobReads atomic.Uint64
	// peekRereads counts the peeks through a chain index that failed and
	// read the chain again from its head (pages.go, peekPage).
	peekRereads atomic.Uint64
}

// Open opens (creating if needed, unless opts.ErrorIfNotExist) the database
// in dir. It takes the directory's lock file and fails at once with
// ErrLocked if another process or handle holds it.
func Open(dir string, opts *Options) (*DB, error) {
	o := opts.Clone().EnsureDefaults()
	if err := o.Validate(); err != nil {
		return nil, err
	}
	fs := o.FS
	exists := true
	if _, err := fs.Stat(filepath.Join(dir, walDir)); err != nil {
		if !os.IsNotExist(err) {
			return nil, fmt.Errorf("bwkv: open %s: %w", dir, err)
		}
		exists = false
	}
	if !exists && (o.ErrorIfNotExist || o.ReadOnly) {
		return nil, fmt.Errorf("bwkv: open %s: database does not exist: %w", dir, os.ErrNotExist)
	}
	if !exists && !o.ReadOnly {
		if err := mkdirDurable(fs, filepath.Join(dir, walDir)); err != nil {
			return nil, fmt.Errorf("bwkv: open %s: %w", dir, err)
		}
	}
	lk, err := lockDir(fs, dir, o.ReadOnly)
	if err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return nil, fmt.Errorf("bwkv: open %s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("bwkv: open %s: lock: %w", dir, err)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if o.Durability == DurabilityRelaxed {
		// No commit waits for an fsync: file syncs and unlinks may wait
		// parked, holding no P (vfs.Parked).
		fs = vfs.Parked(fs)
	}
	db := &DB{
		dir:  dir,
		opts: *o,
		fs:   fs,
		lock: lk,
		log:  logger,
		stop: make(chan struct{}),
	}
	db.hooks.init(o.testHooks)
	db.files = pool.NewFiles(o.MaxOpenFiles, db.openDataFile)
	if err := db.open(exists); err != nil {
		db.files.CloseAll()
		if db.man != nil {
			db.man.Close()
		}
		if db.wal != nil {
			db.wal.Close()
		}
		lk.Close()
		return nil, err
	}
	if f := db.events().RecoveryDone; f != nil {
		f(db.recovery)
	}
	if !o.ReadOnly {
		db.bg.Add(3)
		go db.retireLoop()
		go func() {
			defer db.bg.Done()
			db.ckpt.Run()
		}()
		go func() {
			defer db.bg.Done()
			db.cache.Run(db.stop)
		}()
		if db.recovery.RecordsReplayed > 100_000 {
			db.kickCheckpoint() // a long redo: shorten the next one
		}
	}
	return db, nil
}

// retireLoop retires finished transactions in the background, so that
// consolidation can drop old versions even when commits are rare, and
// ticks the snapshot registry's clock (mvcc.Registry.Tick).
func (db *DB) retireLoop() {
	defer db.bg.Done()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	reg := db.mv.Registry()
	reg.Tick(time.Now().UnixNano())
	for {
		select {
		case <-db.stop:
			return
		case now := <-t.C:
			reg.Tick(now.UnixNano())
			db.mv.Retire()
		}
	}
}

// flushLog makes the log write out the bytes its appends left due
// (wal.Writer.FlushDue), once the caller's transaction ended and it holds
// no lock, key stripe included, another writer may wait for. A failure
// degrades the DB, as a failed append does.
func (db *DB) flushLog() {
	if db.wal == nil { // read-only
		return
	}
	if err := db.wal.FlushDue(); err != nil {
		_ = db.degrade(err)
	}
}

// afterFinish is called after each commit or rollback: retirement is
// amortized over many finishes (its watermark scan touches every registry
// slot).
func (db *DB) afterFinish() {
	if db.commitsSinceRetire.Add(1)%32 == 0 {
		db.mv.Retire()
	}
}

// Close rolls back open transactions, stops background work and releases
// the directory. Later use of the DB or of its transactions, snapshots and
// iterators returns ErrClosed.
func (db *DB) Close() error {
	if !db.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	for _, tx := range db.txns.all() {
		_ = tx.rollback(false)
	}
	close(db.stop)
	db.bg.Wait()
	var err error
	db.files.CloseAll()
	if db.man != nil {
		db.man.Close()
	}
	if db.wal != nil {
		if werr := db.wal.Close(); werr != nil && db.degraded.Load() == nil {
			err = fmt.Errorf("bwkv: close: %w", werr)
		}
	}
	if lerr := db.lock.Close(); lerr != nil && err == nil {
		err = fmt.Errorf("bwkv: close: %w", lerr)
	}
	return err
}

func (db *DB) checkOpen() error {
	if db.closed.Load() {
		return ErrClosed
	}
	return nil
}

func (db *DB) checkKey(key []byte) error {
	if len(key) == 0 {
		return ErrEmptyKey
	}
	if len(key) > db.opts.MaxKeySize {
		return fmt.Errorf("%w: %d bytes > MaxKeySize %d", ErrKeyTooLarge, len(key), db.opts.MaxKeySize)
	}
	return nil
}

// checkWrite returns the error a write of key (and value, unless del)
// gets on an open DB: ErrReadOnly, or the key's or value's. One call, one
// return in Txn.write (whose defers stay open-coded with few returns).
func (db *DB) checkWrite(key, value []byte, del bool) error {
	if db.readOnly.Load() {
		return db.errReadOnly()
	}
	if err := db.checkKey(key); err != nil {
		return err
	}
	if !del {
		return db.checkValue(value)
	}
	return nil
}

func (db *DB) checkValue(v []byte) error {
	if len(v) > db.opts.MaxValueSize {
		return fmt.Errorf("%w: %d bytes > MaxValueSize %d", ErrValueTooLarge, len(v), db.opts.MaxValueSize)
	}
	return nil
}

// Begin starts a read-write transaction. The caller must Commit or Rollback
// it; a Txn is for one goroutine at a time.
func (db *DB) Begin() (*Txn, error) {
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	if db.readOnly.Load() {
		return nil, db.errReadOnly()
	}
	tx := &Txn{db: db, st: db.mv.Begin()}
	tx.writes = tx.firstWrite[:0]
	tx.r.Init(db.mv, tx.st.ID, tx.st.ID)
	tx.joinLog()
	db.txns.add(tx, tx.st.Reg.Shard())
	if db.closed.Load() {
		_ = tx.rollback(false)
		return nil, ErrClosed
	}
	return tx, nil
}

// Get returns a copy of key's committed value (ErrNotFound if none). The
// caller owns the returned slice.
func (db *DB) Get(key []byte) ([]byte, error) {
	return db.GetAppend(nil, key)
}

// GetAppend appends key's committed value to dst and returns the result.
func (db *DB) GetAppend(dst, key []byte) ([]byte, error) {
	s, err := db.NewSnapshot()
	if err != nil {
		return dst, err
	}
	out, err := s.GetAppend(dst, key)
	s.Close()
	return out, err
}

// Sync makes every commit so far durable.
func (db *DB) Sync() error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	if db.wal == nil {
		return nil
	}
	if err := db.wal.Sync(db.wal.Head()); err != nil {
		return db.degrade(err)
	}
	return nil
}

// Checkpoint cuts the hot generation now and waits for its publish. It is
// not a backup: it bounds the log and the next recovery.
func (db *DB) Checkpoint() error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	db.mv.Retire()
	if db.opts.ReadOnly {
		return nil
	}
	if db.readOnly.Load() {
		return db.errReadOnly()
	}
	return db.ckpt.Checkpoint()
}
