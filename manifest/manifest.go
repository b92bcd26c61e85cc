package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bwkv/bwkv/failpoints"
	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/vfs"
)

// DefaultRotateBytes is the log size past which a commit rotates the
// manifest, unless twice the live file's snapshot is larger.
const DefaultRotateBytes = 4 << 20

// Manifest is the writer of one directory's manifest. Commits are
// serialized by the Manifest; State, FileOf and Stats are safe to call
// concurrently with them and with each other.
type Manifest struct {
	fs  vfs.FS
	dir string

	// mu serializes the writer (Commit, Rotate, Prepare, SetRotateBytes,
	// Close) and guards the fields below up to stateMu. It is held across
	// file I/O; readers never take it.
	mu          sync.Mutex
	live        uint64   // number of the live MANIFEST file; 0 = none yet
	f           vfs.File // the live file, open for appending once prepared
	size        int64    // end of the last valid record: the next append offset
	openSize    int64    // size of the live file when Open read it
	snapSize    int64    // frame size of the live file's first record
	prepared    bool     // torn tail truncated and orphans removed
	failed      error    // sticky: set when a commit's outcome is unknown
	closed      bool
	rotateBytes int64

	// stateMu guards state and stats against concurrent readers. The writer
	// changes them holding both mu and stateMu; it reads them holding mu.
	stateMu sync.RWMutex
	state   *State // the durable state: only commits whose fsync returned
	stats   Stats
	// copies counts State calls (each an O(pages + files) copy).
	copies atomic.Int64

	// ranges publishes state's current range slice (immutable once stored)
	// to FileOf without a lock.
	ranges atomic.Pointer[[]Range]
}

// Stats describes a Manifest. It is a plain value.
type Stats struct {
	// File is the path of the live manifest file; empty before the first
	// commit of a new manifest.
	File string
	// Size is the byte size of the live file's valid records.
	Size int64
	// Commits and Rotations count successful calls since Open.
	Commits   int64
	Rotations int64
	// TornBytes is the size of the torn last record Open ignored (Prepare
	// truncates it).
	TornBytes int64
	// StateCopies counts State calls since Open: each copies the whole
	// state, so the engine's steady work (checkpoints, GC rounds) makes
	// none and uses the point lookups instead.
	StateCopies int64
}

// Open reads the manifest in dir: CURRENT, then every record of the
// manifest file it names. It writes nothing (see Prepare) and holds no file
// open, so an Open that fails, or whose result the caller rejects, leaves
// the directory unchanged.
//
// Without CURRENT, Open returns ErrNotExist (wrapped) when create is
// false, and otherwise an empty State (NewState) whose first Commit creates
// the directory and the files. A CURRENT that names a missing file, a
// damaged record followed by valid ones, or a record that fails to decode
// or apply returns a *base.CorruptionError; a record of a newer format returns
// an error wrapping base.ErrVersion. A torn last record is ignored.
//
// The returned State is a private copy the caller owns.
func Open(fsys vfs.FS, dir string, create bool) (*Manifest, *State, error) {
	m := &Manifest{fs: fsys, dir: dir, rotateBytes: DefaultRotateBytes}
	num, err := readCurrent(fsys, dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := checkNoCurrent(fsys, dir); err != nil {
			return nil, nil, err
		}
		if !create {
			return nil, nil, fmt.Errorf("manifest: open %s: %w", dir, ErrNotExist)
		}
		m.state = NewState()
	case err != nil:
		return nil, nil, err
	default:
		path := m.path(num)
		data, err := readFile(fsys, path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, &base.CorruptionError{File: path, Offset: -1, Reason: "named by CURRENT but missing"}
		}
		if err != nil {
			return nil, nil, fmt.Errorf("manifest: read %s: %w", path, err)
		}
		st, info, err := replay(data, path)
		if err != nil {
			return nil, nil, err
		}
		if st.NextManifest <= num {
			// Every manifest file starts with a snapshot naming the next
			// number; an empty or foreign file does not.
			return nil, nil, &base.CorruptionError{File: path, Offset: 0,
				Reason: fmt.Sprintf("next manifest number %d is not above the file's own number %d", st.NextManifest, num)}
		}
		m.live, m.state = num, st
		m.size, m.openSize, m.snapSize = info.validEnd, int64(len(data)), info.snapSize
		m.stats = Stats{File: path, Size: info.validEnd, TornBytes: info.torn}
	}
	m.publishRanges()
	return m, m.state.Clone(), nil
}

