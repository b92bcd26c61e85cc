package vfs

import (
	"errors"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory FS that models what a power loss keeps, for crash
// tests (TESTING.md layer 5). It is safe for concurrent use.
//
// Each file keeps its current contents, its contents as of the last
// File.Sync, and the writes and truncates made since, in order. Each
// directory keeps its current entries and its entries as of the last SyncDir.
// CrashClone builds from these the state a power loss would leave.
//
// Paths are cleaned and resolved from a root that always exists: "a/b",
// "/a/b" and "/a/./b" name the same file. There are no symlinks, and
// permissions are recorded but not enforced. Create needs the parent
// directory to exist, as on the OS; Open of a directory fails with EISDIR.
// Errors are *fs.PathError values wrapping syscall errnos (ENOENT, ENOTDIR,
// EISDIR, ENOTEMPTY, EBADF, EINVAL), so os.IsNotExist and errors.Is with
// fs.ErrNotExist hold for missing files.
//
// Every successful mutating operation (create, write, sync, truncate,
// rename, remove, mkdir, syncdir) is counted and reported to the hook set
// with SetHook. Lock is neither counted nor reported.
type MemFS struct {
	// opMu serializes the mutating operations, each together with the hook
	// call that follows it, so a hook sees exactly the state after its
	// operation. Taken before mu.
	opMu sync.Mutex

	mu   sync.RWMutex // guards the fields below and every memNode and memFile
	root *memNode
	ops  int64    // mutating operations counted so far
	hook func(Op) // called after each counted operation; nil for none
}

// NewMem returns an empty MemFS holding only its root directory.
func NewMem() *MemFS {
	return &MemFS{root: newMemDir(os.ModeDir | 0o755)}
}

// memNode is a file or a directory (an inode: renames and hard links left by
// a crash share it). All fields are guarded by MemFS.mu.
type memNode struct {
	mode os.FileMode // os.ModeDir set for a directory

	// Files.
	data    []byte     // current contents
	synced  []byte     // contents as of the last File.Sync; never aliases data
	pending []memWrite // writes and truncates since the last Sync, in order
	locked  bool       // held through Lock
	shared  int        // holders through LockShared

	// Directories.
	children       map[string]*memNode // current entries
	syncedChildren map[string]*memNode // entries as of the last SyncDir
}

func newMemDir(mode os.FileMode) *memNode {
	return &memNode{
		mode:           mode,
		children:       map[string]*memNode{},
		syncedChildren: map[string]*memNode{},
	}
}

func (n *memNode) isDir() bool { return n.mode.IsDir() }

// memWrite is one unsynced change to a file: a write of data at off, or,
// with trunc, a truncate to size off.
type memWrite struct {
	off   int64
	data  []byte // owned: a copy of the caller's buffer
	trunc bool
}

func (w memWrite) apply(b []byte) []byte {
	if w.trunc {
		return resize(b, w.off)
	}
	return writeAt(b, w.off, w.data)
}

// resize sets len(b) to size; bytes it adds are zero even if b's spare
// capacity holds old contents from before a shrink.
func resize(b []byte, size int64) []byte {
	n := int(size)
	if n <= len(b) {
		return b[:n]
	}
	old := len(b)
	b = slices.Grow(b, n-old)[:n]
	clear(b[old:])
	return b
}

func writeAt(b []byte, off int64, p []byte) []byte {
	if end := off + int64(len(p)); end > int64(len(b)) {
		b = resize(b, end)
	}
	copy(b[off:], p)
	return b
}

func (n *memNode) write(off int64, p []byte) {
	if len(p) == 0 {
		return
	}
	n.data = writeAt(n.data, off, p)
	n.pending = append(n.pending, memWrite{off: off, data: slices.Clone(p)})
}

func (n *memNode) truncate(size int64) {
	n.data = resize(n.data, size)
	n.pending = append(n.pending, memWrite{off: size, trunc: true})
}

// sync replays the pending changes onto synced rather than copying data, so
// its cost is the unsynced bytes, not the file size.
func (n *memNode) sync() {
	for _, w := range n.pending {
		n.synced = w.apply(n.synced)
	}
	clear(n.pending)
	n.pending = n.pending[:0]
}

// errNoop tells mutate that fn succeeded without changing anything, so the
// operation is not counted.
var errNoop = errors.New("vfs: no-op")

// mutate runs fn as one mutating operation: under both locks, counting it
// and calling the hook (with only opMu held) if fn succeeds.
func (m *MemFS) mutate(kind OpKind, name, to string, fn func() error) error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	m.mu.Lock()
	err := fn()
	var hook func(Op)
	var op Op
	if err == nil {
		m.ops++
		op = Op{Kind: kind, Path: name, To: to, Index: m.ops}
		hook = m.hook
	}
	m.mu.Unlock()
	if err == errNoop {
		return nil
	}
	if hook != nil {
		hook(op)
	}
	return err
}

