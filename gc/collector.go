package gc

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/failpoints"
	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/manifest"
	"github.com/bwkv/bwkv/pool"
	"github.com/bwkv/bwkv/vfs"
)

// Files is the engine's data-file cache, as the collector needs it.
type Files interface {
	// Frames returns the frames of file id, ascending by address, with
	// their page IDs and lengths as the file's relocation table records
	// them; PID 0 where the table records none (a version 1 data file).
	Frames(id manifest.FileID) ([]pool.PageFrame, error)
	// ReadRaw appends the verified encoded bytes of the frame at addr in
	// file id to dst (pool.File.ReadRaw).
	ReadRaw(id manifest.FileID, addr uint64, dst []byte) ([]byte, delta.FrameHeader, error)
	// Retire stops handing out file id to new readers and returns a
	// channel closed once no reader holds it (the file is then closed).
	Retire(id manifest.FileID) <-chan struct{}
	// Deleted says file id is unlinked: its retirement can be forgotten.
	Deleted(id manifest.FileID)
}

// Env is what the collector needs of the engine.
type Env struct {
	FS       vfs.FS
	Dir      string
	Manifest *manifest.Manifest
	Ledger   *Ledger
	Files    Files
	// Path returns the path of data file id.
	Path func(manifest.FileID) string
	// Writing, if set, holds the id of the file a rewrite is writing
	// while it is staged and not yet registered (Check does not call it
	// an orphan).
	Writing *atomic.Uint64
	// Stop, when closed, ends a round between rewrites.
	Stop <-chan struct{}
	// Yield, if set, is asked between rewrites whether to end the round
	// early (more work is then reported): the engine's checkpoint is due.
	Yield func() bool
	// DrainWait bounds how long a deletion waits for the readers of a
	// retired file; the deletion is retried next round after that.
	DrainWait time.Duration
	// Compressor, if set, encodes the consolidated base frames (the
	// engine's codec); nil writes them plain. Used by the collector only.
	Compressor *delta.Compressor
	// NoConsolidate (tests) copies every live frame as it is.
	NoConsolidate bool
	// LoadRoot, if set, returns the address below the page's durable
	// head from which a state of pid in memory would read its chain (a
	// stub whose chain holds deltas published since it was made reads
	// from its base's address), if any. A consolidation keeps that
	// frame: its top is at or below it. Such roots only move up between
	// publishes, so one read during a round holds for the round.
	LoadRoot func(pid uint64) (uint64, bool)
	// Verify (tests) cross-checks the bookkeeping at every rewrite: each
	// stored chain against the chain read from disk, and each victim's
	// accounted live bytes against the live bytes the liveness check
	// measured. A mismatch fails the round.
	Verify bool
}

// Stats are the collector's counters since Open. Safe to read
// concurrently with a round.
type Stats struct {
	// Rounds counts collection rounds; Rewrites counts output files.
	Rounds, Rewrites uint64
	// FilesRewritten counts victims whose live frames were copied;
	// FilesRetired victims retired with nothing live; FilesDeleted
	// retired files unlinked.
	FilesRewritten, FilesRetired, FilesDeleted uint64
	// BytesRead are victim bytes read; BytesWritten bytes of output
	// files; BytesDeleted bytes of the files unlinked. BytesDeleted minus
	// BytesWritten is the space reclaimed.
	BytesRead, BytesWritten, BytesDeleted uint64
	// DataBytes and LiveBytes are the registered data files' total and
	// live frame bytes as the manifest accounts them (after the last
	// round or publish).
	DataBytes, LiveBytes int64
	// PagesConsolidated counts chains a rewrite replaced by one base
	// frame, FramesConsolidated the frames those chains held;
	// ConsolidateErrors chains that could not be read or merged (copied
	// as they were).
	PagesConsolidated, FramesConsolidated, ConsolidateErrors uint64
}

// Collector runs collection rounds. A round must not run concurrently
// with another round or with any other manifest commit (the engine runs
// both in its one checkpointer goroutine), so the manifest state it reads
// at the start stays the durable state throughout.
type Collector struct {
	env    *Env
	policy Policy
	// skip holds victims whose frames could not be read (corruption):
	// they are not chosen again in this process. Checkpointer goroutine
	// only.
	skip map[manifest.FileID]bool
	// unrecorded holds retired files already unlinked whose deletion no
	// commit has recorded yet: the collector's next commit carries them
	// (DeletedFiles), saving a commit and its fsync per round.
	// Checkpointer goroutine only.
	unrecorded []manifest.FileID

	// comp is Env.Compressor.
	comp *delta.Compressor

	rounds, rewrites, rewritten, retired, deleted atomic.Uint64
	read, written, deletedBytes                   atomic.Uint64
	dataBytes, liveBytes                          atomic.Int64
	merged, mergedFrames, mergeErrors             atomic.Uint64
}