// path returns the path of manifest number num.
func (m *Manifest) path(num uint64) string {
	return filepath.Join(m.dir, manifestName(num))
}

// publishRanges makes the state's range slice visible to FileOf.
func (m *Manifest) publishRanges() {
	rs := m.state.ranges
	m.ranges.Store(&rs)
}

// usable returns the error every writer method returns once the Manifest
// is closed or failed.
func (m *Manifest) usable() error {
	if m.closed {
		return ErrClosed
	}
	if m.failed != nil {
		return fmt.Errorf("manifest: unusable after an earlier failure: %w", m.failed)
	}
	return nil
}

// fail makes err sticky: every later writer call returns it. It is used
// whenever the durable outcome of a write is unknown, since a failed fsync
// is never retried and trusted.
func (m *Manifest) fail(err error) error {
	m.failed = fmt.Errorf("%w: %w", ErrFailed, err)
	return m.failed
}

// SetRotateBytes sets the log size past which a commit rotates; n <= 0
// restores DefaultRotateBytes. Tests use small values.
func (m *Manifest) SetRotateBytes(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n <= 0 {
		n = DefaultRotateBytes
	}
	m.rotateBytes = n
}

// Commit makes e durable and applies it to the Manifest's State. It
// validates e first (State.Apply's rules; an edit may not set
// NextManifest): an invalid edit returns an error wrapping a
// *base.CorruptionError and changes nothing. A valid edit is appended as one
// record and fsynced; the State changes, and Commit returns nil, only once
// the record is durable.
//
// When the live file has grown past the rotation threshold (SetRotateBytes,
// or twice its snapshot), the commit instead writes a new manifest file
// holding a snapshot of the State followed by e, and switches CURRENT to
// it (see rotate). The first commit of a new manifest does the same.
//
// An error whose durable outcome is unknown (a failed write, fsync or
// rename) leaves the Manifest failed: that commit is in doubt until the
// next Open, and every later Commit returns the error. Commit prepares the
// directory first if Prepare was not called. e is not retained.
func (m *Manifest) Commit(e *Edit) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.usable(); err != nil {
		return err
	}
	if e.Has&HasNextManifest != 0 {
		return errors.New("manifest: commit: NextManifest belongs to the manifest's own rotation")
	}
	if err := m.state.check(e); err != nil {
		return fmt.Errorf("manifest: commit rejected: %w", err)
	}
	payload := e.Encode(nil)
	if len(payload) > maxPayload {
		return fmt.Errorf("manifest: commit: edit of %d bytes exceeds the %d-byte record limit", len(payload), maxPayload)
	}
	if err := m.prepare(); err != nil {
		return err
	}
	if m.live == 0 || m.size >= max(m.rotateBytes, 2*m.snapSize) {
		return m.rotate(e, payload)
	}
	frame := appendFrame(nil, payload)
	path := m.path(m.live)
	if _, err := m.f.WriteAt(frame, m.size); err != nil {
		return m.fail(fmt.Errorf("manifest: append to %s at %d: %w", path, m.size, err))
	}
	err := failpoints.Hit(failpoints.ManifestAppend)
	if err == nil {
		err = m.f.Sync()
	}
	if err != nil {
		return m.fail(fmt.Errorf("manifest: sync %s: %w", path, err))
	}
	m.size += int64(len(frame))
	m.applyDurable(e, false)
	return nil
}

// applyDurable applies edits already validated and made durable, under
// stateMu, and publishes the ranges.
func (m *Manifest) applyDurable(e *Edit, rotated bool) {
	m.stateMu.Lock()
	defer m.stateMu.Unlock()
	if rotated {
		m.state.NextManifest = max(m.state.NextManifest, m.live+1)
		m.stats.Rotations++
		m.stats.File = m.path(m.live)
	}
	if e != nil {
		// check accepted e against this state (rotation only raised
		// NextManifest, which e may not touch), so mutate cannot fail.
		m.state.mutate(e)
		m.stats.Commits++
	}
	m.stats.Size = m.size
	m.publishRanges()
}

