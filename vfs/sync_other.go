//go:build !linux

package vfs

import "os"

// datasync falls back to os.File.Sync (fsync, or F_FULLFSYNC on darwin)
// where fdatasync is not available.
func datasync(f *os.File) error { return f.Sync() }
