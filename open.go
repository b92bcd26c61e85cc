package bwkv

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/bwkv/bwkv/cache"
	"github.com/bwkv/bwkv/checkpoint"
	"github.com/bwkv/bwkv/generation"
	"github.com/bwkv/bwkv/manifest"
	"github.com/bwkv/bwkv/mvcc"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
	"github.com/bwkv/bwkv/tree"
	"github.com/bwkv/bwkv/vfs"
	"github.com/bwkv/bwkv/wal"
)

// Opening a database: the steps Open runs after it checked the directory
// (recovery itself is in redo.go).

// open reads the manifest, loads the page table, builds the tree and runs
// recovery. Nothing is written before the manifest and the log validated.
func (db *DB) open(exists bool) error {
	o := &db.opts
	man, st, err := manifest.Open(db.fs, db.dir, !o.ReadOnly)
	switch {
	case err == nil:
		db.man = man
		if n := db.hooks.manifestRotateBytes; n > 0 {
			man.SetRotateBytes(n)
		}
	case o.ReadOnly && errors.Is(err, manifest.ErrNotExist):
		st = manifest.NewState() // never checkpointed: everything is in the log
	default:
		return db.openErr(err)
	}
	if err := db.applyStoredFormat(st); err != nil {
		return err
	}
	db.pt = pagetable.New[node.Page](tree.RootPID + 1)
	tree.Map(db.pt, st.Pages)
	db.pt.Reserve(pagetable.PID(st.NextPID))
	lastAddr := uint64(0)
	if st.NextAddr > 0 {
		lastAddr = st.NextAddr - 1
	}
	db.gens = generation.NewManager(1, lastAddr)
	db.gens.StartLog(st.Frontier)
	db.heat = checkpoint.NewHeat(db.hooks.hotAfterOr(hotAfter), lastAddr)
	// Until recovery ends every txid counts as unretired: consolidation
	// during redo keeps every version not known committed (retention.go);
	// RetireAll follows.
	db.mv = mvcc.NewManager(0, db.durableLSN)
	db.txns = newTxnSet(db.mv.Registry().Shards())
	db.mv.AdvanceTo(st.Oracle)
	db.initGC()
	db.tree = tree.New(tree.Config{
		SplitEntries: o.PageSplitEntries,
		ChainMax:     o.DeltaChainMax,
		ReadChain:    db.hooks.readChainOr(max(1, o.DeltaChainMax/3)),
		SplitBytes:   leafSplitBytes,
		// Used while sizeLeaves says the data is large (at Open, before
		// recovery, and after each publish).
		SmallSplitBytes: smallLeafBytes,
		Carry:           !db.hooks.noCarry,
	}, tree.Env{
		Retention:   retention{db},
		Gens:        db.gens,
		Load:        db.loadPage,
		Loaded:      func(pid pagetable.PID) { db.cache.Loaded(pid) },
		WantCompact: func(pid pagetable.PID) { db.cache.WantCompact(pid) },
		Peek:        db.peekPage,
		Admit:       func(s *node.Stub) bool { return db.cache.Admit(s) },
	}, db.pt)
	db.cache = db.newCache()
	db.ckpt = db.newCheckpointer()
	db.readOnly.Store(o.ReadOnly)
	db.snapPool.New = func() any { return new(snapSlab) }
	db.initHot()
	db.sizeLeaves()
	if err := db.recover(exists, st); err != nil {
		return err
	}
	if o.ReadOnly {
		return nil
	}
	return db.firstWrites(st)
}

