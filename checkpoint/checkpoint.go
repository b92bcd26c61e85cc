package checkpoint

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/failpoints"
	"github.com/bwkv/bwkv/gc"
	"github.com/bwkv/bwkv/generation"
	"github.com/bwkv/bwkv/manifest"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
	"github.com/bwkv/bwkv/pool"
	"github.com/bwkv/bwkv/vfs"
	"github.com/bwkv/bwkv/wal"
)

// ErrLogSync wraps a failure of the log fsync in step 1: the caller must
// degrade the database.
var ErrLogSync = errors.New("checkpoint: log sync failed")

// Env is what the checkpointer needs of the engine.
type Env struct {
	FS       vfs.FS
	Dir      string
	Table    *pagetable.Table[node.Page]
	Gens     *generation.Manager
	WAL      *wal.Writer
	Manifest *manifest.Manifest
	// OldestActive returns the first LSN of every transaction whose commit
	// or end record may not be durable yet (false: none). It is called
	// before the log sync.
	OldestActive func() (uint64, bool)
	// Oracle returns the timestamp oracle's current value.
	Oracle func() uint64
	// Format is recorded in the first checkpoint's manifest commit.
	Format manifest.FormatOptions
	// Writing, if set, holds the id of the data file being written while
	// it is not yet published (Check does not call it an orphan).
	Writing *atomic.Uint64
	// Ledger, if set, turns the publish into junk accounting: the edit
	// carries the files' new live bytes (docs/crash-safety.md).
	Ledger *gc.Ledger
	// Compressor, if set, encodes the frames (nil: plain). Run is its
	// only user while it runs.
	Compressor *delta.Compressor
	// BlobThreshold, if positive, is the value size from which an entry
	// of a leaf frame is written as a reference to a blob frame (see
	// blobs.go); 0 or less: every value stays in its frame.
	BlobThreshold int
}

// Result describes one published checkpoint.
type Result struct {
	Frames, Skipped int64
	Bytes           int64
	// Junk is the durable frame bytes the publish made junk (with a
	// Ledger).
	Junk int64
	// Blobs and BlobBytes count the blob frames written (BlobBytes their
	// encoded bytes, included in Bytes); BlobsReused the references to
	// blobs already durable that the written frames carry instead.
	Blobs, BlobBytes, BlobsReused int64
	File                          manifest.FileID // 0: no data file (nothing to write)
	Frontier                      uint64
	AnalysisStart                 uint64
	Duration                      time.Duration
}

// DataFileName returns the name of data file id inside the DB directory.
func DataFileName(id manifest.FileID) string { return fmt.Sprintf("%06d.data", uint64(id)) }

// ParseDataFileName returns the id of a data file name.
func ParseDataFileName(name string) (manifest.FileID, bool) {
	var id uint64
	if n, err := fmt.Sscanf(name, "%06d.data", &id); n != 1 || err != nil || DataFileName(manifest.FileID(id)) != name {
		return 0, false
	}
	return manifest.FileID(id), true
}

type pageFrames struct {
	pid  pagetable.PID
	head uint64
}

