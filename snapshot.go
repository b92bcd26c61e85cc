package bwkv

import (
	"sync/atomic"

	"github.com/bwkv/bwkv/internal/invariants"
	"github.com/bwkv/bwkv/mvcc"
	"github.com/bwkv/bwkv/tree"
)

// Snapshot is a read-only view of the database as of its creation. It is
// safe for concurrent use. After Close every method returns ErrClosed (a
// second Close included), and so do iterators opened on it.
type Snapshot struct {
	db     *DB
	r      mvcc.Reader
	reg    mvcc.Reg
	closed atomic.Bool
	// live panics, in invariants and race builds, when the engine reads
	// through the snapshot after Close (its iterators check it).
	live invariants.CloseChecker
}

// snapSlabLen is how many snapshots one slab holds.
const snapSlabLen = 64

// snapSlab hands out snapshots from one allocation. A Snapshot is never
// reused: a handle closed twice, or used after Close, can only ever see its
// own closed state, never another caller's snapshot (a pooled and recycled
// handle could not tell its callers apart). Slabs come from a sync.Pool, so
// NewSnapshot is O(1), takes no shared lock, and allocates once per
// snapSlabLen snapshots (about 64 bytes a snapshot, amortized); the Go GC
// frees a slab once none of its snapshots is referenced.
type snapSlab struct {
	s [snapSlabLen]Snapshot
	n int // snapshots handed out; owned by whoever took the slab from the pool
}

// newSnapshot returns an unused Snapshot.
func (db *DB) newSnapshot() *Snapshot {
	sl := db.snapPool.Get().(*snapSlab)
	s := &sl.s[sl.n]
	sl.n++
	if sl.n < snapSlabLen {
		db.snapPool.Put(sl)
	}
	return s
}

// NewSnapshot opens a snapshot of the committed state. Close it when done:
// an open snapshot keeps the versions it sees from being dropped.
func (db *DB) NewSnapshot() (*Snapshot, error) {
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	s := db.newSnapshot()
	s.db = db
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
	return s.db.getAppend(dst, key, &s.r, nil, nil)
}

// getAppend appends to dst the value of key that r sees: the one
// implementation of Snapshot.GetAppend and Txn.GetAppend, which check that
// they are usable first.
func (db *DB) getAppend(dst, key []byte, r *mvcc.Reader, leaf *uint64, pk *tree.Peeked) ([]byte, error) {
	if err := db.checkKey(key); err != nil {
		return dst, err
	}
	v, ok, pid, err := db.tree.GetLeafPeeked(key, r, pk)
	if err != nil {
		return dst, err
	}
	if leaf != nil {
		*leaf = pid
	}
	if !ok {
		return dst, ErrNotFound
	}
	return append(dst, v...), nil
}

// NewIter returns an iterator over the snapshot. Once the snapshot is
// closed the iterator stops: positioning calls return false and Error
// returns ErrClosed.
func (s *Snapshot) NewIter(o *IterOptions) (*Iter, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	return newSnapIter(s, o)
}

// Close releases the snapshot. Closing it again, or after DB.Close,
// returns ErrClosed and affects nothing else.
func (s *Snapshot) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	s.live.Close()
	s.db.mv.Registry().Unregister(&s.reg)
	if s.db.closed.Load() {
		return ErrClosed // released all the same (DB.Close: later use is ErrClosed)
	}
	return nil
}
