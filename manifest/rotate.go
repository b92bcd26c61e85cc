package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/bwkv/bwkv/failpoints"
)

// Rotate writes a new manifest file holding one snapshot of the State and
// makes it live, as a commit past the rotation threshold does. Errors are
// as for Commit.
func (m *Manifest) Rotate() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.usable(); err != nil {
		return err
	}
	if err := m.prepare(); err != nil {
		return err
	}
	return m.rotate(nil, nil)
}

// rotate writes MANIFEST-n (n = NextManifest) holding a snapshot of the
// State, with NextManifest = n+1, and then e's record if e is not nil;
// fsyncs it and the directory; points CURRENT at it (temp file, fsync,
// rename, directory fsync); then removes the old manifest.
//
// Until the rename, nothing the next Open reads has changed: on an error
// the new file is removed, the old one stays live, the Manifest stays
// usable, and e is not committed. From the rename on, the outcome is
// unknown until the directory fsync returns, so an error fails the
// Manifest. e is committed when rotate returns nil.
func (m *Manifest) rotate(e *Edit, payload []byte) error {
	num := max(m.state.NextManifest, m.live+1)
	snap := m.state.Snapshot()
	snap.Has |= HasNextManifest
	snap.NextManifest = num + 1
	buf := appendFrame(nil, snap.Encode(nil))
	snapSize := int64(len(buf))
	if snapSize-headerSize > maxPayload {
		return fmt.Errorf("manifest: rotate: snapshot of %d bytes exceeds the %d-byte record limit", snapSize-headerSize, maxPayload)
	}
	if e != nil {
		buf = appendFrame(buf, payload)
	}
	if m.live == 0 {
		if err := m.makeDir(); err != nil {
			return err
		}
	}

	path := m.path(num)
	f, err := m.fs.Create(path)
	if err != nil {
		return fmt.Errorf("manifest: rotate: create %s: %w", path, err)
	}
	abandon := func(err error) error {
		_ = f.Close()
		_ = m.fs.Remove(path)
		return fmt.Errorf("manifest: rotate to %s: %w", path, err)
	}
	if _, err := f.WriteAt(buf, 0); err != nil {
		return abandon(err)
	}
	if err := f.Sync(); err != nil {
		return abandon(err)
	}
	// The new file's directory entry is made durable before CURRENT can
	// name it, so no crash leaves CURRENT naming a missing file.
	if err := m.fs.SyncDir(m.dir); err != nil {
		return abandon(err)
	}
	if err := failpoints.Hit(failpoints.ManifestRotate); err != nil {
		return abandon(err)
	}
	if renamed, err := m.setCurrent(num); err != nil {
		if !renamed {
			return abandon(err)
		}
		_ = f.Close()
		return m.fail(fmt.Errorf("manifest: rotate to %s: %w", path, err))
	}

	old, oldF := m.live, m.f
	m.live, m.f, m.size, m.snapSize = num, f, int64(len(buf)), snapSize
	if oldF != nil {
		_ = oldF.Close() // read-write handle of a file we no longer use
	}
	if old != 0 {
		// Best effort: a leftover old file is never read (CURRENT names the
		// new one) and the next Prepare removes it.
		_ = m.fs.Remove(m.path(old))
	}
	m.applyDurable(e, true)
	return nil
}

// setCurrent points CURRENT at manifest num: it writes and fsyncs a
// temporary, renames it over CURRENT and fsyncs the directory. renamed
// reports whether the rename was attempted, after which an error leaves
// the outcome unknown.
func (m *Manifest) setCurrent(num uint64) (renamed bool, err error) {
	tmp := filepath.Join(m.dir, currentTemp)
	t, err := m.fs.Create(tmp)
	if err != nil {
		return false, fmt.Errorf("create %s: %w", tmp, err)
	}
	_, err = t.Write([]byte(manifestName(num) + "\n"))
	if err == nil {
		err = t.Sync()
	}
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = m.fs.Remove(tmp)
		return false, fmt.Errorf("write %s: %w", tmp, err)
	}
	current := filepath.Join(m.dir, currentName)
	if err := m.fs.Rename(tmp, current); err != nil {
		return true, fmt.Errorf("rename %s to %s: %w", tmp, current, err)
	}
	if err := m.fs.SyncDir(m.dir); err != nil {
		return true, fmt.Errorf("sync directory %s: %w", m.dir, err)
	}
	return true, nil
}

// makeDir creates the manifest's directory if it does not exist, making
// its entry in the parent durable.
func (m *Manifest) makeDir() error {
	_, err := m.fs.Stat(m.dir)
	if err == nil {
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("manifest: stat %s: %w", m.dir, err)
	}
	if err := m.fs.MkdirAll(m.dir, 0o755); err != nil {
		return fmt.Errorf("manifest: create directory %s: %w", m.dir, err)
	}
	if err := m.fs.SyncDir(filepath.Dir(m.dir)); err != nil {
		return fmt.Errorf("manifest: sync directory %s: %w", filepath.Dir(m.dir), err)
	}
	return nil
}