// SetHook sets the function called after every counted mutating operation
// (nil removes it). The hook runs with the operation complete and before
// any other mutating operation starts, so CrashClone inside the hook for
// the operation with Index k yields the state of a power loss right after
// the k-th operation; sweeping k = 1..Ops() of a workload visits every
// crash point. The hook may read the MemFS and call CrashClone, Ops and
// SetHook, but must not call its mutating methods (they would deadlock).
func (m *MemFS) SetHook(hook func(op Op)) {
	m.mu.Lock()
	m.hook = hook
	m.mu.Unlock()
}

// Ops returns how many mutating operations have succeeded so far.
func (m *MemFS) Ops() int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.ops
}

func pathErr(op, name string, err error) error {
	return &os.PathError{Op: op, Path: name, Err: err}
}

// splitPath returns the components of name below the root.
func splitPath(name string) []string {
	p := path.Clean("/" + filepath.ToSlash(name))
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

// walk returns the node at parts. Caller holds mu.
func (m *MemFS) walk(parts []string) (*memNode, error) {
	n := m.root
	for _, p := range parts {
		if !n.isDir() {
			return nil, syscall.ENOTDIR
		}
		c := n.children[p]
		if c == nil {
			return nil, syscall.ENOENT
		}
		n = c
	}
	return n, nil
}

// lookup returns the node named name. Caller holds mu.
func (m *MemFS) lookup(op, name string) (*memNode, error) {
	n, err := m.walk(splitPath(name))
	if err != nil {
		return nil, pathErr(op, name, err)
	}
	return n, nil
}

// parent returns the directory that holds name and name's last component,
// or a bare errno. Caller holds mu.
func (m *MemFS) parent(name string) (*memNode, string, error) {
	parts := splitPath(name)
	if len(parts) == 0 {
		return nil, "", syscall.EINVAL // the root has no parent
	}
	d, err := m.walk(parts[:len(parts)-1])
	if err == nil && !d.isDir() {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, "", err
	}
	return d, parts[len(parts)-1], nil
}

// Create creates or truncates the named file. Truncating an existing file
// keeps its identity (open handles see it), as O_TRUNC does.
func (m *MemFS) Create(name string) (File, error) {
	var f *memFile
	err := m.mutate(OpCreate, name, "", func() error {
		d, base, err := m.parent(name)
		if err != nil {
			return pathErr("open", name, err)
		}
		n := d.children[base]
		switch {
		case n == nil:
			n = &memNode{mode: 0o644}
			d.children[base] = n
		case n.isDir():
			return pathErr("open", name, syscall.EISDIR)
		default:
			n.truncate(0)
		}
		f = &memFile{fs: m, n: n, name: name, writable: true}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (m *MemFS) open(name string, writable bool) (File, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.lookup("open", name)
	if err != nil {
		return nil, err
	}
	if n.isDir() {
		return nil, pathErr("open", name, syscall.EISDIR)
	}
	return &memFile{fs: m, n: n, name: name, writable: writable}, nil
}

// Open opens the named file read-only.
func (m *MemFS) Open(name string) (File, error) { return m.open(name, false) }

// OpenReadWrite opens an existing file for reading and writing.
func (m *MemFS) OpenReadWrite(name string) (File, error) { return m.open(name, true) }

// Remove removes the named file or empty directory. Open handles keep
// working on the removed file.
func (m *MemFS) Remove(name string) error {
	return m.mutate(OpRemove, name, "", func() error {
		d, base, err := m.parent(name)
		if err != nil {
			return pathErr("remove", name, err)
		}
		n := d.children[base]
		if n == nil {
			return pathErr("remove", name, syscall.ENOENT)
		}
		if n.isDir() && len(n.children) > 0 {
			return pathErr("remove", name, syscall.ENOTEMPTY)
		}
		delete(d.children, base)
		return nil
	})
}

// Rename renames a file or directory, replacing a target file (or empty
// directory, for a directory) as rename(2) does.
func (m *MemFS) Rename(oldname, newname string) error {
	return m.mutate(OpRename, oldname, newname, func() error {
		lerr := func(err error) error {
			return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
		}
		od, ob, err := m.parent(oldname)
		if err != nil {
			return lerr(err)
		}
		n := od.children[ob]
		if n == nil {
			return lerr(syscall.ENOENT)
		}
		nd, nb, err := m.parent(newname)
		if err != nil {
			return lerr(err)
		}
		t := nd.children[nb]
		if t == n {
			return nil // the same name, or two links to one file: rename(2) does nothing
		}
		if t != nil {
			switch {
			case t.isDir() && !n.isDir():
				return lerr(syscall.EISDIR)
			case !t.isDir() && n.isDir():
				return lerr(syscall.ENOTDIR)
			case t.isDir() && len(t.children) > 0:
				return lerr(syscall.ENOTEMPTY)
			}
		}
		if n.isDir() {
			// No directory may move below itself. Without symlinks or
			// directory hard links a path prefix test is exact.
			op, np := splitPath(oldname), splitPath(newname)
			if len(np) > len(op) && slices.Equal(np[:len(op)], op) {
				return lerr(syscall.EINVAL)
			}
		}
		delete(od.children, ob)
		nd.children[nb] = n
		return nil
	})
}

// MkdirAll creates dir and any missing parents with mode perm. A call that
// creates nothing is not counted as an operation.
func (m *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	return m.mutate(OpMkdir, dir, "", func() error {
		n, created := m.root, false
		for _, p := range splitPath(dir) {
			c := n.children[p]
			if c == nil {
				c = newMemDir(os.ModeDir | perm.Perm())
				n.children[p] = c
				created = true
			} else if !c.isDir() {
				return pathErr("mkdir", dir, syscall.ENOTDIR)
			}
			n = c
		}
		if !created {
			return errNoop
		}
		return nil
	})
}

// List returns the sorted names of dir's current entries. The slice is the
// caller's.
func (m *MemFS) List(dir string) ([]string, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.lookup("open", dir)
	if err != nil {
		return nil, err
	}
	if !n.isDir() {
		return nil, pathErr("readdirent", dir, syscall.ENOTDIR)
	}
	return slices.Sorted(maps.Keys(n.children)), nil
}

// Stat returns the current size and mode of the named file. ModTime is
// always the zero time.
func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	base := path.Base(path.Clean("/" + filepath.ToSlash(name)))
	return memFileInfo{name: base, size: int64(len(n.data)), mode: n.mode}, nil
}

// SyncDir makes dir's current entries durable. It does not make dir's own
// entry in its parent durable, nor any file's data.
func (m *MemFS) SyncDir(dir string) error {
	return m.mutate(OpSyncDir, dir, "", func() error {
		n, err := m.lookup("sync", dir)
		if err != nil {
			return err
		}
		if !n.isDir() {
			return pathErr("sync", dir, syscall.ENOTDIR)
		}
		n.syncedChildren = maps.Clone(n.children)
		return nil
	})
}

// Lock locks the named file, creating it if missing (that create is neither
// counted nor durable until SyncDir). The lock belongs to the file, not the
// name, and lives in this MemFS only: a CrashClone starts unlocked, as a
// rebooted machine does. A second Lock fails with an error wrapping
// ErrLocked until the Closer is closed.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent(name)
	if err != nil {
		return nil, pathErr("lock", name, err)
	}
	n := d.children[base]
	if n == nil {
		n = &memNode{mode: 0o644}
		d.children[base] = n
	}
	if n.isDir() {
		return nil, pathErr("lock", name, syscall.EISDIR)
	}
	if n.locked || n.shared > 0 {
		return nil, pathErr("lock", name, ErrLocked)
	}
	n.locked = true
	return &memLock{fs: m, n: n, name: name}, nil
}

// LockShared takes a shared lock on an existing file: it fails with
// fs.ErrNotExist if the file is missing and with ErrLocked while an
// exclusive Lock holds it.
func (m *MemFS) LockShared(name string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent(name)
	if err != nil {
		return nil, pathErr("lock", name, err)
	}
	n := d.children[base]
	if n == nil {
		return nil, pathErr("lock", name, os.ErrNotExist)
	}
	if n.isDir() {
		return nil, pathErr("lock", name, syscall.EISDIR)
	}
	if n.locked {
		return nil, pathErr("lock", name, ErrLocked)
	}
	n.shared++
	return &memLock{fs: m, n: n, name: name, shared: true}, nil
}

type memLock struct {
	fs     *MemFS
	n      *memNode
	name   string
	shared bool
	done   bool // guarded by fs.mu
}

// Close releases the lock; a second Close returns os.ErrClosed.
func (l *memLock) Close() error {
	l.fs.mu.Lock()
	defer l.fs.mu.Unlock()
	if l.done {
		return pathErr("unlock", l.name, os.ErrClosed)
	}
	l.done = true
	if l.shared {
		l.n.shared--
	} else {
		l.n.locked = false
	}
	return nil
}

type memFileInfo struct {
	name string
	size int64
	mode os.FileMode
}

func (fi memFileInfo) Name() string       { return fi.name }
func (fi memFileInfo) Size() int64        { return fi.size }
func (fi memFileInfo) Mode() os.FileMode  { return fi.mode }
func (fi memFileInfo) ModTime() time.Time { return time.Time{} }
func (fi memFileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi memFileInfo) Sys() any           { return nil }
