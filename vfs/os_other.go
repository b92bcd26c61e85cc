//go:build !linux

package vfs

import "os"

// datasync is fsync: fdatasync is not portable (macOS has no such call).
// There is no ring here: parked changes nothing.
func datasync(f *os.File, parked bool) error { return f.Sync() }

// remove is os.Remove (parked changes nothing here).
func remove(name string, parked bool) error { return os.Remove(name) }

// allocate is a no-op where fallocate(2) does not exist: preallocation is
// an optimisation, never needed for correctness.
func allocate(f *os.File, size int64) error { return nil }