// Run writes and publishes the sealed generation g.
func Run(e *Env, g *generation.Gen) (Result, error) {
	start := time.Now()
	res := Result{Frontier: g.Frontier}
	published := e.Gens.Published()

	// (1) Transactions whose outcome may not be durable, then the log.
	analysisStart := g.Frontier
	if first, ok := e.OldestActive(); ok && first < analysisStart {
		analysisStart = first
	}
	res.AnalysisStart = analysisStart
	err := failpoints.Hit(failpoints.CheckpointWALSync)
	if err == nil && !failpoints.Skip(failpoints.MutCheckpointNoWALSync) {
		err = e.WAL.Sync(e.WAL.Head())
	}
	if err != nil {
		return res, fmt.Errorf("%w: %w", ErrLogSync, err)
	}
	// Recorded in the manifest: a log that later ends, or is damaged,
	// below this LSN lost bytes that were durable (wal package doc).
	logSynced := uint64(e.WAL.DurableLSN())

	// Gather the sealed states' unwritten frames.
	var frames []*delta.Frame
	var pages []pageFrames
	var removed []uint64
	var changes []gc.Change      // for the Ledger
	var written [][]*delta.Frame // per change: the frames written (unsorted)
	bl := newBlobs(e)
	for _, pid := range g.Dirty() {
		st := e.Table.Load(pid)
		if pin, ok := g.Pinned(pid); ok {
			st = pin
		}
		if st == nil {
			continue // never loaded, never changed: nothing to write
		}
		if st.Removed {
			removed = append(removed, uint64(pid))
			changes = append(changes, gc.Change{PID: uint64(pid), Removed: true})
			written = append(written, nil)
			continue
		}
		if failpoints.Skip(failpoints.MutCheckpointDropPage) {
			continue
		}
		head := st.Base.Addr
		if st.Head != nil {
			head = st.Head.Addr
		}
		n := len(frames)
		d := st.Head
		for ; d != nil && d.Addr > published; d = d.Next {
			link := st.Base.Addr
			if d.Next != nil {
				link = d.Next.Addr
			}
			frames = append(frames, &delta.Frame{Addr: d.Addr, PID: uint64(pid), LSN: d.LSN, Link: link, Delta: d})
		}
		// keep: the newest already-durable frame the state reaches.
		keep := st.Base.Addr
		if d != nil {
			keep = d.Addr
		} else if st.Base.Addr > published {
			keep = 0
			frames = append(frames, &delta.Frame{Addr: st.Base.Addr, PID: uint64(pid), Base: st.Base})
		}
		bl.page(uint64(pid), frames[n:])
		if len(frames) > n || head > published {
			pages = append(pages, pageFrames{pid, head})
			if e.Ledger != nil {
				changes = append(changes, gc.Change{PID: uint64(pid), Keep: keep})
				written = append(written, slices.Clone(frames[n:]))
			}
		}
	}
	slices.SortFunc(frames, func(a, b *delta.Frame) int { return cmp.Compare(a.Addr, b.Addr) })
	res.Frames = int64(len(frames))
	res.Skipped = max(0, g.Frames()-res.Frames)

	// Point lookups in the live manifest state: the checkpointer is its
	// only committer, and a copy would cost O(pages) per publish.
	nextFile, formatVersion := e.Manifest.Counters()
	edit := &manifest.Edit{
		Has:           manifest.HasNextPID | manifest.HasNextAddr | manifest.HasOracle | manifest.HasFrontier | manifest.HasAnalysisStart | manifest.HasLogSynced,
		LogSynced:     logSynced,
		NextPID:       uint64(e.Table.Next()),
		NextAddr:      g.SnapAddr + 1,
		Oracle:        e.Oracle(),
		Frontier:      g.Frontier,
		AnalysisStart: analysisStart,
	}
	if formatVersion == 0 {
		edit.Has |= manifest.HasFormatVersion | manifest.HasOptions
		edit.FormatVersion = manifest.FormatVersion
		edit.Options = e.Format
	}
	if len(frames) > 0 {
		// (2) Record the file id, then create the file.
		id := nextFile
		err := failpoints.Hit(failpoints.CheckpointFileID)
		if err == nil {
			err = e.Manifest.Commit(&manifest.Edit{Has: manifest.HasNextFileID, NextFileID: id + 1})
		}
		if err != nil {
			return res, fmt.Errorf("checkpoint: reserve file id: %w", err)
		}
		if e.Writing != nil {
			e.Writing.Store(uint64(id))
			defer e.Writing.Store(0)
		}
		// The new blobs get their addresses from the file id; their
		// frames follow the page frames (blob addresses are above
		// every other).
		blobFrames, err := bl.place(id)
		if err != nil {
			return res, err
		}
		res.Blobs, res.BlobBytes, res.BlobsReused = int64(len(blobFrames)), bl.bytes, bl.reused
		frames = append(frames, blobFrames...)
		for i := range changes {
			if !changes[i].Removed {
				changes[i].Written = extents(written[i])
			}
		}
		info, stored, err := writeFile(e, id, frames)
		if err != nil {
			// Abandoned: remove the partial file (best effort; Open
			// removes any data file the manifest does not name).
			_ = e.FS.Remove(filepath.Join(e.Dir, DataFileName(id)))
			return res, err
		}
		res.File, res.Bytes = id, info.Size
		// The ledger charges what the frames take on disk: a compressed
		// frame's stored bytes, not its plain size.
		for _, ch := range changes {
			for i := range ch.Written {
				if n, ok := stored(ch.Written[i].Addr); ok {
					ch.Written[i].Size = uint32(n)
				}
			}
		}
		// Accounting counts frame bytes: a file whose frames are all junk
		// has nothing live (its table and footer are overhead).
		edit.AddFiles = []manifest.FileMeta{{ID: id, Total: info.FrameBytes, Live: info.FrameBytes}}
		edit.AddRanges = []manifest.Range{{Lo: published + 1, Hi: g.SnapAddr + 1, File: id}}
		if n := len(blobFrames); n > 0 {
			edit.AddRanges = append(edit.AddRanges, manifest.Range{Lo: manifest.BlobAddr(id, 0), Hi: manifest.BlobAddr(id, uint64(n)), File: id})
		}
	}
	for _, p := range pages {
		edit.SetPages = append(edit.SetPages, manifest.PageEntry{PID: uint64(p.pid), Addr: p.head})
	}
	for _, pid := range removed {
		if _, ok := e.Manifest.Page(pid); ok {
			edit.RemovePages = append(edit.RemovePages, pid)
		}
	}
	// Junk accounting goes into the same edit (docs/crash-safety.md).
	var plan *gc.Plan
	if e.Ledger != nil {
		plan = e.Ledger.Plan(changes, e.Manifest)
		edit.FileStats = plan.FileStats
		res.Junk = plan.Junk
	}
	// (4) One manifest commit publishes the checkpoint.
	err = failpoints.Hit(failpoints.CheckpointManifestWrite)
	if err == nil {
		err = e.Manifest.Commit(edit)
	}
	if err != nil {
		// The file stays: a commit whose fsync failed may still be
		// durable, and then the manifest names it. Open sorts it out.
		return res, fmt.Errorf("checkpoint: manifest commit: %w", err)
	}
	if plan != nil {
		e.Ledger.Apply(plan)
	}
	// (5) The frames are durable.
	// An error here (only a failpoint makes one) is reported after the
	// publish: the manifest already names the frames, and an unpublished
	// generation would be published again.
	ferr := failpoints.Hit(failpoints.CheckpointMarkDurable)
	e.Gens.Publish(g)
	if ferr != nil {
		return res, fmt.Errorf("checkpoint: mark durable: %w", ferr)
	}
	// (6) Recycle the log below analysisStart.
	err = failpoints.Hit(failpoints.CheckpointRecycle)
	if err == nil {
		err = e.WAL.Recycle(wal.LSN(analysisStart))
	}
	if err != nil {
		return res, fmt.Errorf("checkpoint: recycle log: %w", err)
	}
	res.Duration = time.Since(start)
	return res, nil
}

