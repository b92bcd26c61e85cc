package manifest

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"

	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/vfs"
)

// commitAll commits n generated edits and returns the generator.
func commitAll(t *testing.T, m *Manifest, g *gen, n int) {
	t.Helper()
	for i := range n {
		if err := m.Commit(g.next(t)); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
}

func mustOpen(t *testing.T, fsys vfs.FS, dir string, create bool) (*Manifest, *State) {
	t.Helper()
	m, st, err := Open(fsys, dir, create)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, st
}

func TestOpenMissing(t *testing.T) {
	fsys := vfs.Default()
	dir := filepath.Join(t.TempDir(), "db")
	_, _, err := Open(fsys, dir, false)
	if !errors.Is(err, ErrNotExist) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open without create: %v, want ErrNotExist", err)
	}
	m, st := mustOpen(t, fsys, dir, true)
	sameState(t, "new", st, NewState())
	if _, err := fsys.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open created the directory: %v", err)
	}
	if err := m.Prepare(); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Prepare of a new manifest created the directory: %v", err)
	}
	if got := m.Stats(); got.File != "" {
		t.Fatalf("Stats before the first commit: %+v", got)
	}
}

func TestCommitReopen(t *testing.T) {
	fsys := vfs.Default()
	dir := filepath.Join(t.TempDir(), "db")
	m, _ := mustOpen(t, fsys, dir, true)
	g := newGen(1)
	commitAll(t, m, g, 50)
	sameState(t, "in memory", m.State(), g.shadow)
	if got := manifestFiles(t, fsys, dir); len(got) != 1 || got[0] != "MANIFEST-000001" {
		t.Fatalf("manifest files %v", got)
	}
	st := m.Stats()
	if st.Commits != 50 || st.Rotations != 1 || st.File != filepath.Join(dir, "MANIFEST-000001") {
		t.Fatalf("stats %+v", st)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Commit(&Edit{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	m2, got := mustOpen(t, fsys, dir, false)
	sameState(t, "reopened", got, g.shadow)
	commitAll(t, m2, g, 10)
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	_, got = mustOpen(t, fsys, dir, false)
	sameState(t, "reopened twice", got, g.shadow)
}

func TestOpenIsReadOnly(t *testing.T) {
	fsys := vfs.Default()
	dir := t.TempDir()
	m, _ := mustOpen(t, fsys, dir, true)
	commitAll(t, m, newGen(2), 5)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// A torn tail and leftovers of an interrupted rotation.
	live := liveFile(t, fsys, dir)
	data, _ := readFile(fsys, live)
	writeFile(t, fsys, live, append(data, 0x30, 0, 0, 0, 1, 2))
	writeFile(t, fsys, filepath.Join(dir, "MANIFEST-000007"), []byte("orphan"))
	writeFile(t, fsys, filepath.Join(dir, currentTemp), []byte("MANIFEST-000007\n"))
	before := dirImage(t, fsys, dir)

	m2, _ := mustOpen(t, fsys, dir, false)
	if got := dirImage(t, fsys, dir); got != before {
		t.Fatal("Open changed the directory")
	}
	if st := m2.Stats(); st.TornBytes != 6 || st.Size != int64(len(data)) {
		t.Fatalf("stats %+v, want 6 torn bytes after %d", st, len(data))
	}
	if err := m2.Prepare(); err != nil {
		t.Fatal(err)
	}
	after, _ := readFile(fsys, live)
	if len(after) != len(data) {
		t.Fatalf("Prepare left %d bytes, want %d", len(after), len(data))
	}
	names, _ := fsys.List(dir)
	if len(names) != 2 {
		t.Fatalf("after Prepare: %v, want CURRENT and the live manifest", names)
	}
}

func TestRotation(t *testing.T) {
	fsys := vfs.Default()
	dir := t.TempDir()
	m, _ := mustOpen(t, fsys, dir, true)
	m.SetRotateBytes(2 << 10)
	g := newGen(3)
	var last string
	for i := range 300 {
		if err := m.Commit(g.next(t)); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		files := manifestFiles(t, fsys, dir)
		if len(files) != 1 {
			t.Fatalf("commit %d: manifest files %v, want one", i, files)
		}
		if live := filepath.Base(liveFile(t, fsys, dir)); live != files[0] {
			t.Fatalf("CURRENT names %s, directory holds %s", live, files[0])
		}
		if files[0] != last {
			// Every rotation leaves a state equal to the one before.
			_, got := mustOpen(t, fsys, dir, false)
			sameState(t, "after rotation to "+files[0], got, g.shadow)
			last = files[0]
		}
	}
	st := m.Stats()
	if st.Rotations < 5 {
		t.Fatalf("only %d rotations: %+v", st.Rotations, st)
	}
	// The threshold follows the snapshot: the live file stays within
	// max(threshold, 2*snapshot) plus one record.
	if st.Size > max(2<<10, 2*m.snapSize)+4<<10 {
		t.Fatalf("live file %d bytes with snapshot %d", st.Size, m.snapSize)
	}

	before := m.State()
	if err := m.Rotate(); err != nil {
		t.Fatal(err)
	}
	sameState(t, "explicit rotate", m.State(), before)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	_, got := mustOpen(t, fsys, dir, false)
	sameState(t, "reopen after rotate", got, before)
	if n := m.Stats().Rotations; n != st.Rotations+1 {
		t.Fatalf("rotations %d, want %d", n, st.Rotations+1)
	}
}

func TestCommitRejected(t *testing.T) {
	fsys := vfs.Default()
	dir := t.TempDir()
	m, _ := mustOpen(t, fsys, dir, true)
	g := newGen(4)
	commitAll(t, m, g, 5)
	before := m.State()
	var ce *base.CorruptionError
	err := m.Commit(&Edit{Has: HasNextPID, NextPID: before.NextPID - 1})
	if before.NextPID > 0 && !errors.As(err, &ce) {
		t.Fatalf("backward counter: %v, want a corruption error", err)
	}
	if err := m.Commit(&Edit{Has: HasNextManifest, NextManifest: 99}); err == nil {
		t.Fatal("edit setting NextManifest accepted")
	}
	if err := m.Commit(&Edit{Has: HasFormatVersion, FormatVersion: FormatVersion + 1}); !errors.Is(err, base.ErrVersion) {
		t.Fatalf("newer format: %v", err)
	}
	sameState(t, "after rejected commits", m.State(), before)
	commitAll(t, m, g, 5) // still usable
	_, got := mustOpen(t, fsys, dir, false)
	sameState(t, "reopen", got, g.shadow)
}

// TestConcurrentReaders runs State and FileOf against commits, for -race.
func TestConcurrentReaders(t *testing.T) {
	m, _ := mustOpen(t, vfs.NewMem(), "/db", true)
	m.SetRotateBytes(1 << 10)
	g := newGen(5)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := m.State()
				for _, r := range s.Ranges() {
					// A newer commit may have remapped the range, so only
					// the copy's own lookup must agree with it.
					m.FileOf(r.Lo)
					if f, ok := s.FileOf(r.Hi - 1); !ok || f != r.File {
						t.Errorf("State.FileOf(%d) = %d, %v; want %d", r.Hi-1, f, ok, r.File)
						return
					}
				}
				_ = m.Stats()
			}
		})
	}
	commitAll(t, m, g, 200)
	close(stop)
	wg.Wait()
	for _, r := range g.shadow.Ranges() {
		if f, ok := m.FileOf(r.Lo); !ok || f != r.File {
			t.Fatalf("FileOf(%d) = %d, %v; want %d", r.Lo, f, ok, r.File)
		}
	}
}
