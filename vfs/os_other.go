//go:build !linux

package vfs

import "os"

// datasync is fsync: fdatasync is not portable (macOS has no such call).
func datasync(f *os.File) error { return f.Sync() }

// datasyncParked is datasync: no ring here.
func datasyncParked(f *os.File) error { return f.Sync() }

// remove is os.Remove.
func remove(name string) error { return os.Remove(name) }

// allocate is a no-op where fallocate(2) does not exist: preallocation is
// an optimisation, never needed for correctness.
func allocate(f *os.File, size int64) error { return nil }