// New returns a collector with policy p.
func New(env *Env, p Policy) *Collector {
	return &Collector{env: env, policy: p, skip: map[manifest.FileID]bool{}, comp: env.Compressor}
}

// Stats returns the counters.
func (c *Collector) Stats() Stats {
	return Stats{
		Rounds: c.rounds.Load(), Rewrites: c.rewrites.Load(),
		FilesRewritten: c.rewritten.Load(), FilesRetired: c.retired.Load(), FilesDeleted: c.deleted.Load(),
		BytesRead: c.read.Load(), BytesWritten: c.written.Load(), BytesDeleted: c.deletedBytes.Load(),
		DataBytes: c.dataBytes.Load(), LiveBytes: c.liveBytes.Load(),
		PagesConsolidated: c.merged.Load(), FramesConsolidated: c.mergedFrames.Load(), ConsolidateErrors: c.mergeErrors.Load(),
	}
}

// observe records the accounting totals of files.
func (c *Collector) observe(files []manifest.FileMeta) {
	var total, live int64
	for _, f := range files {
		total += f.Total
		live += f.Live
	}
	c.dataBytes.Store(total)
	c.liveBytes.Store(live)
}

// Round runs one collection round: it clears a stage mark a crash left,
// finishes pending deletions, then collects the victims the policy
// chooses, one rewrite per batch: by the policy as given when settle is
// set (an idle database, an explicit checkpoint), else by Policy.Busy.
// more reports that work remains (the byte budget ran out, or a retired
// file still had readers, or the policy still finds victims). An error
// leaves the database consistent: every step is crash safe, so a failed
// one is a crash the next round (or Open) recovers from.
func (c *Collector) Round(settle bool) (more bool, err error) {
	c.rounds.Add(1)
	policy := c.policy
	if !settle {
		policy = policy.Busy()
	}
	// The round reads the live manifest state by point lookups (it is
	// the only committer meanwhile): its cost follows the files and
	// frames it handles, never the page count.
	files, pending, stage := c.env.Manifest.Files()
	c.observe(files)
	victims := Choose(files, policy, func(id manifest.FileID) bool { return c.skip[id] })
	if stage == manifest.NoFile && len(pending) == len(c.unrecorded) && len(victims) == 0 {
		return false, nil
	}
	st := c.env.Manifest
	defer func() {
		files, _, _ := st.Files()
		c.observe(files)
	}()
	if stage != manifest.NoFile {
		if err := c.clearStage(stage); err != nil {
			return false, err
		}
	}
	if len(pending) > len(c.unrecorded) {
		var ids []manifest.FileID
		for _, id := range pending { // sorted by Files
			if !slices.Contains(c.unrecorded, id) {
				ids = append(ids, id)
			}
		}
		left, err := c.deleteFiles(ids)
		if err != nil {
			return false, err
		}
		more = left > 0
	}
	for i, batch := range Batches(victims, policy) {
		select {
		case <-c.env.Stop:
			return true, nil
		default:
		}
		if i > 0 && c.env.Yield != nil && c.env.Yield() {
			return true, nil
		}
		left, err := c.collect(st, batch)
		if err != nil {
			return more, err
		}
		more = more || left > 0
	}
	// Another round is due while the policy still finds victims: the
	// budget may have ended this one before a victim that did not fit,
	// and a consolidating rewrite charges the superseded frames of its
	// pages to files that were not victims, so the space amplification
	// can still be above SpaceAmp. Each rewrite only removes frames, so
	// the rounds converge.
	if !more && len(victims) > 0 {
		files, _, _ := st.Files()
		more = len(Choose(files, policy, func(id manifest.FileID) bool { return c.skip[id] })) > 0
	}
	return more, nil
}

// commit makes e durable, with the unlinked files' deletions.
func (c *Collector) commit(e *manifest.Edit) error {
	e.DeletedFiles = c.unrecorded
	if err := c.env.Manifest.Commit(e); err != nil {
		return err
	}
	for _, id := range c.unrecorded {
		c.env.Files.Deleted(id)
	}
	c.unrecorded = nil
	return nil
}