// Prepare makes the Manifest ready to write, the first mutation of the
// directory: it truncates a torn last record and fsyncs the file, and
// removes manifest files other than the live one and a leftover CURRENT
// temporary (both harmless leftovers of an interrupted rotation). Commit
// calls it when needed; the caller may call it earlier, once it has
// validated everything it read.
func (m *Manifest) Prepare() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.usable(); err != nil {
		return err
	}
	return m.prepare()
}

func (m *Manifest) prepare() error {
	if m.prepared {
		return nil
	}
	if m.live != 0 {
		path := m.path(m.live)
		f, err := m.fs.OpenReadWrite(path)
		if err != nil {
			return fmt.Errorf("manifest: open %s for writing: %w", path, err)
		}
		size, err := f.Size()
		if err == nil && size != m.openSize {
			err = fmt.Errorf("size %d, but %d when read at open", size, m.openSize)
		}
		if err == nil && size > m.size {
			if err = f.Truncate(m.size); err == nil {
				err = f.Sync()
			}
		}
		if err != nil {
			_ = f.Close()
			return m.fail(fmt.Errorf("manifest: prepare %s: %w", path, err))
		}
		m.f = f
	}
	m.removeOrphans()
	m.prepared = true
	return nil
}

// removeOrphans removes manifest files other than the live one and the
// CURRENT temporary. It is best effort: a leftover is harmless, since only
// CURRENT names the live file, and is retried at the next Open's Prepare.
func (m *Manifest) removeOrphans() {
	names, err := m.fs.List(m.dir)
	if err != nil {
		return
	}
	for _, name := range names {
		if num, ok := parseManifestName(name); (ok && num != m.live) || name == currentTemp {
			_ = m.fs.Remove(filepath.Join(m.dir, name))
		}
	}
}

// State returns a copy of the durable state, which the caller owns. It is
// safe to call concurrently with Commit and costs O(pages + files); hot
// paths use FileOf instead.
func (m *Manifest) State() *State {
	m.copies.Add(1)
	m.stateMu.RLock()
	defer m.stateMu.RUnlock()
	return m.state.Clone()
}

// Files returns the durable state's data files, retired files and stage
// mark: what a GC round looks at first, without State's O(pages) copy.
// The caller owns the returned slices. Safe to call concurrently with
// Commit.
func (m *Manifest) Files() (files []FileMeta, pending []FileID, stage FileID) {
	m.stateMu.RLock()
	defer m.stateMu.RUnlock()
	for id := range m.state.PendingDeletes {
		pending = append(pending, id)
	}
	slices.Sort(pending)
	return m.state.FileList(), pending, m.state.StageFile
}

// FileBytes returns the frame bytes and the live bytes of every data file
// of the durable state, summed: O(files), without copying the file list.
func (m *Manifest) FileBytes() (total, live int64) {
	m.stateMu.RLock()
	defer m.stateMu.RUnlock()
	for _, f := range m.state.Files {
		total += f.Total
		live += f.Live
	}
	return total, live
}

// FileOf returns the data file holding logical address addr in the durable
// state, in O(log ranges) without locks; it is safe to call concurrently
// with everything.
func (m *Manifest) FileOf(addr uint64) (FileID, bool) {
	return fileOf(*m.ranges.Load(), addr)
}

// Stats returns the Manifest's counters.
func (m *Manifest) Stats() Stats {
	m.stateMu.RLock()
	defer m.stateMu.RUnlock()
	s := m.stats
	s.StateCopies = m.copies.Load()
	return s
}

// Close closes the live file. Later writer calls return ErrClosed; State,
// FileOf and Stats keep working. Closing twice returns nil.
func (m *Manifest) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	if m.f == nil {
		return nil
	}
	err := m.f.Close()
	m.f = nil
	if err != nil {
		return fmt.Errorf("manifest: close %s: %w", m.path(m.live), err)
	}
	return nil
}
