//go:build linux

package vfs

import (
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// needRing skips where the kernel offers no io_uring (the plain system
// call is then the only path, covered by TestOSSyncPaths).
func needRing(t *testing.T) *ring {
	t.Helper()
	r := sharedRing()
	if r == nil {
		t.Skip("io_uring is not available here")
	}
	return r
}

// TestRingSyncsFiles checks that Sync of a Parked OS file goes through the
// ring and of a Default one does not, and that the data is what a reader
// sees.
func TestRingSyncsFiles(t *testing.T) {
	needRing(t)
	dir := t.TempDir()
	fs := Default()
	f, err := fs.Create(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	before := ringSyncs.Load()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := ringSyncs.Load() - before; n != 0 {
		t.Fatalf("Sync went through the ring (%d)", n)
	}
	pf, err := Parked(fs).OpenReadWrite(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	if err := pf.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := ringSyncs.Load() - before; n != 1 {
		t.Fatalf("%d syncs went through the ring, want 1", n)
	}
	b, err := os.ReadFile(filepath.Join(dir, "a"))
	if err != nil || string(b) != "hello" {
		t.Fatalf("read back %q, %v", b, err)
	}
}

// TestRingManyWaiters runs more concurrent syncs than the ring has slots:
// each returns, none is lost, and the reaper role passes between waiters.
func TestRingManyWaiters(t *testing.T) {
	needRing(t)
	dir := t.TempDir()
	const n = 3 * ringEntries
	files := make([]File, n)
	for i := range files {
		f, err := Parked(Default()).Create(filepath.Join(dir, fmt.Sprint(i)))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(make([]byte, 4096)); err != nil {
			t.Fatal(err)
		}
		files[i] = f
	}
	before := ringSyncs.Load()
	var wg sync.WaitGroup
	errs := make(chan error, n*4)
	for i := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4 {
				if err := files[i].Sync(); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := ringSyncs.Load() - before; got < n*4 {
		t.Fatalf("%d syncs through the ring, want %d", got, n*4)
	}
	r := sharedRing()
	if len(r.slots) != ringEntries {
		t.Fatalf("%d free slots after every sync returned, want %d", len(r.slots), ringEntries)
	}
}

// TestRingSyncError checks that a sync the kernel refuses reports the
// same error through the ring as the system call does: fdatasync of a
// pipe is EINVAL.
func TestRingSyncError(t *testing.T) {
	r := needRing(t)
	var p [2]int
	if err := unix.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	pr := os.NewFile(uintptr(p[0]), "pipe")
	defer pr.Close()
	defer unix.Close(p[1])
	want := unix.Fdatasync(p[0])
	if want == nil {
		t.Skip("fdatasync of a pipe succeeds on this kernel")
	}
	ok, err := r.sync(p[0], true)
	if !ok {
		t.Fatal("the ring refused the request")
	}
	if !errors.Is(err, want) {
		t.Fatalf("ring: %v, system call: %v", err, want)
	}
	if err := datasync(pr, true); !errors.Is(err, want) {
		t.Fatalf("parked datasync of a pipe: %v, want %v", err, want)
	}
}

// TestRingFallback checks the plain system call path that kernels without
// io_uring take.
func TestRingFallback(t *testing.T) {
	ringDisabled.Store(true)
	defer ringDisabled.Store(false)
	f, err := Parked(Default()).Create(filepath.Join(t.TempDir(), "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before := ringSyncs.Load()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := ringSyncs.Load() - before; n != 0 {
		t.Fatalf("%d syncs went through a disabled ring", n)
	}
}

// TestRingRemove checks a Parked Remove, through the ring: a file goes, a missing
// name is fs.ErrNotExist in a *PathError as os.Remove reports it, and a
// directory still goes by os.Remove's path.
func TestRingRemove(t *testing.T) {
	needRing(t)
	dir := t.TempDir()
	fs := Parked(Default())
	name := filepath.Join(dir, "f")
	f, err := fs.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	before := ringUnlinks.Load()
	if err := fs.Remove(name); err != nil {
		t.Fatal(err)
	}
	if ringUnlinks.Load() == before {
		t.Fatal("the unlink did not go through the ring")
	}
	if _, err := os.Stat(name); !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("after Remove: %v", err)
	}
	err = fs.Remove(name)
	var pe *os.PathError
	if !errors.Is(err, iofs.ErrNotExist) || !errors.As(err, &pe) || pe.Op != "remove" || pe.Path != name {
		t.Fatalf("Remove of a missing file: %#v", err)
	}
	sub := filepath.Join(dir, "d")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove(sub); err == nil {
		t.Fatal("Remove of a non-empty directory succeeded")
	}
	os.Remove(filepath.Join(sub, "x"))
	if err := fs.Remove(sub); err != nil {
		t.Fatalf("Remove of an empty directory: %v", err)
	}
}

// TestParkedOnlyWraps checks that Parked leaves other file systems alone
// and that the unparked OS file system unlinks with the system call.
func TestParkedOnlyWraps(t *testing.T) {
	m := NewMem()
	if Parked(m) != FS(m) {
		t.Fatal("Parked wrapped a MemFS")
	}
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	before := ringUnlinks.Load()
	if err := Default().Remove(name); err != nil {
		t.Fatal(err)
	}
	if n := ringUnlinks.Load() - before; n != 0 {
		t.Fatalf("an unparked Remove went through the ring (%d)", n)
	}
}
