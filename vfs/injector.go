package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
)

// FaultKind is the failure an Injector makes up.
type FaultKind uint8

// The faults. FaultShortWrite on a write writes the first half of the
// buffer to the inner file and then fails with ENOSPC, as a write that fills
// the disk midway does; on any other operation it is plain ENOSPC.
const (
	FaultNone FaultKind = iota
	FaultEIO
	FaultENOSPC
	FaultShortWrite
)

var faultNames = [...]string{
	FaultNone:       "none",
	FaultEIO:        "EIO",
	FaultENOSPC:     "ENOSPC",
	FaultShortWrite: "short write",
}

// String returns the fault's name ("EIO", "short write").
func (k FaultKind) String() string {
	if int(k) < len(faultNames) {
		return faultNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", uint8(k))
}

// ErrInjected is wrapped by every error an Injector makes up, so a test can
// tell injected failures from real ones.
var ErrInjected = errors.New("vfs: injected fault")

// FaultError is the error an Injector returns for an operation it fails.
// errors.Is matches it against ErrInjected, its Err (syscall.EIO or
// syscall.ENOSPC) and, for a short write, io.ErrShortWrite.
type FaultError struct {
	Op      Op        // the failed operation, with the Injector's index
	Kind    FaultKind // the fault injected
	Err     error     // syscall.EIO or syscall.ENOSPC
	Written int       // bytes a short write passed to the inner file
}

// Error names the fault and the operation, e.g.
// "vfs: injected EIO at #7 sync /db/wal/0000.log: input/output error".
func (e *FaultError) Error() string {
	if e.Kind == FaultShortWrite && e.Op.Kind == OpWrite {
		return fmt.Sprintf("vfs: injected short write (%d bytes written) at %v: %v", e.Written, e.Op, e.Err)
	}
	return fmt.Sprintf("vfs: injected %v at %v: %v", e.Kind, e.Op, e.Err)
}

// Unwrap returns ErrInjected, Err and, for a short write, io.ErrShortWrite.
func (e *FaultError) Unwrap() []error {
	errs := []error{ErrInjected, e.Err}
	if e.Kind == FaultShortWrite && e.Op.Kind == OpWrite {
		errs = append(errs, io.ErrShortWrite)
	}
	return errs
}

// Injector is an FS that wraps another and fails chosen mutating operations
// (TESTING.md layer 6). It counts every mutating operation (create, write,
// sync, truncate, rename, remove, mkdir, syncdir) whether it succeeds or
// fails, in the order they reach the Injector, and fails the one SetFailAt
// names (and, if sticky, every later one). A test runs a workload once to
// learn Ops(), then once per i = 1..Ops() with a fresh Injector failing op i.
//
// Reads, Open, OpenReadWrite, List, Stat, Lock and Close pass through
// uncounted. A failed operation other than a short write never reaches the
// inner FS. An Injector is safe for concurrent use if the inner FS is;
// concurrent operations take indices in the order they arrive.
type Injector struct {
	inner FS

	mu     sync.Mutex // guards the fields below
	ops    int64      // operations counted so far
	failAt int64      // index of the operation to fail; 0 for none
	kind   FaultKind
	sticky bool  // fail every operation from failAt on
	faults int64 // operations failed so far
}

// NewInjector returns an Injector over inner that fails nothing until
// SetFailAt.
func NewInjector(inner FS) *Injector { return &Injector{inner: inner} }

// SetFailAt makes the i-th counted operation (1-based, counted since the
// Injector was made) fail with kind. i <= 0 or FaultNone disarms it.
func (in *Injector) SetFailAt(i int64, kind FaultKind) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if kind == FaultNone {
		i = 0
	}
	in.failAt, in.kind = i, kind
}

// SetSticky sets whether every operation after the failed one fails too,
// as a disk that failed often keeps failing. Later faults of a sticky short
// write are plain ENOSPC with nothing written.
func (in *Injector) SetSticky(sticky bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.sticky = sticky
}

// Ops returns how many mutating operations have been counted.
func (in *Injector) Ops() int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.ops
}

// Faults returns how many operations the Injector has failed.
func (in *Injector) Faults() int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.faults
}

