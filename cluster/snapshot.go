package cluster

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bwkv/bwkv"
	"github.com/hashicorp/raft"
)

// Snapshots. A raft snapshot of the FSM is a bwkv backup stream of its
// database (Snapshot.WriteTo: streamed from an iterator, never a full copy
// in memory), and installing one builds a fresh database with
// bwkv.Restore in a new generation directory and swaps it in by rewriting
// the CURRENT file (write to a temporary file, sync, rename, sync the
// directory): a crash leaves either the old or the new database current,
// and Open removes the other.
//
// The applied index travels inside the stream (it is a key of the
// database), so a restored FSM knows which entries it holds.

const (
	currentFile = "CURRENT"
	genPrefix   = "db-"
)

func genDir(dir string, gen uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%s%06d", genPrefix, gen))
}

// prepareGenerations returns the current generation, creating dir and
// CURRENT on first use, and removes any other generation and restore
// leftovers (a swap that crashed before or after its rename).
func prepareGenerations(dir string) (uint64, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	var gen uint64 = 1
	b, err := os.ReadFile(filepath.Join(dir, currentFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := writeCurrent(dir, gen); err != nil {
			return 0, err
		}
	case err != nil:
		return 0, err
	default:
		gen, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || gen == 0 {
			return 0, fmt.Errorf("%s holds %q: %w", currentFile, b, bwkv.ErrCorruption)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	keep := filepath.Base(genDir(dir, gen))
	for _, e := range ents {
		n := e.Name()
		if n != keep && (strings.HasPrefix(n, genPrefix) || strings.HasPrefix(n, "."+genPrefix)) {
			if err := os.RemoveAll(filepath.Join(dir, n)); err != nil {
				return 0, err
			}
		}
	}
	return gen, nil
}

// writeCurrent durably points CURRENT at generation gen.
func writeCurrent(dir string, gen uint64) error {
	tmp := filepath.Join(dir, currentFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%d\n", gen)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, currentFile))
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", currentFile, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Snapshot captures the FSM's state at the last applied entry: an O(1)
// bwkv snapshot, streamed later by Persist while Apply goes on.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, ErrClosed
	}
	if err := f.err(); err != nil {
		return nil, err
	}
	s, err := f.db.NewSnapshot()
	if err != nil {
		return nil, fmt.Errorf("cluster: fsm snapshot: %w", err)
	}
	return &fsmSnapshot{f: f, db: f.db, snap: s}, nil
}

type fsmSnapshot struct {
	f    *FSM
	db   *bwkv.DB
	snap *bwkv.Snapshot
}

// Persist syncs the database, then streams the snapshot into the sink.
// The sync is what lets the FSM run with relaxed durability: raft deletes
// log entries up to this snapshot's index once Persist succeeds, and from
// then on only the database holds them.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	err := s.persist(sink)
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("cluster: persist snapshot: %w", err)
	}
	return nil
}

func (s *fsmSnapshot) persist(sink closeWriter) error {
	s.f.mu.RLock()
	defer s.f.mu.RUnlock()
	if s.f.closed || s.f.db != s.db {
		return errors.New("the database was closed or replaced since the snapshot")
	}
	if err := s.db.Sync(); err != nil {
		return err
	}
	if _, err := s.snap.WriteTo(sink); err != nil {
		return err
	}
	return sink.Close()
}

// Release ends the bwkv snapshot.
func (s *fsmSnapshot) Release() { _ = s.snap.Close() }

// Restore replaces the FSM's state with a snapshot stream: the new
// database is built beside the current one with bwkv.Restore, then
// swapped in (see the comment at the top of this file). Readers wait for
// the swap only, not for the restore.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	f.mu.RLock()
	gen, closed := f.gen, f.closed
	f.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	next := gen + 1
	dir := genDir(f.dir, next)
	if err := os.RemoveAll(dir); err != nil { // a leftover of a failed restore
		return fmt.Errorf("cluster: restore snapshot: %w", err)
	}
	if err := bwkv.Restore(dir, rc, f.opts); err != nil {
		return fmt.Errorf("cluster: restore snapshot: %w", err)
	}
	db, err := bwkv.Open(dir, f.opts)
	if err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("cluster: restore snapshot: open: %w", err)
	}
	idx, err := readApplied(db)
	if err == nil {
		err = writeCurrent(f.dir, next)
	}
	if err != nil {
		_ = db.Close()
		_ = os.RemoveAll(dir)
		return fmt.Errorf("cluster: restore snapshot: %w", err)
	}
	f.mu.Lock()
	old := f.db
	f.db, f.gen = db, next
	f.mu.Unlock()
	f.setApplied(idx)
	f.restores.Add(1)
	_ = old.Close()
	if err := os.RemoveAll(genDir(f.dir, gen)); err != nil {
		return fmt.Errorf("cluster: restore snapshot: remove the old database: %w", err)
	}
	return nil
}
