//go:build unix

package vfs

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// fdControl runs fn on f's descriptor, retrying on EINTR.
func fdControl(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	cerr := rc.Control(func(fd uintptr) {
		for {
			ferr = fn(int(fd))
			if !errors.Is(ferr, unix.EINTR) {
				return
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	return ferr
}

// syncDir fsyncs the directory itself: a create, rename or remove in it
// changes its metadata, which fdatasync need not flush.
func syncDir(d *os.File) error {
	if err := fdControl(d, unix.Fsync); err != nil {
		return &os.PathError{Op: "fsync", Path: d.Name(), Err: err}
	}
	return nil
}

// lockFile takes flock(LOCK_EX|LOCK_NB) on name, creating it if needed.
func lockFile(name string) (*osLock, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return flockFile(f, name, unix.LOCK_EX)
}

// lockFileShared takes flock(LOCK_SH|LOCK_NB) on an existing name, opened
// read-only so that the lock writes nothing.
func lockFileShared(name string) (*osLock, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return flockFile(f, name, unix.LOCK_SH)
}

// flockFile takes flock(how|LOCK_NB) on f; a held conflicting lock fails
// at once with ErrLocked.
func flockFile(f *os.File, name string, how int) (*osLock, error) {
	err := fdControl(f, func(fd int) error { return unix.Flock(fd, how|unix.LOCK_NB) })
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &os.PathError{Op: "lock", Path: name, Err: ErrLocked}
		}
		return nil, &os.PathError{Op: "flock", Path: name, Err: err}
	}
	return &osLock{f: f}, nil
}

// osLock holds the locked file open; closing it releases the flock.
type osLock struct {
	once sync.Once
	f    *os.File
}

// Close releases the lock. A second Close returns an error wrapping
// os.ErrClosed.
func (l *osLock) Close() error {
	err := error(&os.PathError{Op: "unlock", Path: l.f.Name(), Err: os.ErrClosed})
	l.once.Do(func() { err = l.f.Close() })
	return err
}