// count numbers one operation and returns the fault to inject into it, or
// nil.
func (in *Injector) count(kind OpKind, name, to string) *FaultError {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.ops++
	if in.failAt <= 0 || in.ops < in.failAt || (in.ops > in.failAt && !in.sticky) {
		return nil
	}
	in.faults++
	fe := &FaultError{
		Op:   Op{Kind: kind, Path: name, To: to, Index: in.ops},
		Kind: in.kind,
		Err:  syscall.ENOSPC,
	}
	if fe.Kind == FaultEIO {
		fe.Err = syscall.EIO
	}
	if fe.Kind == FaultShortWrite && in.ops > in.failAt {
		fe.Kind = FaultENOSPC
	}
	return fe
}

// Create is counted; a failed Create creates nothing.
func (in *Injector) Create(name string) (File, error) {
	if fe := in.count(OpCreate, name, ""); fe != nil {
		return nil, fe
	}
	f, err := in.inner.Create(name)
	if err != nil {
		return nil, err
	}
	return &injFile{in: in, f: f, name: name}, nil
}

// Open passes through; the file's writes and syncs are counted.
func (in *Injector) Open(name string) (File, error) {
	f, err := in.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return &injFile{in: in, f: f, name: name}, nil
}

// OpenReadWrite passes through; the file's writes and syncs are counted.
func (in *Injector) OpenReadWrite(name string) (File, error) {
	f, err := in.inner.OpenReadWrite(name)
	if err != nil {
		return nil, err
	}
	return &injFile{in: in, f: f, name: name}, nil
}

// Remove is counted.
func (in *Injector) Remove(name string) error {
	if fe := in.count(OpRemove, name, ""); fe != nil {
		return fe
	}
	return in.inner.Remove(name)
}

// Rename is counted.
func (in *Injector) Rename(oldname, newname string) error {
	if fe := in.count(OpRename, oldname, newname); fe != nil {
		return fe
	}
	return in.inner.Rename(oldname, newname)
}

// MkdirAll is counted, once per call.
func (in *Injector) MkdirAll(dir string, perm os.FileMode) error {
	if fe := in.count(OpMkdir, dir, ""); fe != nil {
		return fe
	}
	return in.inner.MkdirAll(dir, perm)
}

// List passes through.
func (in *Injector) List(dir string) ([]string, error) { return in.inner.List(dir) }

// Stat passes through.
func (in *Injector) Stat(name string) (os.FileInfo, error) { return in.inner.Stat(name) }

// SyncDir is counted.
func (in *Injector) SyncDir(dir string) error {
	if fe := in.count(OpSyncDir, dir, ""); fe != nil {
		return fe
	}
	return in.inner.SyncDir(dir)
}

// Lock passes through.
func (in *Injector) Lock(name string) (io.Closer, error) { return in.inner.Lock(name) }

// LockShared passes through when the inner FS offers it; otherwise it
// fails with errors.ErrUnsupported.
func (in *Injector) LockShared(name string) (io.Closer, error) {
	if sl, ok := in.inner.(SharedLocker); ok {
		return sl.LockShared(name)
	}
	return nil, pathErr("lock", name, errors.ErrUnsupported)
}

// injFile counts the writes, syncs and truncates of an inner file. It is as
// safe for concurrent use as the inner file.
type injFile struct {
	in   *Injector
	f    File
	name string
}

var _ FS = (*Injector)(nil)

func (f *injFile) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }
func (f *injFile) Size() (int64, error)                    { return f.f.Size() }
func (f *injFile) Close() error                            { return f.f.Close() }

func (f *injFile) Write(p []byte) (int, error) {
	fe := f.in.count(OpWrite, f.name, "")
	if fe == nil {
		return f.f.Write(p)
	}
	if fe.Kind != FaultShortWrite {
		return 0, fe
	}
	n, err := f.f.Write(p[:len(p)/2])
	if err != nil {
		return n, err
	}
	fe.Written = n
	return n, fe
}

func (f *injFile) WriteAt(p []byte, off int64) (int, error) {
	fe := f.in.count(OpWrite, f.name, "")
	if fe == nil {
		return f.f.WriteAt(p, off)
	}
	if fe.Kind != FaultShortWrite {
		return 0, fe
	}
	n, err := f.f.WriteAt(p[:len(p)/2], off)
	if err != nil {
		return n, err
	}
	fe.Written = n
	return n, fe
}

func (f *injFile) Sync() error {
	if fe := f.in.count(OpSync, f.name, ""); fe != nil {
		return fe
	}
	return f.f.Sync()
}

func (f *injFile) Truncate(size int64) error {
	if fe := f.in.count(OpTruncate, f.name, ""); fe != nil {
		return fe
	}
	return f.f.Truncate(size)
}
