package vfs

import (
	"errors"
	"io"
	"os"
)

// ErrLocked is wrapped by the error FS.Lock returns when another holder (this
// process through another call, or another process) already has the lock.
var ErrLocked = errors.New("vfs: locked by another holder")

// File is an open file. ReadAt and WriteAt may be called concurrently;
// Sync makes every write before it durable (fdatasync on the OS).
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	io.Closer
	// Sync makes the file's data durable.
	Sync() error
	// Truncate changes the size of the file.
	Truncate(size int64) error
	// Size returns the current size of the file.
	Size() (int64, error)
}

// FS is the file-system interface every engine file goes through, so that
// power-loss and I/O-error tests reach all of them. Paths are OS paths.
//
// Durability model (the crash-clone FS enforces it): a file's data is
// durable after File.Sync; a create, rename or remove is durable only after
// SyncDir on its parent directory.
type FS interface {
	// Create creates or truncates the named file for reading and writing.
	Create(name string) (File, error)
	// Open opens the named file read-only.
	Open(name string) (File, error)
	// OpenReadWrite opens an existing file for reading and writing.
	OpenReadWrite(name string) (File, error)
	// Remove removes the named file or empty directory.
	Remove(name string) error
	// Rename renames a file, replacing the target if it exists.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// List returns the names (not paths) of the entries in dir, sorted.
	List(dir string) ([]string, error)
	// Stat returns file info for the named file.
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the entries of dir (creates, renames, removes) durable.
	SyncDir(dir string) error
	// Lock takes an exclusive advisory lock on the named file, creating it if
	// needed, and fails at once if another holder has it. Close releases it.
	Lock(name string) (io.Closer, error)
}

// Allocator is implemented by files that can reserve space ahead of the
// writes that fill it: the OS file (fallocate on Linux) and MemFS files.
type Allocator interface {
	// Allocate grows the file to size bytes of zeros, with the space
	// reserved; a file already that large is unchanged. Like a write, it
	// is durable after Sync.
	Allocate(size int64) error
}

// Preallocate grows f to size bytes of zeros if f is an Allocator and does
// nothing otherwise. A log preallocates its segments so that a commit's
// fdatasync flushes data only, not a size change. A reader of a
// preallocated file must take a zero-filled tail for unwritten space.
func Preallocate(f File, size int64) error {
	if a, ok := f.(Allocator); ok {
		return a.Allocate(size)
	}
	return nil
}

// SharedLocker is implemented by file systems that offer a shared lock,
// which read-only opens take: any number of shared holders may coexist,
// and a shared holder and an exclusive one exclude each other.
type SharedLocker interface {
	// LockShared takes a shared advisory lock on the named file, which must
	// exist (it is never created, so a reader writes nothing), and fails at
	// once with an error wrapping ErrLocked if an exclusive holder has it.
	LockShared(name string) (io.Closer, error)
}
