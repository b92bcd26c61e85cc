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
	// Heat, if set, picks the hot pages, whose frames are stored plain
	// (heat.go); nil: every frame is compressed where that pays. Run
	// records each publish in it.
	Heat *Heat
	// Idle says the database is idle (the settle's checkpoint): no page
	// is hot, whatever Heat says.
	Idle bool
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
	// Hot counts the frames stored plain because their page is hot
	// (Env.Heat; with a Compressor only).
	Hot           int64
	File          manifest.FileID // 0: no data file (nothing to write)
	Frontier      uint64
	AnalysisStart uint64
	Duration      time.Duration
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

// Run writes and publishes the sealed generation g, in the order of the
// package doc: the log, the data file, one manifest commit, then the
// frames are marked durable and the log below analysisStart recycled.
func Run(e *Env, g *generation.Gen) (Result, error) {
	start := time.Now()
	res := Result{Frontier: g.Frontier}
	published := e.Gens.Published()

	// (1) Transactions whose outcome may not be durable, then the log.
	analysisStart, logSynced, err := syncLog(e, g)
	res.AnalysisStart = analysisStart
	if err != nil {
		return res, err
	}
	cold := e.Heat.ColdBelow(start)
	if e.Idle {
		cold = ^uint64(0)
	}
	gt := gather(e, g, published, cold)
	res.Frames, res.Hot = int64(len(gt.frames)), gt.hot
	res.Skipped = max(0, g.Frames()-res.Frames)
	edit := newEdit(e, g, analysisStart, logSynced)
	if len(gt.frames) > 0 {
		if e.Writing != nil {
			defer e.Writing.Store(0) // the file is named by the commit below, or abandoned
		}
		// (2) and (3).
		if err := writeData(e, g, published, gt, edit, &res); err != nil {
			return res, err
		}
	}
	for _, p := range gt.pages {
		edit.SetPages = append(edit.SetPages, manifest.PageEntry{PID: uint64(p.pid), Addr: p.head})
	}
	for _, pid := range gt.removed {
		if _, ok := e.Manifest.Page(pid); ok {
			edit.RemovePages = append(edit.RemovePages, pid)
		}
	}
	// (4) One manifest commit publishes the checkpoint, with the junk
	// accounting in the same edit (docs/crash-safety.md).
	if err := commit(e, gt, edit, &res); err != nil {
		return res, err
	}
	// (5) The frames are durable.
	// An error here (only a failpoint makes one) is reported after the
	// publish: the manifest already names the frames, and an unpublished
	// generation would be published again.
	ferr := failpoints.Hit(failpoints.CheckpointMarkDurable)
	e.Gens.Publish(g)
	e.Heat.Published(time.Now(), g.SnapAddr)
	e.Heat.wrote(gt.hotPages, gt.coldBases, gt.removed)
	clearCarried(e, gt)
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

// syncLog is step (1): it bounds the analysis start by the transactions
// whose outcome may not be durable, then fsyncs the log through its head.
// logSynced is the durable log position the manifest records: a log that
// later ends, or is damaged, below it lost bytes that were durable (wal
// package doc).
func syncLog(e *Env, g *generation.Gen) (analysisStart, logSynced uint64, err error) {
	analysisStart = g.Frontier
	if first, ok := e.OldestActive(); ok && first < analysisStart {
		analysisStart = first
	}
	err = failpoints.Hit(failpoints.CheckpointWALSync)
	if err == nil && !failpoints.Skip(failpoints.MutCheckpointNoWALSync) {
		err = e.WAL.Sync(e.WAL.Head())
	}
	if err != nil {
		return analysisStart, 0, fmt.Errorf("%w: %w", ErrLogSync, err)
	}
	return analysisStart, uint64(e.WAL.DurableLSN()), nil
}

// gathered is what a publish writes: the sealed states' unwritten frames
// (unsorted until gather returns), the pages whose head moves, the pages
// removed, and, for the Ledger, one change per page with its frames.
type gathered struct {
	frames  []*delta.Frame
	pages   []pageFrames
	removed []uint64
	changes []gc.Change
	written [][]*delta.Frame // per change: the frames written (unsorted)
	bl      *blobs
	// cold: a page whose durable head is at or below it is cold
	// (Heat.ColdBelow); hot counts the frames of the others, stored plain.
	cold uint64
	hot  int64
	// hotPages wrote frames plain; coldBases wrote a base cold (Heat).
	hotPages, coldBases []uint64
}

// gather walks the sealed generation's dirty pages: for each, its state at
// the cut (the pinned state if it changed since), and of that state the
// frames above the last published address, newest first, each linked to
// its next-older frame (INV-C2, package doc). The frames come back in
// ascending address order.
func gather(e *Env, g *generation.Gen, published, cold uint64) *gathered {
	gt := &gathered{bl: newBlobs(e), cold: cold}
	for _, pid := range g.Dirty() {
		st := e.Table.Load(pid)
		if pin, ok := g.Pinned(pid); ok {
			st = pin
		}
		if st == nil {
			continue // never loaded, never changed: nothing to write
		}
		if st.Removed {
			gt.removed = append(gt.removed, uint64(pid))
			gt.changes = append(gt.changes, gc.Change{PID: uint64(pid), Removed: true})
			gt.written = append(gt.written, nil)
			continue
		}
		if failpoints.Skip(failpoints.MutCheckpointDropPage) {
			continue
		}
		gt.page(e, pid, st, published)
	}
	slices.SortFunc(gt.frames, func(a, b *delta.Frame) int { return cmp.Compare(a.Addr, b.Addr) })
	return gt
}

// page gathers the unwritten frames of one page's sealed state st.
func (gt *gathered) page(e *Env, pid pagetable.PID, st *node.Page, published uint64) {
	head := st.Base.Addr
	if st.Head != nil {
		head = st.Head.Addr
	}
	n := len(gt.frames)
	d := st.Head
	for ; d != nil && d.Addr > published; d = d.Next {
		link := st.Base.Addr
		if d.Next != nil {
			link = d.Next.Addr
		}
		gt.frames = append(gt.frames, &delta.Frame{Addr: d.Addr, PID: uint64(pid), LSN: d.LSN, Link: link, Delta: d})
	}
	// keep: the newest already-durable frame the state reaches.
	keep := st.Base.Addr
	if d != nil {
		keep = d.Addr
	} else if c := st.Base.Carry(); c != nil && st.Base.Addr > published {
		// A carried base is never written: its absorbed deltas not
		// durable yet are, down to the durable frame below them.
		keep = gt.carried(pid, c, published)
	} else if st.Base.Addr > published {
		keep = 0
		gt.frames = append(gt.frames, &delta.Frame{Addr: st.Base.Addr, PID: uint64(pid), Base: st.Base})
	}
	gt.bl.page(uint64(pid), gt.frames[n:])
	if len(gt.frames) > n && e.Heat != nil && e.Compressor != nil && e.Compressor.Codec() != delta.CodecNone {
		if gt.isHot(e, pid) {
			for _, fr := range gt.frames[n:] {
				fr.Plain = true
			}
			gt.hot += int64(len(gt.frames) - n)
			gt.hotPages = append(gt.hotPages, uint64(pid))
		} else if keep == 0 {
			gt.coldBases = append(gt.coldBases, uint64(pid)) // a new base: no older frame stays reachable
		}
	}
	if len(gt.frames) > n || head > published {
		gt.pages = append(gt.pages, pageFrames{pid, head})
		if e.Ledger != nil {
			gt.changes = append(gt.changes, gc.Change{PID: uint64(pid), Keep: keep})
			gt.written = append(gt.written, slices.Clone(gt.frames[n:]))
		}
	}
}

// carried gathers the pending deltas of a carried base (delta.Carry)
// above published, the newest at the base's address, each linked to the
// next older, and returns the durable frame the oldest links to.
func (gt *gathered) carried(pid pagetable.PID, c *delta.Carry, published uint64) (keep uint64) {
	ds, keep := c.Unwritten(published)
	for i, d := range ds {
		link := keep
		if i+1 < len(ds) {
			link = ds[i+1].Addr
		}
		gt.frames = append(gt.frames, &delta.Frame{Addr: d.Addr, PID: uint64(pid), LSN: d.LSN, Link: link, Delta: d})
	}
	return keep
}

// clearCarried drops the pending deltas of the written pages' carried
// bases that are durable now (delta.Carry.Clear), after the publish: a
// resident base keeps no values a checkpoint wrote. A base carried
// between the publish and this pass keeps its pending deltas until the
// page's next consolidation, eviction or the idle settle's squash.
// O(pages written).
func clearCarried(e *Env, gt *gathered) {
	pub := e.Gens.Published()
	for _, p := range gt.pages {
		st := e.Table.Load(p.pid)
		if st == nil || st.Base == nil {
			continue
		}
		if c := st.Base.Carry(); c != nil && st.Base.Addr <= pub && c.Pending() != nil {
			c.Clear()
		}
	}
}

// isHot reports whether pid is a hot page (Heat): its durable head is
// newer than gt.cold. Only with a Compressor and a Ledger, which knows
// the durable heads; a page the Ledger does not know is cold.
func (gt *gathered) isHot(e *Env, pid pagetable.PID) bool {
	if e.Ledger == nil || gt.cold == ^uint64(0) {
		return false
	}
	ch, ok := e.Ledger.Stored(uint64(pid))
	return ok && ch.Head() > gt.cold
}

// newEdit returns the publish's manifest edit before its files and pages:
// counters, frontier, analysis start, the synced log position and, in the
// first checkpoint, the format.
func newEdit(e *Env, g *generation.Gen, analysisStart, logSynced uint64) *manifest.Edit {
	edit := &manifest.Edit{
		Has:           manifest.HasNextPID | manifest.HasNextAddr | manifest.HasOracle | manifest.HasFrontier | manifest.HasAnalysisStart | manifest.HasLogSynced,
		LogSynced:     logSynced,
		NextPID:       uint64(e.Table.Next()),
		NextAddr:      g.SnapAddr + 1,
		Oracle:        e.Oracle(),
		Frontier:      g.Frontier,
		AnalysisStart: analysisStart,
	}
	// Point lookups in the live manifest state: the checkpointer is its
	// only committer, and a copy would cost O(pages) per publish.
	if _, formatVersion := e.Manifest.Counters(); formatVersion == 0 {
		edit.Has |= manifest.HasFormatVersion | manifest.HasOptions
		edit.FormatVersion = manifest.FormatVersion
		edit.Options = e.Format
	}
	return edit
}

// writeData is steps (2) and (3): it records the new data file's id in
// the manifest, writes the gathered frames and the new blobs into it and
// syncs it, and adds the file and its address ranges to edit. A failure
// abandons the attempt (the partial file is removed, best effort).
func writeData(e *Env, g *generation.Gen, published uint64, gt *gathered, edit *manifest.Edit, res *Result) error {
	// (2) Record the file id, then create the file.
	id, _ := e.Manifest.Counters()
	err := failpoints.Hit(failpoints.CheckpointFileID)
	if err == nil {
		err = e.Manifest.Commit(&manifest.Edit{Has: manifest.HasNextFileID, NextFileID: id + 1})
	}
	if err != nil {
		return fmt.Errorf("checkpoint: reserve file id: %w", err)
	}
	if e.Writing != nil {
		e.Writing.Store(uint64(id))
	}
	// The new blobs get their addresses from the file id; their frames
	// follow the page frames (blob addresses are above every other).
	blobFrames, err := gt.bl.place(id)
	if err != nil {
		return err
	}
	res.Blobs, res.BlobBytes, res.BlobsReused = int64(len(blobFrames)), gt.bl.bytes, gt.bl.reused
	frames := append(gt.frames, blobFrames...)
	for i := range gt.changes {
		if !gt.changes[i].Removed {
			gt.changes[i].Written = extents(gt.written[i])
		}
	}
	// (3) Frames, footer, fsync of the file and the directory.
	info, stored, err := writeFile(e, id, frames)
	if err != nil {
		// Abandoned: remove the partial file (best effort; Open
		// removes any data file the manifest does not name).
		_ = e.FS.Remove(filepath.Join(e.Dir, DataFileName(id)))
		return err
	}
	res.File, res.Bytes = id, info.Size
	// The ledger charges what the frames take on disk: a compressed
	// frame's stored bytes, not its plain size.
	for _, ch := range gt.changes {
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
	return nil
}

// commit is step (4): with a Ledger, the junk accounting of the changes
// joins the edit; one manifest commit publishes it, and the Ledger then
// learns the new chains.
func commit(e *Env, gt *gathered, edit *manifest.Edit, res *Result) error {
	var plan *gc.Plan
	if e.Ledger != nil {
		plan = e.Ledger.Plan(gt.changes, e.Manifest)
		edit.FileStats = plan.FileStats
		res.Junk = plan.Junk
	}
	err := failpoints.Hit(failpoints.CheckpointManifestWrite)
	if err == nil {
		err = e.Manifest.Commit(edit)
	}
	if err != nil {
		// The file stays: a commit whose fsync failed may still be
		// durable, and then the manifest names it. Open sorts it out.
		return fmt.Errorf("checkpoint: manifest commit: %w", err)
	}
	if plan != nil {
		e.Ledger.Apply(plan)
	}
	return nil
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
	var frameBytes int64
	for _, fr := range frames {
		frameBytes += int64(fr.Size())
	}
	if err := w.Reserve(frameBytes, len(frames)); err != nil {
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
