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
// get fsync. Parked, it goes through the ring (Parked).
func datasync(f *os.File, parked bool) error {
	err := fdControl(f, func(fd int) error { return ringSync(fd, true, parked) })
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		err = fdControl(f, func(fd int) error { return ringSync(fd, false, parked) })
	}
	if err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	return nil
}

// ringSync is fdatasync(2) (datasync) or fsync(2) of fd; parked, through
// the process's io_uring where there is one (uring_linux.go), so that the
// waiting goroutine does not hold its P.
func ringSync(fd int, datasync, parked bool) error {
	if r := sharedRing(); parked && r != nil {
		ok, err := r.sync(fd, datasync)
		// EINVAL may mean that this kernel's ring lacks the operation
		// (or that fd cannot be synced): the system call decides.
		if ok && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EOPNOTSUPP) && !errors.Is(err, unix.ENOSYS) {
			return err
		}
	}
	if datasync {
		return unix.Fdatasync(fd)
	}
	return unix.Fsync(fd)
}

// remove is os.Remove; parked, a file's unlink goes through the ring
// where there is one (a directory, or a kernel whose ring lacks unlinkat,
// takes os.Remove).
func remove(name string, parked bool) error {
	if r := sharedRing(); parked && r != nil {
		ok, err := r.unlink(name)
		switch {
		case !ok, errors.Is(err, unix.EISDIR), errors.Is(err, unix.EINVAL), errors.Is(err, unix.EPERM):
		case err != nil:
			return &os.PathError{Op: "remove", Path: name, Err: err}
		default:
			return nil
		}
	}
	return os.Remove(name)
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
