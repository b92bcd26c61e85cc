package manifest

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"sync"
	"testing"

	"github.com/bwkv/bwkv/vfs"
)

// gen produces a random valid edit sequence that exercises every kind of
// change: checkpoints (pages, ranges, files, counters), GC rewrites with a
// stage mark, retirements and deletions. It keeps a shadow State.
type gen struct {
	rng    *rand.Rand
	shadow *State
}

func newGen(seed uint64) *gen {
	return &gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), shadow: NewState()}
}

// next returns the next edit, already applied to the shadow state.
func (g *gen) next(t testing.TB) *Edit {
	t.Helper()
	s := g.shadow
	var e *Edit
	switch r := g.rng.IntN(10); {
	case s.NextAddr == 0:
		e = &Edit{Has: HasFormatVersion | HasOptions | HasNextPID | HasNextAddr,
			FormatVersion: FormatVersion, Options: FormatOptions{PageSplitEntries: 64, MaxKeySize: 1024, Compression: "zstd"},
			NextPID: 2, NextAddr: 1}
	case r < 6:
		e = g.checkpoint()
	case r < 7 && s.StageFile == NoFile:
		e = &Edit{Has: HasStageFile | HasNextFileID, StageFile: s.NextFileID, NextFileID: s.NextFileID + 1}
	case r < 7:
		e = g.finishRewrite()
	case r < 8:
		e = g.retireEmpty()
	default:
		e = &Edit{}
		for id := range s.PendingDeletes {
			e.DeletedFiles = append(e.DeletedFiles, id)
		}
		sort.Slice(e.DeletedFiles, func(i, j int) bool { return e.DeletedFiles[i] < e.DeletedFiles[j] })
		e.Has |= HasOracle
		e.Oracle = s.Oracle + uint64(g.rng.IntN(5))
	}
	if err := s.Apply(e); err != nil {
		t.Fatalf("generator produced an invalid edit %+v: %v", e, err)
	}
	return e
}

// checkpoint: a new data file holding a fresh address range and some pages.
func (g *gen) checkpoint() *Edit {
	s := g.shadow
	id := s.NextFileID
	lo := s.NextAddr
	n := uint64(1 + g.rng.IntN(200))
	e := &Edit{
		Has:        HasNextPID | HasNextAddr | HasNextFileID | HasFrontier | HasAnalysisStart | HasOracle,
		NextPID:    s.NextPID + uint64(g.rng.IntN(3)),
		NextAddr:   lo + n,
		NextFileID: id + 1,
		Oracle:     s.Oracle + 1,
		Frontier:   s.Frontier + uint64(g.rng.IntN(1000)),
		AddFiles:   []FileMeta{{ID: id, Total: int64(n), Live: int64(n)}},
		AddRanges:  []Range{{Lo: lo, Hi: lo + n, File: id}},
	}
	e.AnalysisStart = s.AnalysisStart + uint64(g.rng.IntN(int(e.Frontier-s.AnalysisStart)+1))
	seen := map[uint64]bool{}
	for range 1 + g.rng.IntN(20) {
		pid := uint64(g.rng.IntN(int(e.NextPID)))
		if seen[pid] {
			continue
		}
		seen[pid] = true
		if _, ok := s.Pages[pid]; ok && g.rng.IntN(8) == 0 {
			e.RemovePages = append(e.RemovePages, pid)
			continue
		}
		e.SetPages = append(e.SetPages, PageEntry{PID: pid, Addr: lo + uint64(g.rng.IntN(int(n)))})
	}
	// Junk in an older file.
	if f, ok := g.anyFile(); ok && f.ID != id {
		f.Live = f.Live / 2
		e.FileStats = []FileMeta{f}
	}
	return e
}

// finishRewrite: the staged file takes over an old file's ranges.
func (g *gen) finishRewrite() *Edit {
	s := g.shadow
	e := &Edit{Has: HasStageFile, StageFile: NoFile}
	victim, ok := g.anyFile()
	if !ok {
		return e
	}
	e.AddFiles = []FileMeta{{ID: s.StageFile, Total: victim.Live, Live: victim.Live}}
	for _, r := range s.RangesOf(victim.ID) {
		e.RemoveRanges = append(e.RemoveRanges, r)
		e.AddRanges = append(e.AddRanges, Range{Lo: r.Lo, Hi: r.Hi, File: s.StageFile})
	}
	e.PendingDeletes = []FileID{victim.ID}
	return e
}

