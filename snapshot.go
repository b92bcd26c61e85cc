package bwkv

import (
	"sync/atomic"

	"github.com/bwkv/bwkv/mvcc"
)

// Snapshot is a read-only view of the database as of its creation. It is
// safe for concurrent use until Close. NewSnapshot and Close are O(1) and
// allocation-free (snapshots are pooled): do not use a Snapshot after
// closing it.
type Snapshot struct {
	db     *DB
	r      mvcc.Reader
	reg    mvcc.Reg
	closed atomic.Bool
}

// NewSnapshot opens a snapshot of the committed state.
func (db *DB) NewSnapshot() (*Snapshot, error) {
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	s := db.snapPool.Get().(*Snapshot)
	s.db = db
	s.closed.Store(false)
	// Registers a lower bound of the start before sampling it, so the
	// watermark can never pass this snapshot (mvcc package doc).
	s.r.Init(db.mv, 0, db.mv.RegisterSnapshot(&s.reg))
	return s, nil
}

func (s *Snapshot) usable() error {
	if s.closed.Load() || s.db.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Get returns a copy of key's value in the snapshot. The caller owns it.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	return s.GetAppend(nil, key)
}

// GetAppend appends key's value in the snapshot to dst: allocation-free
// when dst has room.
func (s *Snapshot) GetAppend(dst, key []byte) ([]byte, error) {
	if err := s.usable(); err != nil {
		return dst, err
	}
	if err := s.db.checkKey(key); err != nil {
		return dst, err
	}
	v, ok, err := s.db.tree.Get(key, &s.r)
	if err != nil {
		return dst, s.db.readErr(err)
	}
	if !ok {
		return dst, ErrNotFound
	}
	return append(dst, v...), nil
}

// NewIter returns an iterator over the snapshot. Close it before the
// snapshot.
func (s *Snapshot) NewIter(o *IterOptions) (*Iter, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	return newIter(s.db, &s.r, o, s.usable), nil
}

// Close releases the snapshot. Closing twice returns ErrClosed.
func (s *Snapshot) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	db := s.db
	db.mv.Registry().Unregister(&s.reg)
	db.snapPool.Put(s)
	return nil
}
