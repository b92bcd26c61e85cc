package vfs

import (
	"io"
	"os"
)

// Default returns the FS backed by the operating system (package os). It is
// stateless and safe for concurrent use; every call returns an equivalent
// value. Errors are the ones package os returns (*fs.PathError and
// *os.LinkError), unwrapped, so os.IsNotExist and errors.Is hold on them.
func Default() FS { return osFS{} }

// Parked returns fs with its files' Sync and its Remove waiting parked, if
// fs is the OS file system (Default) on Linux, and fs itself otherwise.
// A parked call runs on an io_uring (uring_linux.go) and its caller waits
// in the runtime's poller, so a sync of several milliseconds does not hold
// a P (one of GOMAXPROCS) for its whole length, as a blocking system call
// does. The price is latency: the caller resumes when a P next polls,
// which on a busy process can be well after the call ends. A database
// whose commits do not wait for an fsync (DurabilityRelaxed) uses it.
func Parked(fs FS) FS {
	if o, ok := fs.(osFS); ok {
		o.parked = true
		return o
	}
	return fs
}

type osFS struct {
	parked bool // Parked: files sync, and Remove unlinks, through the ring
}

// osFile is an *os.File whose Sync is fdatasync where the OS has it.
type osFile struct {
	*os.File
	parked bool
}

func (f osFile) Sync() error { return datasync(f.File, f.parked) }

// Allocate is fallocate(2) on Linux (see Preallocate), a no-op elsewhere.
func (f osFile) Allocate(size int64) error { return allocate(f.File, size) }

func (f osFile) Size() (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (o osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f, o.parked}, nil
}

func (o osFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return osFile{f, o.parked}, nil
}

func (o osFS) OpenReadWrite(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	return osFile{f, o.parked}, nil
}

func (o osFS) Remove(name string) error                  { return remove(name, o.parked) }
func (osFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (osFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }
func (osFS) Stat(name string) (os.FileInfo, error)       { return os.Stat(name) }

// List returns the entry names of dir; os.ReadDir already sorts them.
func (osFS) List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, nil
}

// SyncDir fsyncs the directory itself, which makes the creates, renames and
// removes of its entries durable (fdatasync is not enough on every file
// system for directory metadata, so this is a full fsync).
func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := syncDir(d)
	cerr := d.Close()
	if serr != nil {
		return serr
	}
	return cerr
}

// Lock takes an exclusive flock on name (see lock_unix.go). The returned
// Closer releases the lock and closes the file; it is not safe to call Close
// concurrently with itself.
func (osFS) Lock(name string) (io.Closer, error) { return lockFile(name) }

// LockShared takes a shared flock on an existing name (see lock_unix.go).
func (osFS) LockShared(name string) (io.Closer, error) { return lockFileShared(name) }
