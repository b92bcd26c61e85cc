package vfs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// datasync is fdatasync(2): it flushes the file's data and the metadata
// needed to read it back (the size, block allocation) but not timestamps,
// which is all a log or data file needs and saves a journal commit when
// only data changed (a preallocated log segment). File systems without it
// get fsync.
func datasync(f *os.File) error {
	err := fdControl(f, func(fd int) error { return unix.Fdatasync(fd) })
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		err = fdControl(f, func(fd int) error { return unix.Fsync(fd) })
	}
	if err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	return nil
}

// allocate extends f to size bytes of zeros with the blocks reserved
// (fallocate mode 0), so later writes below size change no file size. A
// file system without fallocate (EOPNOTSUPP) is left as it is: the
// preallocation is an optimisation, never needed for correctness.
func allocate(f *os.File, size int64) error {
	err := fdControl(f, func(fd int) error { return unix.Fallocate(fd, 0, 0, size) })
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
	return nil
}