// clearStage clears the stage mark of a file that was never registered (a
// crash or failure between the stage mark and the remap commit), then
// removes the file. The commit comes first: if the remap commit's outcome
// is in doubt (its fsync failed), the manifest refuses every later commit
// and the file must stay, since the next Open may find it registered. A
// crash after the commit leaves a file no manifest names, which Open
// deletes.
func (c *Collector) clearStage(id manifest.FileID) error {
	if err := c.commit(&manifest.Edit{Has: manifest.HasStageFile, StageFile: manifest.NoFile}); err != nil {
		return fmt.Errorf("gc: clear stage mark: %w", err)
	}
	if c.env.Writing != nil {
		c.env.Writing.Store(0)
	}
	if err := c.env.FS.Remove(c.env.Path(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("gc: remove staged file %d: %w", id, err)
	}
	return nil
}

// frameAt is one victim frame.
type frameAt struct {
	addr uint64
	file manifest.FileID
	// merge, if set, is the consolidation whose base the rewrite writes
	// at addr instead of the frame.
	merge *merge
}

// liveness decides, definitively, which frames of the victims are live: a
// frame is live iff its page has a head in st and the chain from that
// head reaches it. A page whose chain cannot be read keeps all its frames
// (copying junk is harmless; dropping a live frame is not). A victim
// frame that cannot be read fails the batch. chains are the read chains
// of the pages with a live victim frame that is not a blob.
func (c *Collector) liveness(st View, victims []manifest.FileMeta) (live []frameAt, chains map[uint64]Chain, liveBytes int64, err error) {
	all, err := c.victimFrames(victims)
	if err != nil {
		return nil, nil, 0, err
	}
	type known struct {
		chain Chain
		ok    bool
		// blobs: the chain's blobs, once a blob frame asks (blobsKnown).
		blobs      addrSet
		blobsKnown bool
	}
	pages := map[uint64]*known{}
	measured := map[manifest.FileID]int64{}
	var buf []byte
	for _, f := range all {
		// The relocation table says whose frame it is (checksummed with
		// the table; the copy verifies the frame itself), so no frame is
		// read to decide liveness. A version 1 file's table does not: read
		// the frame (verified) for its header.
		pid, n := f.pid, f.n
		if pid == 0 {
			var fr delta.FrameHeader
			var err error
			buf, fr, err = c.env.Files.ReadRaw(f.file, f.addr, buf[:0])
			if err != nil {
				return nil, nil, 0, &victimError{file: f.file, err: err}
			}
			pid, n = fr.PID, fr.Len
		}
		blob := manifest.IsBlobAddr(f.addr)
		head, ok := st.Page(pid)
		if !ok || (!blob && head < f.addr) {
			continue // page removed, or the frame is newer than its head: never reached
		}
		k, seen := pages[pid]
		if !seen {
			if c.env.Verify {
				if err := c.env.Ledger.verify(pid, head); err != nil {
					return nil, nil, 0, err
				}
			}
			ch, err := c.env.Ledger.Chain(pid, head)
			k = &known{chain: ch, ok: err == nil}
			pages[pid] = k
		}
		var reached bool
		if blob {
			// A blob is live iff its page's chain references it.
			if !k.blobsKnown {
				k.blobs, k.blobsKnown = blobAddrs(k.chain), true
			}
			reached = k.blobs.has(f.addr)
		} else {
			reached = k.chain.Contains(f.addr)
		}
		if !k.ok || reached {
			live = append(live, f.frameAt)
			liveBytes += int64(n)
			measured[f.file] += int64(n)
		}
		if k.ok && reached && !blob {
			if chains == nil {
				chains = map[uint64]Chain{}
			}
			chains[pid] = k.chain
		}
	}
	if c.env.Verify {
		for _, v := range victims {
			if measured[v.ID] != v.Live {
				return nil, nil, 0, fmt.Errorf("gc: verify: file %d accounts %d live bytes, the liveness check finds %d", v.ID, v.Live, measured[v.ID])
			}
		}
	}
	return live, chains, liveBytes, nil
}

// victimFrame is one frame of a victim file, as its relocation table
// lists it.
type victimFrame struct {
	frameAt
	pid uint64 // 0: unknown, read the frame's header
	n   int
}

// victimFrames lists the victims' frames in address order. Each file's
// table is in address order already, so the lists are merged (a heap of
// the files' next frames: O(frames log victims)) rather than sorted.
func (c *Collector) victimFrames(victims []manifest.FileMeta) ([]victimFrame, error) {
	lists := make([][]pool.PageFrame, 0, len(victims))
	total := 0
	for _, v := range victims {
		frames, err := c.env.Files.Frames(v.ID)
		if err != nil {
			return nil, fmt.Errorf("gc: list frames of file %d: %w", v.ID, err)
		}
		byAddr := func(a, b pool.PageFrame) int { return cmp.Compare(a.Addr, b.Addr) }
		if !slices.IsSortedFunc(frames, byAddr) { // a pool.File's always is
			frames = slices.Clone(frames)
			slices.SortFunc(frames, byAddr)
		}
		lists = append(lists, frames)
		total += len(frames)
	}
	all := make([]victimFrame, 0, total)
	h := make(frameHeap, 0, len(lists))
	for i, l := range lists {
		if len(l) > 0 {
			h = append(h, frameCursor{addr: l[0].Addr, list: i})
		}
	}
	heap.Init(&h)
	for len(h) > 0 {
		cur := &h[0]
		l := lists[cur.list]
		f := l[cur.next]
		all = append(all, victimFrame{frameAt{addr: f.Addr, file: victims[cur.list].ID}, f.PID, f.Len})
		if cur.next++; cur.next < len(l) {
			cur.addr = l[cur.next].Addr
			heap.Fix(&h, 0)
		} else {
			heap.Pop(&h)
		}
	}
	return all, nil
}

// frameCursor is a victim's next frame in victimFrames' merge.
type frameCursor struct {
	addr       uint64
	list, next int
}

// frameHeap orders the victims' cursors by their next frame's address.
type frameHeap []frameCursor

func (h frameHeap) Len() int           { return len(h) }
func (h frameHeap) Less(i, j int) bool { return h[i].addr < h[j].addr }
func (h frameHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *frameHeap) Push(x any)        { *h = append(*h, x.(frameCursor)) }
func (h *frameHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// victimError is a victim frame that could not be read.
type victimError struct {
	file manifest.FileID
	err  error
}

func (e *victimError) Error() string {
	return fmt.Sprintf("gc: read victim file %d: %v", e.file, e.err)
}

func (e *victimError) Unwrap() error { return e.err }

// collect rewrites one batch of victims: their live frames go to one new
// file, then one manifest commit remaps their ranges and retires them, and
// they are deleted. A batch with nothing live is only retired. left counts
// victims whose deletion waits for readers.
func (c *Collector) collect(st *manifest.Manifest, victims []manifest.FileMeta) (left int, err error) {
	// An earlier batch of the round may have consolidated chains into
	// these victims' frames, charging junk to them: their accounting is
	// the manifest's now, not the round's start.
	victims = slices.Clone(victims)
	for i, v := range victims {
		if f, ok := st.File(v.ID); ok {
			victims[i] = f
		}
	}
	live, chains, _, err := c.liveness(st, victims)
	if err != nil {
		var ve *victimError
		if errors.As(err, &ve) && errors.Is(err, base.ErrCorruption) {
			c.skip[ve.file] = true // do not trip over it every round
		}
		return 0, err
	}
	isVictim := func(id manifest.FileID) bool {
		return slices.ContainsFunc(victims, func(v manifest.FileMeta) bool { return v.ID == id })
	}
	var merges []*merge
	if !c.env.NoConsolidate {
		merges = c.merges(st, victims, chains)
	}
	live, junk := applyMerges(live, merges, isVictim)
	for _, v := range victims {
		c.read.Add(uint64(v.Total))
	}
	hasLive := map[manifest.FileID]bool{}
	for _, f := range live {
		hasLive[f.file] = true
	}
	ids, edit := retireEdit(st, victims)
	if len(live) == 0 {
		if err := c.commit(edit); err != nil {
			return 0, fmt.Errorf("gc: retire files %v: %w", ids, err)
		}
		c.retired.Add(uint64(len(victims)))
		return c.deleteFiles(ids)
	}

	out, info, err := c.stageAndWrite(st, live)
	if err != nil {
		return 0, err
	}
	switchEdit(st, edit, out, info, junk, hasLive)
	if failpoints.Skip(failpoints.MutGCDeleteBeforeRemap) {
		for _, v := range victims {
			_ = c.env.FS.Remove(c.env.Path(v.ID))
			_ = c.env.FS.SyncDir(filepath.Dir(c.env.Path(v.ID)))
		}
	}
	err = failpoints.Hit(failpoints.GCBeforeMetaCommit)
	if err == nil {
		err = c.commitMerged(edit, merges)
	}
	if err != nil {
		// In doubt: the manifest is failed, the stage mark may or may
		// not be cleared; Open settles it either way.
		return 0, fmt.Errorf("gc: commit rewrite into file %d: %w", out, err)
	}
	if c.env.Writing != nil {
		c.env.Writing.Store(0)
	}
	if err := failpoints.Hit(failpoints.GCAfterMetaCommit); err != nil {
		// The rewrite is committed; the victims stay on disk until the
		// next open removes the files the manifest no longer names.
		return 0, fmt.Errorf("gc: after rewrite into file %d: %w", out, err)
	}
	c.countRewrite(info.Size, merges, victims, hasLive)
	return c.deleteFiles(ids)
}

// countRewrite adds a committed rewrite to the counters: the bytes it
// wrote, the chains it consolidated, the victims it rewrote (live frames
// copied) or retired (none).
func (c *Collector) countRewrite(size int64, merges []*merge, victims []manifest.FileMeta, hasLive map[manifest.FileID]bool) {
	c.rewrites.Add(1)
	c.written.Add(uint64(size))
	for _, m := range merges {
		c.merged.Add(1)
		c.mergedFrames.Add(uint64(len(m.chain)))
	}
	for _, v := range victims {
		if hasLive[v.ID] {
			c.rewritten.Add(1)
		} else {
			c.retired.Add(1)
		}
	}
}

// retireEdit returns the victims' ids and the edit that retires them as
// pending deletes and removes their address ranges.
func retireEdit(st *manifest.Manifest, victims []manifest.FileMeta) ([]manifest.FileID, *manifest.Edit) {
	ids := make([]manifest.FileID, len(victims))
	for i, v := range victims {
		ids[i] = v.ID
	}
	edit := &manifest.Edit{PendingDeletes: ids}
	for _, v := range victims {
		edit.RemoveRanges = append(edit.RemoveRanges, st.RangesOf(v.ID)...)
	}
	slices.SortFunc(edit.RemoveRanges, func(a, b manifest.Range) int { return cmp.Compare(a.Lo, b.Lo) })
	return ids, edit
}

// stageAndWrite is steps 1 and 2 of the rewrite (package doc): it stages
// the new file's id (Open deletes a staged file no range names), writes
// the live frames into it and syncs it. On failure it clears the stage
// mark and, for a damaged victim, skips that file in later rounds.
func (c *Collector) stageAndWrite(st *manifest.Manifest, live []frameAt) (manifest.FileID, pool.FileInfo, error) {
	out, _ := st.Counters()
	if err := c.commit(&manifest.Edit{Has: manifest.HasNextFileID | manifest.HasStageFile, NextFileID: out + 1, StageFile: out}); err != nil {
		return 0, pool.FileInfo{}, fmt.Errorf("gc: stage file %d: %w", out, err)
	}
	if c.env.Writing != nil {
		c.env.Writing.Store(uint64(out))
	}
	err := failpoints.Hit(failpoints.GCAfterStageMarker)
	var info pool.FileInfo
	if err == nil {
		info, err = c.write(out, live)
	}
	if err == nil {
		err = failpoints.Hit(failpoints.GCAfterDataDirSync)
	}
	if err != nil {
		if cerr := c.clearStage(out); cerr != nil {
			err = errors.Join(err, cerr)
		}
		var ve *victimError
		if errors.As(err, &ve) && errors.Is(err, base.ErrCorruption) {
			c.skip[ve.file] = true
		}
		return 0, pool.FileInfo{}, err
	}
	return out, info, nil
}

// switchEdit completes edit (which retires the victims) into step 3's one
// commit: register the new file out (clearing the stage mark), charge the
// junk a consolidation made in other files, and remap the ranges of the
// victims that had live frames to out.
func switchEdit(st *manifest.Manifest, edit *manifest.Edit, out manifest.FileID, info pool.FileInfo, junk map[manifest.FileID]int64, hasLive map[manifest.FileID]bool) {
	edit.Has |= manifest.HasStageFile
	edit.StageFile = manifest.NoFile
	edit.AddFiles = []manifest.FileMeta{{ID: out, Total: info.FrameBytes, Live: info.FrameBytes}}
	// Frames below a consolidated base in other files are junk now.
	for id, j := range junk {
		if f, ok := st.File(id); ok && !failpoints.Skip(failpoints.MutJunkNotRecorded) {
			f.Live = max(0, f.Live-j)
			edit.FileStats = append(edit.FileStats, f)
		}
	}
	slices.SortFunc(edit.FileStats, func(a, b manifest.FileMeta) int { return cmp.Compare(a.ID, b.ID) })
	for _, r := range edit.RemoveRanges {
		if hasLive[r.File] {
			edit.AddRanges = appendRange(edit.AddRanges, manifest.Range{Lo: r.Lo, Hi: r.Hi, File: out})
		}
	}
}

// commitMerged is commit for a rewrite that consolidates the chains of
// merges: the Ledger's epoch brackets the commit (a page load racing it
// reads again), and the Ledger's chains of the resident pages become the
// consolidated ones once it is durable.
func (c *Collector) commitMerged(e *manifest.Edit, merges []*merge) error {
	if len(merges) == 0 {
		return c.commit(e)
	}
	c.env.Ledger.rewriting()
	err := c.commit(e)
	var chains map[uint64]Chain
	if err == nil {
		chains = make(map[uint64]Chain, len(merges))
		for _, m := range merges {
			chains[m.pid] = m.newChain()
		}
	}
	c.env.Ledger.Rewritten(chains)
	return err
}

// appendRange appends r to rs (sorted, r.Lo above every range), merging
// it into the last range when they touch and name the same file.
func appendRange(rs []manifest.Range, r manifest.Range) []manifest.Range {
	if n := len(rs); n > 0 && rs[n-1].Hi == r.Lo && rs[n-1].File == r.File {
		rs[n-1].Hi = r.Hi
		return rs
	}
	return append(rs, r)
}

// write copies the live frames, in ascending address order, into data file
// id: frames, table and footer, fsync of the file and of the directory.
func (c *Collector) write(id manifest.FileID, live []frameAt) (pool.FileInfo, error) {
	name := c.env.Path(id)
	f, err := c.env.FS.Create(name)
	if err != nil {
		return pool.FileInfo{}, fmt.Errorf("gc: create %s: %w", name, err)
	}
	defer f.Close()
	w := pool.NewFileWriter(f)
	var buf []byte
	for _, fa := range live {
		if m := fa.merge; m != nil {
			if err := w.AddRaw(m.raw); err != nil {
				return pool.FileInfo{}, fmt.Errorf("gc: write %s: %w", name, err)
			}
			continue
		}
		// Copied as encoded: a frame keeps its codec, size and CRC.
		var err error
		buf, _, err = c.env.Files.ReadRaw(fa.file, fa.addr, buf[:0])
		if err != nil {
			return pool.FileInfo{}, &victimError{file: fa.file, err: err}
		}
		if err := w.AddRaw(buf); err != nil {
			return pool.FileInfo{}, fmt.Errorf("gc: write %s: %w", name, err)
		}
	}
	info, err := w.Finish()
	if err != nil {
		return pool.FileInfo{}, fmt.Errorf("gc: write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return pool.FileInfo{}, fmt.Errorf("gc: sync %s: %w: %w", name, pool.ErrSync, err)
	}
	if err := c.env.FS.SyncDir(c.env.Dir); err != nil {
		return pool.FileInfo{}, fmt.Errorf("gc: sync dir %s: %w: %w", c.env.Dir, pool.ErrSync, err)
	}
	return info, nil
}

// deleteFiles unlinks retired files once no reader holds them; the next
// commit records the deletions. A file whose readers do not finish within
// DrainWait stays pending (left counts them) for the next round; Open
// deletes pending files too. The unlinks are not made durable before the
// record: a file that reappears after a power loss is named by nothing,
// and Open deletes it.
func (c *Collector) deleteFiles(ids []manifest.FileID) (left int, err error) {
	var deadline <-chan time.Time
	if c.env.DrainWait > 0 {
		t := time.NewTimer(c.env.DrainWait)
		defer t.Stop()
		deadline = t.C
	}
	for _, id := range ids {
		closed := c.env.Files.Retire(id)
		select {
		case <-closed:
		case <-deadline:
			left++
			continue
		case <-c.env.Stop:
			left++
			continue
		}
		name := c.env.Path(id)
		var size int64
		if fi, err := c.env.FS.Stat(name); err == nil {
			size = fi.Size()
		}
		err := failpoints.Hit(failpoints.GCDeleteObsolete)
		if err == nil {
			err = c.env.FS.Remove(name)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return left, fmt.Errorf("gc: delete %s: %w", name, err)
		}
		c.deletedBytes.Add(uint64(size))
		c.deleted.Add(1)
		c.unrecorded = append(c.unrecorded, id)
	}
	return left, nil
}
