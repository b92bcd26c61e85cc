package vfs_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/bwkv/bwkv/vfs"
)

const lockChildEnv = "BWKV_VFS_LOCK_CHILD"

// TestLockChild is the child half of TestLockOtherProcess: it tries the lock
// named by the environment and prints the outcome. It does nothing when run
// directly.
func TestLockChild(t *testing.T) {
	name := os.Getenv(lockChildEnv)
	if name == "" {
		t.Skip("helper for TestLockOtherProcess")
	}
	l, err := vfs.Default().Lock(name)
	switch {
	case errors.Is(err, vfs.ErrLocked):
		fmt.Println("result: locked")
	case err != nil:
		fmt.Println("result: error:", err)
	default:
		fmt.Println("result: acquired")
		l.Close()
	}
}

func TestLockOtherProcess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	name := filepath.Join(t.TempDir(), "LOCK")
	child := func() string {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestLockChild$", "-test.v")
		cmd.Env = append(os.Environ(), lockChildEnv+"="+name)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		for line := range strings.Lines(string(out)) {
			if r, ok := strings.CutPrefix(line, "result: "); ok {
				return strings.TrimSpace(r)
			}
		}
		t.Fatalf("child printed no result:\n%s", out)
		return ""
	}
	l, err := vfs.Default().Lock(name)
	must(t, err)
	if got := child(); got != "locked" {
		t.Fatalf("child while we hold the lock: %s, want locked", got)
	}
	must(t, l.Close())
	if got := child(); got != "acquired" {
		t.Fatalf("child after we released the lock: %s, want acquired", got)
	}
}

// TestOSSyncPaths runs the fdatasync and directory fsync paths on a real
// file system and checks that errors keep their os shape.
func TestOSSyncPaths(t *testing.T) {
	fsys := vfs.Default()
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	f, err := fsys.Create(name)
	must(t, err)
	_, err = f.Write(make([]byte, 1<<16))
	must(t, err)
	must(t, f.Sync())
	must(t, f.Close())
	if err := f.Sync(); err == nil {
		t.Fatal("Sync of a closed file succeeded")
	}
	must(t, fsys.SyncDir(dir))
	var pe *os.PathError
	if err := fsys.SyncDir(filepath.Join(dir, "missing")); !errors.As(err, &pe) || !os.IsNotExist(err) {
		t.Fatalf("SyncDir(missing) = %v, want a *PathError for a missing file", err)
	}
}

// TestOSAllocate: the OS file is an Allocator; Allocate grows it with
// zeros (with the blocks reserved where fallocate works), never shrinks
// it, and writes below the allocated size leave the size alone.
func TestOSAllocate(t *testing.T) {
	name := filepath.Join(t.TempDir(), "seg")
	f, err := vfs.Default().Create(name)
	must(t, err)
	defer f.Close()
	if _, ok := f.(vfs.Allocator); !ok {
		t.Fatal("the OS file is not an Allocator")
	}
	must(t, vfs.Preallocate(f, 1<<20))
	must(t, vfs.Preallocate(f, 1<<10)) // smaller: no change
	_, err = f.WriteAt([]byte("record"), 0)
	must(t, err)
	must(t, f.Sync())
	size, err := f.Size()
	must(t, err)
	if runtime.GOOS == "linux" && size != 1<<20 {
		t.Fatalf("size %d after Allocate(1 MiB) and a write at 0, want %d", size, 1<<20)
	}
	b := make([]byte, 4096)
	_, err = f.ReadAt(b, 4096)
	must(t, err)
	for i, c := range b {
		if c != 0 {
			t.Fatalf("byte %d of the allocated tail is %d, want 0", 4096+i, c)
		}
	}
}
