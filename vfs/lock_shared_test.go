package vfs_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/bwkv/bwkv/vfs"
)

func TestLockShared(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		fs   vfs.FS
		path string
	}{{"os", vfs.Default(), filepath.Join(dir, "LOCK")}, {"mem", vfs.NewMem(), "LOCK"}} {
		t.Run(tc.name, func(t *testing.T) {
			sl := tc.fs.(vfs.SharedLocker)
			if _, err := sl.LockShared(tc.path); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("shared lock of a missing file: %v, want ErrNotExist (it must not create it)", err)
			}
			x, err := tc.fs.Lock(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sl.LockShared(tc.path); !errors.Is(err, vfs.ErrLocked) {
				t.Fatalf("shared beside exclusive: %v", err)
			}
			x.Close()
			a, err := sl.LockShared(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			b, err := sl.LockShared(tc.path)
			if err != nil {
				t.Fatalf("two shared holders: %v", err)
			}
			if _, err := tc.fs.Lock(tc.path); !errors.Is(err, vfs.ErrLocked) {
				t.Fatalf("exclusive beside shared: %v", err)
			}
			a.Close()
			if _, err := tc.fs.Lock(tc.path); !errors.Is(err, vfs.ErrLocked) {
				t.Fatalf("exclusive beside the remaining shared holder: %v", err)
			}
			b.Close()
			x, err = tc.fs.Lock(tc.path)
			if err != nil {
				t.Fatalf("exclusive after every shared holder left: %v", err)
			}
			x.Close()
		})
	}
}
