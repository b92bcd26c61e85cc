//go:build unix

package vfs

import (
	"errors"
	"os"
	"sync"
	"syscall"
)

// lockFile takes flock(LOCK_EX|LOCK_NB) on name. flock, unlike fcntl record
// locks, belongs to the open file description: a second open of the same file
// in this process conflicts too, and closing some other descriptor of the
// file does not silently drop the lock.
func lockFile(name string) (*osLock, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return flockFile(f, name, syscall.LOCK_EX)
}

// lockFileShared takes flock(LOCK_SH|LOCK_NB) on an existing name, opened
// read-only so that the lock writes nothing.
func lockFileShared(name string) (*osLock, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return flockFile(f, name, syscall.LOCK_SH)
}

func flockFile(f *os.File, name string, how int) (*osLock, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	var ferr error
	cerr := rc.Control(func(fd uintptr) {
		for {
			ferr = syscall.Flock(int(fd), how|syscall.LOCK_NB)
			if !errors.Is(ferr, syscall.EINTR) {
				return
			}
		}
	})
	if cerr == nil && ferr != nil {
		if errors.Is(ferr, syscall.EWOULDBLOCK) {
			cerr = &os.PathError{Op: "lock", Path: name, Err: ErrLocked}
		} else {
			cerr = &os.PathError{Op: "flock", Path: name, Err: ferr}
		}
	}
	if cerr != nil {
		f.Close()
		return nil, cerr
	}
	return &osLock{f: f}, nil
}

// osLock holds a flock until Close.
type osLock struct {
	once sync.Once
	f    *os.File
}

// Close closes the file, which releases the flock. A second Close returns
// os.ErrClosed.
func (l *osLock) Close() error {
	err := error(&os.PathError{Op: "unlock", Path: l.f.Name(), Err: os.ErrClosed})
	l.once.Do(func() { err = l.f.Close() })
	return err
}
