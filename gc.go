package bwkv

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/bwkv/bwkv/checkpoint"
	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/gc"
	"github.com/bwkv/bwkv/internal/base"
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
	// readRetries bounds the re-reads of the address map by one frame
	// read that keeps finding its file retired (each retry follows a
	// rewrite commit, so more than a few means a bug).
	readRetries = 8
	// gcMergeSmall is the number of small data files (below a quarter
	// of DataFileBytes) at which the GC merges them (gc.Policy.MergeSmall).
	gcMergeSmall = 8
)

// gcState is the GC's part of the DB. Both are nil for a read-only DB (no
// background work, no accounting).
type gcState struct {
	ledger *gc.Ledger
	worker *gc.Worker // the round driver, run by the checkpointer's loop
}

// initGC sets up the ledger and the collector (Open, before recovery:
// the ledger records the chains recovery loads).
func (db *DB) initGC() {
	if db.opts.ReadOnly {
		return
	}
	g := &db.gc
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
		Yield:     func() bool { return db.gens.Hot().Bytes() >= db.opts.CheckpointBytes },
		DrainWait: gcDrainWait,
		Verify:    db.hooks.verifyGC(),
		// The consolidated bases take the checkpoints' codec.
		Compressor:    db.newCompressor(),
		NoConsolidate: db.hooks.gcNoConsolidate,
		LoadRoot:      db.gcLoadRoot,
	}, gc.Policy{
		LiveRatio:  db.opts.GCLiveRatio,
		SpaceAmp:   db.opts.GCSpaceAmp,
		RoundBytes: 4 * max(db.opts.CheckpointBytes, db.opts.DataFileBytes),
		FileBytes:  db.opts.DataFileBytes,
		MergeSmall: gcMergeSmall,
	})
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
	}
	if s.BytesDeleted > s.BytesWritten {
		out.BytesReclaimed = s.BytesDeleted - s.BytesWritten
	}
	if s.LiveBytes > 0 {
		out.SpaceAmplification = float64(s.DataBytes) / float64(s.LiveBytes)
	}
	return out
}

// dataPath returns the path of data file id.
func (db *DB) dataPath(id manifest.FileID) string {
	return filepath.Join(db.dir, checkpoint.DataFileName(id))
}

// readChain reads page pid's durable chain from head down to its base,
// calling visit (if set) on each frame, newest first, and returns the
// frames' addresses and sizes.
func (db *DB) readChain(pid pagetable.PID, head uint64, visit func(*delta.Frame)) (gc.Chain, error) {
	var chain gc.Chain
	for a := head; ; {
		fr, name, err := db.readFrame(a)
		if err != nil {
			return nil, err
		}
		if fr.PID != uint64(pid) {
			return nil, base.CorruptionErrorf(name, int64(a), "frame %d belongs to page %d, not %d", a, fr.PID, pid)
		}
		if fr.Blob != nil {
			return nil, &CorruptionError{File: name, Offset: int64(a), Reason: fmt.Sprintf("page %d's chain reaches blob frame %d", pid, a)}
		}
		db.hooks.runFrameRead(uint64(pid), a)
		ext := gc.Extent{Addr: a, Size: uint32(fr.Stored), Blobs: frameBlobs(fr)}
		chain = append(chain, ext)
		if visit != nil {
			// The page in memory holds its values: read the blobs.
			if err := fr.Materialize(func(r delta.BlobRef) ([]byte, error) { return db.readBlob(pid, r) }); err != nil {
				return nil, fmt.Errorf("bwkv: page %d frame %d in %s: %w", pid, a, name, err)
			}
			visit(fr)
		}
		if fr.Base != nil {
			return chain, nil
		}
		if fr.Link == 0 || fr.Link >= a {
			return nil, base.CorruptionErrorf(name, int64(a), "delta frame %d links to %d", a, fr.Link)
		}
		a = fr.Link
	}
}

// frameBlobs returns the blobs a decoded frame references, for its extent.
func frameBlobs(fr *delta.Frame) []gc.Blob {
	refs := fr.BlobRefs()
	if len(refs) == 0 {
		return nil
	}
	out := make([]gc.Blob, len(refs))
	for i, r := range refs {
		en := fr.EntryAt(r.Index)
		out[i] = gc.Blob{Addr: r.Ref.Addr, Size: uint32(r.Ref.FrameBytes()), Len: r.Ref.Len, CRC: r.Ref.CRC, ID: gc.VersionID(en.Key, en.TxID, en.Seq)}
	}
	return out
}

// readBlob reads the value of the blob r names, which page pid references:
// one read of the blob frame (through the bounded file handles), whose
// header must name the page and whose value must match r (length and CRC,
// checked by delta.Frame.Materialize). A mismatch is a *CorruptionError.
func (db *DB) readBlob(pid pagetable.PID, r delta.BlobRef) ([]byte, error) {
	fr, name, err := db.readFrame(r.Addr)
	if err != nil {
		return nil, err
	}
	if fr.Blob == nil || fr.PID != uint64(pid) {
		return nil, &CorruptionError{File: name, Offset: int64(r.Addr), Reason: fmt.Sprintf("page %d references frame %d, a %s frame of page %d, as a blob", pid, r.Addr, fr.Kind(), fr.PID)}
	}
	db.stats.blobReads.Add(1)
	return fr.Blob, nil
}

// readFrame reads the frame at address a from the data file the manifest
// maps it to, and returns it with the file's name. If a GC rewrite
// retired that file in between (the handle is refused, or the file is
// already unlinked), it re-reads the map, which then names the rewrite's
// output, and retries.
func (db *DB) readFrame(a uint64) (*delta.Frame, string, error) {
	for attempt := 0; ; attempt++ {
		id, ok := db.man.FileOf(a)
		if !ok {
			return nil, "", base.CorruptionErrorf(db.dir, int64(a), "no data file holds address %d", a)
		}
		h, err := db.files.Acquire(uint64(id))
		if err == nil {
			fr, err := h.File().ReadFrame(a)
			name := h.File().Name()
			db.files.Release(h)
			return fr, name, err
		}
		if attempt < readRetries && (errors.Is(err, pool.ErrRetired) || errors.Is(err, fs.ErrNotExist)) {
			if now, ok := db.man.FileOf(a); ok && now != id {
				continue
			}
		}
		return nil, "", err
	}
}

// openDataFile opens and validates data file id (pool.Files' opener).
func (db *DB) openDataFile(id uint64) (*pool.File, error) {
	name := db.dataPath(manifest.FileID(id))
	vf, err := db.fs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("bwkv: open data file %s: %w", name, err)
	}
	f, err := pool.OpenFile(vf, name)
	if err != nil {
		vf.Close()
		return nil, err
	}
	return f, nil
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