// retireEmpty: drop a file's ranges and retire it (all its frames are junk).
func (g *gen) retireEmpty() *Edit {
	s := g.shadow
	f, ok := g.anyFile()
	if !ok {
		return &Edit{}
	}
	e := &Edit{RemoveRanges: s.RangesOf(f.ID), PendingDeletes: []FileID{f.ID}}
	// Pages pointing into the dropped ranges go too (a real GC only
	// retires files no page reaches).
	for pid, addr := range s.Pages {
		for _, r := range e.RemoveRanges {
			if addr >= r.Lo && addr < r.Hi {
				e.RemovePages = append(e.RemovePages, pid)
			}
		}
	}
	sort.Slice(e.RemovePages, func(i, j int) bool { return e.RemovePages[i] < e.RemovePages[j] })
	return e
}

// anyFile picks a registered file deterministically from the rng.
func (g *gen) anyFile() (FileMeta, bool) {
	s := g.shadow
	if len(s.Files) == 0 {
		return FileMeta{}, false
	}
	ids := make([]FileID, 0, len(s.Files))
	for id := range s.Files {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return s.Files[ids[g.rng.IntN(len(ids))]], true
}

// sameState fails the test unless a and b are equal, except for
// NextManifest: the manifest's own file counter, which the caller's edits
// never set.
func sameState(t testing.TB, what string, a, b *State) {
	t.Helper()
	sa, sb := a.Snapshot(), b.Snapshot()
	sa.NextManifest, sb.NextManifest = 0, 0
	if !bytes.Equal(sa.Encode(nil), sb.Encode(nil)) {
		t.Fatalf("%s: states differ:\n got %+v\nwant %+v", what, a, b)
	}
}

// manifestFiles lists the MANIFEST-* names in dir.
func manifestFiles(t testing.TB, fsys vfs.FS, dir string) []string {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if _, ok := parseManifestName(n); ok {
			out = append(out, n)
		}
	}
	return out
}

// dirImage returns every file of dir and its bytes, to prove Open writes
// nothing.
func dirImage(t testing.TB, fsys vfs.FS, dir string) string {
	t.Helper()
	names, err := fsys.List(dir)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	var b bytes.Buffer
	for _, n := range names {
		data, err := readFile(fsys, filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s=%x\n", n, data)
	}
	return b.String()
}

// liveFile returns the path of the file CURRENT names.
func liveFile(t testing.TB, fsys vfs.FS, dir string) string {
	t.Helper()
	num, err := readCurrent(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, manifestName(num))
}

// faultFS wraps an FS and fails the operations its hook chooses.
type faultFS struct {
	vfs.FS
	mu   sync.Mutex
	hook func(op, name string) error // nil: no faults
}

func (f *faultFS) check(op, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hook == nil {
		return nil
	}
	return f.hook(op, name)
}

func (f *faultFS) setHook(h func(op, name string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hook = h
}

func (f *faultFS) Create(name string) (vfs.File, error) {
	if err := f.check("create", name); err != nil {
		return nil, err
	}
	file, err := f.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFS) OpenReadWrite(name string) (vfs.File, error) {
	file, err := f.FS.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFS) Rename(oldname, newname string) error {
	if err := f.check("rename", newname); err != nil {
		return err
	}
	return f.FS.Rename(oldname, newname)
}

func (f *faultFS) SyncDir(dir string) error {
	if err := f.check("syncdir", dir); err != nil {
		return err
	}
	return f.FS.SyncDir(dir)
}

func (f *faultFS) Remove(name string) error {
	if err := f.check("remove", name); err != nil {
		return err
	}
	return f.FS.Remove(name)
}

type faultFile struct {
	vfs.File
	fs   *faultFS
	name string
}

func (f *faultFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.check("write", f.name); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.fs.check("write", f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	if err := f.fs.check("sync", f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

// writeFile replaces a file's contents (test corruption helper).
func writeFile(t testing.TB, fsys vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
