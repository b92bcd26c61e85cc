package wal_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwkv/bwkv/vfs"
	"github.com/bwkv/bwkv/wal"
)

// hookFS wraps an FS to slow down or fail fsyncs, forbid mutations and
// record the order of operations.
type hookFS struct {
	vfs.FS
	syncDelay atomic.Int64 // nanoseconds each file Sync sleeps
	syncs     atomic.Int64 // file Sync calls
	failSync  atomic.Pointer[error]
	readOnly  atomic.Bool // every mutating call fails

	mu     sync.Mutex
	record bool
	ops    []string // "create NAME", "write NAME", "sync NAME", "syncdir", "remove NAME"
}

var errMutation = errors.New("test: mutation on a read-only FS")

func (h *hookFS) log(op, name string) error {
	if h.readOnly.Load() {
		return fmt.Errorf("%s %s: %w", op, name, errMutation)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.record {
		h.ops = append(h.ops, op+" "+filepath.Base(name))
	}
	return nil
}

func (h *hookFS) opsLog() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ops...)
}

func (h *hookFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return &hookFile{File: f, fs: h, name: name}, nil
}

func (h *hookFS) Create(name string) (vfs.File, error) {
	if err := h.log("create", name); err != nil {
		return nil, err
	}
	f, err := h.FS.Create(name)
	return h.wrap(f, name, err)
}

func (h *hookFS) Open(name string) (vfs.File, error) {
	f, err := h.FS.Open(name)
	return h.wrap(f, name, err)
}

func (h *hookFS) OpenReadWrite(name string) (vfs.File, error) {
	if err := h.log("openrw", name); err != nil {
		return nil, err
	}
	f, err := h.FS.OpenReadWrite(name)
	return h.wrap(f, name, err)
}

func (h *hookFS) Remove(name string) error {
	if err := h.log("remove", name); err != nil {
		return err
	}
	return h.FS.Remove(name)
}

func (h *hookFS) Rename(oldname, newname string) error {
	if err := h.log("rename", oldname); err != nil {
		return err
	}
	return h.FS.Rename(oldname, newname)
}

func (h *hookFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := h.log("mkdir", dir); err != nil {
		return err
	}
	return h.FS.MkdirAll(dir, perm)
}

func (h *hookFS) SyncDir(dir string) error {
	if err := h.log("syncdir", ""); err != nil {
		return err
	}
	return h.FS.SyncDir(dir)
}

type hookFile struct {
	vfs.File
	fs   *hookFS
	name string
}