// applyStoredFormat sets the format options the database is written with:
// the requested ones for a new database, else the stored ones, which win
// (logged when they differ), with the options derived from them.
func (db *DB) applyStoredFormat(st *manifest.State) error {
	o := &db.opts
	db.format = manifest.FormatOptions{PageSplitEntries: o.PageSplitEntries, BlobThreshold: max(o.BlobThreshold, 0), MaxKeySize: o.MaxKeySize,
		MaxValueSize: o.MaxValueSize, Compression: compressionName(o.Compression)}
	version := st.FormatVersion
	if version == 0 {
		version = db.hooks.newFormat()
	}
	db.logBound = version >= manifest.LogBoundFormat
	db.deferOld = version >= manifest.DeferredOldFormat
	if st.FormatVersion != 0 {
		stored := st.Options
		c, ok := parseCompression(stored.Compression)
		if !ok {
			return fmt.Errorf("bwkv: open %s: stored compression codec %q: %w", db.dir, stored.Compression, ErrVersion)
		}
		if stored.MaxValueSize == 0 {
			// A manifest from before MaxValueSize was stored: the request
			// stands (a log record too large for it fails its write with
			// ErrValueTooLarge, never the DB).
			stored.MaxValueSize = o.MaxValueSize
		}
		if stored != db.format {
			db.log.Info("bwkv: stored format options win over the requested ones", "stored", stored, "requested", db.format)
		}
		db.format = stored
		o.PageSplitEntries, o.BlobThreshold, o.MaxKeySize, o.MaxValueSize = stored.PageSplitEntries, stored.BlobThreshold, stored.MaxKeySize, stored.MaxValueSize
		if o.BlobThreshold == 0 {
			o.BlobThreshold = -1 // stored 0: off (Options' 0 would mean the default)
		}
		if c != o.Compression {
			o.Compression, o.ZstdLevel = c, 0 // a level for another codec would act on nothing
		}
		if min := o.minSegment(); o.WALSegmentBytes < min {
			// Every update or delete of a stored value logs its full old
			// value: segments must fit the stored limits, not the
			// requested ones.
			db.log.Info("bwkv: WALSegmentBytes raised to fit the stored MaxKeySize and MaxValueSize", "requested", o.WALSegmentBytes, "used", min)
			o.WALSegmentBytes = min
		}
	}
	return nil
}

// firstWrites runs after recovery in a writable open. The first mutations
// finish the manifest's torn tail, record a new database's format, delete
// data files no manifest commit names (a crashed checkpoint's) and retired
// ones, and log segments wholly below analysisStart.
func (db *DB) firstWrites(st *manifest.State) error {
	if err := db.man.Prepare(); err != nil {
		return db.openErr(err)
	}
	if st.FormatVersion == 0 {
		// A new database records its format options at once, so a reopen
		// with other values keeps the ones the data was written with.
		if err := db.man.Commit(&manifest.Edit{
			Has:           manifest.HasFormatVersion | manifest.HasOptions,
			FormatVersion: db.hooks.newFormat(),
			Options:       db.format,
		}); err != nil {
			return db.openErr(err)
		}
	}
	if db.logCut && uint64(db.logEnd) < st.LogSynced {
		// The log was cut below the LSN the last publish synced: record
		// the new end, or the next open would report the cut as damage.
		if err := db.man.Commit(&manifest.Edit{Has: manifest.HasLogSynced, LogSynced: uint64(db.logEnd)}); err != nil {
			return db.openErr(err)
		}
	}
	if err := db.removeOrphans(st); err != nil {
		return err
	}
	if err := db.wal.Recycle(wal.LSN(st.AnalysisStart)); err != nil {
		return fmt.Errorf("bwkv: open %s: recycle log: %w", db.dir, err)
	}
	return nil
}

// newCache wires the page cache to the parts it governs (cache.Env).
func (db *DB) newCache() *cache.Cache {
	env := cache.Env{
		CacheBytes:      db.opts.CacheBytes,
		ReadOnly:        db.opts.ReadOnly,
		NoEvict:         db.hooks.noEvict,
		Recovering:      db.recovering.Load,
		Pages:           db.pt,
		Tree:            db.tree,
		Gens:            db.gens,
		KickCheckpoint:  db.kickCheckpoint,
		BackgroundError: db.backgroundError,
		Log:             db.log,
	}
	if l := db.gc.ledger; l != nil {
		env.Forget = func(pid pagetable.PID) { l.Forget(uint64(pid)) }
	}
	return cache.New(env)
}

// openErr adds the directory to a lower layer's error. Corruption and
// newer-format errors need no mapping: every layer wraps the ones
// internal/base defines, which the root re-exports.
func (db *DB) openErr(err error) error {
	return fmt.Errorf("bwkv: open %s: %w", db.dir, err)
}

// mkdirDurable creates dir and its missing parents and fsyncs each parent
// directory, so the new entries survive a power loss.
func mkdirDurable(fs vfs.FS, dir string) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := fs.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, d := range missing {
		if err := fs.SyncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}
