package vfs

import (
	"io"
	"os"
	"syscall"
)

// memFile is an open MemFS file. Its methods are safe for concurrent use;
// they serialize on the MemFS locks.
type memFile struct {
	fs       *MemFS
	n        *memNode
	name     string
	writable bool
	off      int64 // offset of the next Write; guarded by fs.mu
	closed   bool  // guarded by fs.mu
}

var (
	_ File = (*memFile)(nil)
	_ FS   = (*MemFS)(nil)
)

// check returns the error for op on f in its current state. Caller holds
// fs.mu.
func (f *memFile) check(op string, write bool) error {
	if f.closed {
		return pathErr(op, f.name, os.ErrClosed)
	}
	if write && !f.writable {
		return pathErr(op, f.name, syscall.EBADF)
	}
	return nil
}

// ReadAt reads from the file's current (not necessarily synced) contents.
func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.RLock()
	defer f.fs.mu.RUnlock()
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("read", f.name, syscall.EINVAL)
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt writes p at off, extending the file with zeros if off is past
// the end. The MemFS copies p.
func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	err := f.fs.mutate(OpWrite, f.name, "", func() error {
		if err := f.check("write", true); err != nil {
			return err
		}
		if off < 0 {
			return pathErr("write", f.name, syscall.EINVAL)
		}
		f.n.write(off, p)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Write writes p at the handle's offset and advances it.
func (f *memFile) Write(p []byte) (int, error) {
	err := f.fs.mutate(OpWrite, f.name, "", func() error {
		if err := f.check("write", true); err != nil {
			return err
		}
		f.n.write(f.off, p)
		f.off += int64(len(p))
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Sync makes the file's current contents durable (its name in its directory
// still needs SyncDir).
func (f *memFile) Sync() error {
	return f.fs.mutate(OpSync, f.name, "", func() error {
		if err := f.check("sync", false); err != nil {
			return err
		}
		f.n.sync()
		return nil
	})
}

// Truncate changes the file's size, adding zeros when it grows.
func (f *memFile) Truncate(size int64) error {
	return f.fs.mutate(OpTruncate, f.name, "", func() error {
		if err := f.check("truncate", true); err != nil {
			return err
		}
		if size < 0 {
			return pathErr("truncate", f.name, syscall.EINVAL)
		}
		f.n.truncate(size)
		return nil
	})
}

// Allocate grows the file to size with zeros, as fallocate does; a power
// loss before the next Sync may drop it like any other truncate.
func (f *memFile) Allocate(size int64) error {
	return f.fs.mutate(OpTruncate, f.name, "", func() error {
		if err := f.check("allocate", true); err != nil {
			return err
		}
		if size < 0 {
			return pathErr("allocate", f.name, syscall.EINVAL)
		}
		if size > int64(len(f.n.data)) {
			f.n.truncate(size)
		}
		return nil
	})
}

// Size returns the file's current size.
func (f *memFile) Size() (int64, error) {
	f.fs.mu.RLock()
	defer f.fs.mu.RUnlock()
	if err := f.check("stat", false); err != nil {
		return 0, err
	}
	return int64(len(f.n.data)), nil
}

// Close closes the handle; the file's state is unaffected (closing does not
// sync). A second Close returns os.ErrClosed.
func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("close", false); err != nil {
		return err
	}
	f.closed = true
	return nil
}