func (f *hookFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.fs.log("write", f.name); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *hookFile) Write(p []byte) (int, error) {
	if err := f.fs.log("write", f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *hookFile) Truncate(size int64) error {
	if err := f.fs.log("truncate", f.name); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

func (f *hookFile) Sync() error {
	if err := f.fs.log("sync", f.name); err != nil {
		return err
	}
	f.fs.syncs.Add(1)
	if p := f.fs.failSync.Load(); p != nil {
		return *p
	}
	if d := f.fs.syncDelay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	return f.File.Sync()
}

// newLog returns writer options on a fresh in-memory file system behind a
// hookFS.
func newLog(t testing.TB, segBytes int64) (wal.Options, *hookFS) {
	t.Helper()
	h := &hookFS{FS: vfs.NewMem()}
	return wal.Options{FS: h, Dir: "/db/wal", SegmentBytes: segBytes}, h
}

// newOSLog is newLog on the OS file system.
func newOSLog(t testing.TB, segBytes int64) (wal.Options, *hookFS) {
	t.Helper()
	h := &hookFS{FS: vfs.Default()}
	return wal.Options{FS: h, Dir: filepath.Join(t.TempDir(), "wal"), SegmentBytes: segBytes}, h
}

// readFile returns the contents of a file.
func readFile(t testing.TB, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && size > 0 {
		t.Fatal(err)
	}
	return b
}

// editFile applies fn to an open read-write file and syncs it.
func editFile(t testing.TB, fs vfs.FS, path string, fn func(f vfs.File) error) {
	t.Helper()
	f, err := fs.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func appendToFile(t testing.TB, fs vfs.FS, path string, b []byte) {
	t.Helper()
	editFile(t, fs, path, func(f vfs.File) error {
		size, err := f.Size()
		if err == nil {
			_, err = f.WriteAt(b, size)
		}
		return err
	})
}

func truncateFile(t testing.TB, fs vfs.FS, path string, size int64) {
	t.Helper()
	editFile(t, fs, path, func(f vfs.File) error { return f.Truncate(size) })
}

func flipBit(t testing.TB, fs vfs.FS, path string, off int64) {
	t.Helper()
	editFile(t, fs, path, func(f vfs.File) error {
		b := make([]byte, 1)
		if _, err := f.ReadAt(b, off); err != nil {
			return err
		}
		b[0] ^= 0x10
		_, err := f.WriteAt(b, off)
		return err
	})
}

func fileSize(t testing.TB, fs vfs.FS, path string) int64 {
	t.Helper()
	return int64(len(readFile(t, fs, path)))
}

// segStart returns the first LSN of the segment at path, from its name.
func segStart(t testing.TB, path string) wal.LSN {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(path), ".log"), 16, 64)
	if err != nil {
		t.Fatalf("%s is not a segment: %v", path, err)
	}
	return wal.LSN(v)
}

func openWriter(t testing.TB, o wal.Options, at wal.LSN) *wal.Writer {
	t.Helper()
	w, err := wal.Open(o, at)
	if err != nil {
		t.Fatalf("Open(at %d): %v", at, err)
	}
	return w
}

// logged is a record the test appended, with its LSN.
type logged struct {
	lsn wal.LSN
	rec wal.Record
}

// genRecord returns a pseudo-random record of any type; one in 50 has a
// value of 1000-1500 bytes (an update of two such values still fits in a
// MinSegmentBytes segment).
func genRecord(rng *rand.Rand, i int) wal.Record {
	size := rng.IntN(120)
	if rng.IntN(50) == 0 {
		size = 1000 + rng.IntN(500)
	}
	val := func() []byte {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		return b
	}
	r := wal.Record{
		Type:    wal.Type(1 + rng.IntN(7)),
		TxID:    wal.TxID(rng.Uint64N(1 << 40)),
		Seq:     uint32(i),
		PrevLSN: wal.LSN(rng.Uint64N(1 << 40)),
		Key:     fmt.Appendf(nil, "key-%08d", i),
	}
	switch r.Type {
	case wal.Begin, wal.Commit, wal.End:
		r.Key = nil
	case wal.Put:
		r.Value = val()
	case wal.Update:
		r.Value, r.OldValue, r.HasOld = val(), val(), true
	case wal.Delete:
		if rng.IntN(3) > 0 {
			r.OldValue, r.HasOld = val(), true
		}
	case wal.CLR:
		if rng.IntN(3) > 0 {
			r.Value = val()
		} else {
			r.Tombstone = true
		}
		r.UndoNext = wal.LSN(rng.Uint64N(1 << 40))
	}
	return r
}

// appendRandom appends n random records and returns them.
func appendRandom(t testing.TB, w *wal.Writer, rng *rand.Rand, n int) []logged {
	t.Helper()
	out := make([]logged, 0, n)
	for i := range n {
		r := genRecord(rng, i)
		lsn, err := w.Append(&r)
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		out = append(out, logged{lsn, r})
	}
	return out
}

// replayAll replays the log and returns copies of its records.
func replayAll(t testing.TB, fs vfs.FS, dir string, from, frontier wal.LSN) ([]logged, wal.ReplayResult, error) {
	t.Helper()
	return replayBound(t, fs, dir, from, frontier, false)
}

// replayBound is replayAll for a log whose records are bound to their LSN
// if bind (Options.BindLSN).
func replayBound(t testing.TB, fs vfs.FS, dir string, from, frontier wal.LSN, bind bool) ([]logged, wal.ReplayResult, error) {
	t.Helper()
	var got []logged
	o := wal.ReplayOptions{From: from, Frontier: frontier, BindLSN: bind}
	res, err := wal.ReplayWith(fs, dir, o, func(lsn wal.LSN, r *wal.Record) error {
		c := *r
		c.Key, c.Value, c.OldValue = bytes.Clone(r.Key), bytes.Clone(r.Value), bytes.Clone(r.OldValue)
		got = append(got, logged{lsn, c})
		return nil
	})
	return got, res, err
}

// checkRecords compares replayed records with the appended ones.
func checkRecords(t testing.TB, got, want []logged) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("replayed %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].lsn != want[i].lsn || !sameRecord(&got[i].rec, &want[i].rec) {
			t.Fatalf("record %d: got lsn %d %s\nwant lsn %d %s", i, got[i].lsn, fmtRecord(&got[i].rec), want[i].lsn, fmtRecord(&want[i].rec))
		}
	}
}

// segmentFiles returns the paths of the log's segments.
func segmentFiles(t testing.TB, o wal.Options) []string {
	t.Helper()
	segs, err := wal.Segments(o.FS, o.Dir)
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, len(segs))
	for i, s := range segs {
		paths[i] = filepath.Join(o.Dir, wal.SegmentName(s))
	}
	return paths
}

// walGoroutines returns the stacks of goroutines running wal code.
func walGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		// A frame of package wal (wal_test frames do not match; a goroutine
		// not yet started shows as wal.Open.gowrapN).
		if strings.Contains(g, "\ngithub.com/bwkv/bwkv/wal.") {
			out = append(out, g)
		}
	}
	return out
}

var seedFlag = flag.Uint64("seed", 0, "seed for the randomized wal tests (0: time)")

// newRand returns a seeded generator and logs the seed, which -seed
// replays.
func newRand(t testing.TB) *rand.Rand {
	s := *seedFlag
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -seed %d)", s, s)
	return rand.New(rand.NewPCG(s, s))
}