// writeFile is step (3): frames, footer, fsync of the file and directory.
// stored returns the bytes a written frame takes in the file.
func writeFile(e *Env, id manifest.FileID, frames []*delta.Frame) (info pool.FileInfo, stored func(addr uint64) (int, bool), err error) {
	info, w, err := writeFrames(e, id, frames)
	if err != nil {
		return info, nil, err
	}
	return info, w.Stored, nil
}

func writeFrames(e *Env, id manifest.FileID, frames []*delta.Frame) (pool.FileInfo, *pool.FileWriter, error) {
	name := filepath.Join(e.Dir, DataFileName(id))
	f, err := e.FS.Create(name)
	if err != nil {
		return pool.FileInfo{}, nil, fmt.Errorf("checkpoint: create %s: %w", name, err)
	}
	defer f.Close()
	w := pool.NewFileWriter(f).Compress(e.Compressor)
	if err := failpoints.Hit(failpoints.CheckpointDataWrite); err != nil {
		return pool.FileInfo{}, nil, fmt.Errorf("checkpoint: write %s: %w", name, err)
	}
	for _, fr := range frames {
		if err := w.Add(fr); err != nil {
			return pool.FileInfo{}, nil, fmt.Errorf("checkpoint: write %s: %w", name, err)
		}
	}
	info, err := w.Finish()
	if err != nil {
		return pool.FileInfo{}, nil, fmt.Errorf("checkpoint: write %s: %w", name, err)
	}
	err = failpoints.Hit(failpoints.CheckpointDataSync)
	if err == nil && !failpoints.Skip(failpoints.MutCheckpointNoDataSync) {
		err = f.Sync()
	}
	if err != nil {
		return pool.FileInfo{}, nil, fmt.Errorf("checkpoint: sync %s: %w: %w", name, pool.ErrSync, err)
	}
	err = failpoints.Hit(failpoints.CheckpointDirSync)
	if err == nil {
		err = e.FS.SyncDir(e.Dir)
	}
	if err != nil {
		return pool.FileInfo{}, nil, fmt.Errorf("checkpoint: sync dir %s: %w: %w", e.Dir, pool.ErrSync, err)
	}
	return info, w, nil
}

// extents returns the frames' addresses and plain encoded sizes, in
// order (Run replaces the sizes by the stored ones once written), with the
// blobs each references.
func extents(frames []*delta.Frame) gc.Chain {
	c := make(gc.Chain, len(frames))
	for i, fr := range frames {
		c[i] = gc.Extent{Addr: fr.Addr, Size: uint32(fr.Size()), Blobs: blobsOf(fr)}
	}
	return c
}
