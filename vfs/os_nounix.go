//go:build !unix

package vfs

import (
	"errors"
	"os"
)

// syncDir is File.Sync, which is what os offers where x/sys/unix does not
// apply (on Windows it may fail for a directory; callers report that).
func syncDir(d *os.File) error { return d.Sync() }

type osLock struct{}

func (*osLock) Close() error { return nil }

// lockFile is unsupported without flock.
func lockFile(name string) (*osLock, error) {
	return nil, &os.PathError{Op: "lock", Path: name, Err: errors.ErrUnsupported}
}

func lockFileShared(name string) (*osLock, error) {
	return nil, &os.PathError{Op: "lock", Path: name, Err: errors.ErrUnsupported}
}
