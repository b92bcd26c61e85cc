package bwkv

import (
	"errors"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/bwkv/bwkv/vfs"
)

// lockDir takes the directory's lock: exclusive for a read-write open, and
// shared for a read-only one, so that any number of read-only handles (a
// `bwkv check` beside a `bwkv stats`) coexist while a writer and a reader
// exclude each other. The shared lock opens the lock file read-only and
// never creates it: a read-only open writes no byte. A directory without a
// lock file has never been opened read-write (a restored copy, or one a
// writer created and crashed before the lock), so there is nothing to
// share a lock with and the reader goes on unlocked.
func lockDir(fsys vfs.FS, dir string, readOnly bool) (io.Closer, error) {
	name := filepath.Join(dir, lockName)
	if !readOnly {
		return fsys.Lock(name)
	}
	sl, ok := fsys.(vfs.SharedLocker)
	if !ok {
		// A file system without shared locks (a caller's own vfs.FS)
		// gets the exclusive lock: safe, at the cost of excluding other
		// readers.
		return fsys.Lock(name)
	}
	lk, err := sl.LockShared(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nopCloser{}, nil
	}
	return lk, err
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
