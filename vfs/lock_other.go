//go:build !unix

package vfs

import (
	"errors"
	"os"
)

type osLock struct{}

func (*osLock) Close() error { return nil }

// lockFile is not implemented where flock is missing.
func lockFile(name string) (*osLock, error) {
	return nil, &os.PathError{Op: "lock", Path: name, Err: errors.ErrUnsupported}
}

func lockFileShared(name string) (*osLock, error) {
	return nil, &os.PathError{Op: "lock", Path: name, Err: errors.ErrUnsupported}
}
