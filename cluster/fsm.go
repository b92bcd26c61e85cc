package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/bwkv/bwkv"
	"github.com/hashicorp/raft"
)

// Key layout of the state machine's database: user keys under dataPrefix
// with an 8-byte big-endian version (the raft index of the batch that
// wrote them) before the value; the applied index under appliedKey, in the
// same transaction as the batch it records.
const (
	dataPrefix = 'd'
	versionLen = 8
)

var appliedKey = []byte("mapplied")

// FSM is a raft.FSM that applies replicated batches to a bwkv database.
// Apply writes a batch's operations and the entry's index in one
// transaction, so after a restart the FSM knows exactly which entries it
// holds and skips those raft replays at or below that index: no entry is
// applied twice, and nothing needs a second log of its own.
//
// The database may use DurabilityRelaxed (the default through Config):
// what a crash takes from its tail, raft replays from its log. The only
// point where that is not true is log compaction: raft deletes entries up
// to a snapshot's index once the snapshot is persisted, so Persist syncs
// the database first, and from then on the FSM's durable applied index is
// at least the newest snapshot's.
//
// Apply, Snapshot and Restore are called by raft from one goroutine; Get,
// Hash, Applied and WaitApplied are safe from any goroutine at any time.
type FSM struct {
	dir  string
	opts *bwkv.Options

	// mu guards db and gen: readers and Persist hold it shared, Restore
	// (which swaps in a new database) and Close hold it exclusively.
	mu     sync.RWMutex
	db     *bwkv.DB
	gen    uint64
	closed bool
	// isClosed mirrors closed for WaitApplied, which must not take mu.
	isClosed atomic.Bool

	applied  atomic.Uint64
	restores atomic.Uint64 // snapshots installed by Restore
	// fatal holds the first error the FSM could not apply past (an I/O
	// error on its database): from then on the state is behind the log and
	// every Apply and read reports it.
	fatal atomic.Pointer[error]

	waitMu sync.Mutex
	waitCh chan struct{} // closed and replaced when applied moves; under waitMu
}

var _ raft.FSM = (*FSM)(nil)

// OpenFSM opens (creating if missing) the state machine in dir. opts is
// passed to bwkv.Open for its database (nil: bwkv defaults); opts.FS must
// be nil, because the snapshot swap renames directories through the OS.
func OpenFSM(dir string, opts *bwkv.Options) (*FSM, error) {
	if opts != nil && opts.FS != nil {
		return nil, fmt.Errorf("cluster: fsm %s: Options.FS is not supported (snapshot install swaps OS directories)", dir)
	}
	f := &FSM{dir: dir, opts: opts.Clone(), waitCh: make(chan struct{})}
	gen, err := prepareGenerations(dir)
	if err != nil {
		return nil, fmt.Errorf("cluster: open fsm %s: %w", dir, err)
	}
	db, err := bwkv.Open(genDir(dir, gen), f.opts)
	if err != nil {
		return nil, fmt.Errorf("cluster: open fsm %s: %w", dir, err)
	}
	idx, err := readApplied(db)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("cluster: open fsm %s: %w", dir, err)
	}
	f.db, f.gen = db, gen
	f.applied.Store(idx)
	return f, nil
}

func readApplied(db *bwkv.DB) (uint64, error) {
	v, err := db.Get(appliedKey)
	if errors.Is(err, bwkv.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read applied index: %w", err)
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("applied index of %d bytes: %w", len(v), bwkv.ErrCorruption)
	}
	return binary.BigEndian.Uint64(v), nil
}

// Restores returns how many snapshots Restore installed since OpenFSM.
func (f *FSM) Restores() uint64 { return f.restores.Load() }

// Applied returns the index of the last entry applied (0: none).
func (f *FSM) Applied() uint64 { return f.applied.Load() }

func (f *FSM) setApplied(idx uint64) {
	f.applied.Store(idx)
	f.waitMu.Lock()
	close(f.waitCh)
	f.waitCh = make(chan struct{})
	f.waitMu.Unlock()
}

// WaitApplied blocks until the FSM has applied index idx, ctx ends, or the
// FSM failed.
func (f *FSM) WaitApplied(ctx context.Context, idx uint64) error {
	for {
		f.waitMu.Lock()
		ch := f.waitCh
		f.waitMu.Unlock()
		if f.applied.Load() >= idx {
			return nil
		}
		if err := f.err(); err != nil {
			return err
		}
		if f.isClosed.Load() {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("cluster: wait for index %d (applied %d): %w", idx, f.applied.Load(), ctx.Err())
		}
	}
}

func (f *FSM) err() error {
	if p := f.fatal.Load(); p != nil {
		return *p
	}
	return nil
}

func (f *FSM) fail(err error) error {
	err = fmt.Errorf("cluster: fsm stopped applying: %w", err)
	f.fatal.CompareAndSwap(nil, &err)
	f.setApplied(f.applied.Load()) // wake waiters so they see it
	return err
}

// Apply applies one committed entry (raft calls it in log order) and
// returns a Result.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	if err := f.err(); err != nil {
		return Result{Index: l.Index, Err: err}
	}
	if l.Index <= f.applied.Load() {
		// Replayed after a restart: already in the database.
		return Result{Index: l.Index}
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return Result{Index: l.Index, Err: ErrClosed}
	}
	res := Result{Index: l.Index}
	b, err := decodeBatch(l.Data)
	if err == nil {
		res.Err, err = f.applyBatch(l.Index, &b)
	} else {
		// Every node decodes the same bytes and fails the same way: the
		// entry still counts as applied.
		res.Err, err = err, nil
	}
	if err == nil && res.Err != nil {
		// Nothing of the batch is kept, but the index must be.
		err = f.db.Update(func(tx *bwkv.Txn) error { return putApplied(tx, l.Index) })
	}
	if err != nil {
		return Result{Index: l.Index, Err: f.fail(fmt.Errorf("apply %d: %w", l.Index, err))}
	}
	f.setApplied(l.Index)
	return res
}

func putApplied(tx *bwkv.Txn, idx uint64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], idx)
	return tx.Put(appliedKey, b[:])
}

// applyBatch runs the batch in one transaction with the applied index.
// cond is a failed condition (the transaction is rolled back); err is a
// database error.
func (f *FSM) applyBatch(idx uint64, b *Batch) (cond, err error) {
	tx, err := f.db.Begin()
	if err != nil {
		return nil, err
	}
	defer func() {
		if cond != nil || err != nil {
			_ = tx.Rollback()
		}
	}()
	var key, val []byte
	for i, op := range b.Ops {
		key = append(append(key[:0], dataPrefix), op.Key...)
		switch op.Kind {
		case OpPut:
			val = binary.BigEndian.AppendUint64(val[:0], idx)
			val = append(val, op.Value...)
			err = tx.Put(key, val)
		case OpDelete:
			err = tx.Delete(key)
		case OpCheckValue, OpCheckVersion:
			var cur []byte
			cur, err = tx.GetAppend(val[:0], key)
			found := err == nil
			if errors.Is(err, bwkv.ErrNotFound) {
				err = nil
			}
			if err != nil {
				break
			}
			if found && len(cur) < versionLen {
				return nil, fmt.Errorf("key %q: stored value of %d bytes: %w", op.Key, len(cur), bwkv.ErrCorruption)
			}
			var ver uint64
			if found {
				ver = binary.BigEndian.Uint64(cur)
			}
			var ok bool
			if op.Kind == OpCheckVersion {
				ok = ver == op.Version
			} else {
				ok = found != op.Absent && (!found || bytes.Equal(cur[versionLen:], op.Value))
			}
			if !ok {
				return &ConditionError{Op: i, Key: bytes.Clone(op.Key), Version: ver}, nil
			}
		}
		if errors.Is(err, bwkv.ErrKeyTooLarge) || errors.Is(err, bwkv.ErrValueTooLarge) {
			// Deterministic on nodes with the same limits (Node.Update
			// checks them first): reject the batch, do not stop applying.
			return fmt.Errorf("%w: op %d (%s %q): %w", ErrBadBatch, i, op.Kind, op.Key, err), nil
		}
		if err != nil {
			return nil, fmt.Errorf("op %d (%s %q): %w", i, op.Kind, op.Key, err)
		}
	}
	if err = putApplied(tx, idx); err != nil {
		return nil, err
	}
	return nil, tx.Commit()
}

// limits returns the largest user key and value a batch may carry: the
// database's limits less the key prefix and the version.
// (bwkv keeps the limits a database was created with; the requested ones,
// with defaults, are what this sees: keep FSMOptions the same across
// restarts and on every node).
func (f *FSM) limits() (maxKey, maxValue int) {
	o := f.opts.Clone().EnsureDefaults()
	return o.MaxKeySize - 1, o.MaxValueSize - versionLen
}

// Get returns key's value and version from this node's state, without any
// cluster coordination (a stale read: see Node.StaleGet). The value
// belongs to the caller. A missing key is bwkv.ErrNotFound.
func (f *FSM) Get(key []byte) (value []byte, version uint64, err error) {
	if err := f.err(); err != nil {
		return nil, 0, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, 0, ErrClosed
	}
	v, err := f.db.Get(append([]byte{dataPrefix}, key...))
	if err != nil {
		return nil, 0, err
	}
	if len(v) < versionLen {
		return nil, 0, fmt.Errorf("cluster: key %q: stored value of %d bytes: %w", key, len(v), bwkv.ErrCorruption)
	}
	return v[versionLen:], binary.BigEndian.Uint64(v), nil
}

// Hash returns a SHA-256 over every key, version and value, and the
// applied index of the same consistent state. Two nodes at the same
// applied index must return the same sum.
func (f *FSM) Hash() (applied uint64, sum [sha256.Size]byte, err error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return 0, sum, ErrClosed
	}
	err = f.db.View(func(s *bwkv.Snapshot) error {
		v, err := s.Get(appliedKey)
		if err == nil && len(v) == 8 {
			applied = binary.BigEndian.Uint64(v)
		} else if err != nil && !errors.Is(err, bwkv.ErrNotFound) {
			return err
		}
		it, err := s.NewIter(&bwkv.IterOptions{LowerBound: []byte{dataPrefix}, UpperBound: []byte{dataPrefix + 1}})
		if err != nil {
			return err
		}
		defer it.Close()
		h := sha256.New()
		var n [binary.MaxVarintLen64]byte
		for ok := it.First(); ok; ok = it.Next() {
			k, v := it.Key(), it.Value()
			h.Write(n[:binary.PutUvarint(n[:], uint64(len(k)))])
			h.Write(k)
			h.Write(n[:binary.PutUvarint(n[:], uint64(len(v)))])
			h.Write(v)
		}
		if err := it.Error(); err != nil {
			return err
		}
		h.Sum(sum[:0])
		return nil
	})
	if err != nil {
		return 0, sum, fmt.Errorf("cluster: fsm hash: %w", err)
	}
	return applied, sum, nil
}

// Sync makes every applied entry durable.
func (f *FSM) Sync() error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return ErrClosed
	}
	return f.db.Sync()
}

// DB returns the current database (it changes when a snapshot is
// installed; for Stats and Check, not for writes).
func (f *FSM) DB() *bwkv.DB {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.db
}

// Close syncs and closes the database.
func (f *FSM) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	f.closed = true
	f.isClosed.Store(true)
	err := f.db.Sync()
	if cerr := f.db.Close(); err == nil {
		err = cerr
	}
	f.setApplied(f.applied.Load())
	return err
}

// closeWriter is the part of raft.SnapshotSink Persist needs.
type closeWriter interface {
	io.Writer
	Close() error
	Cancel() error
}
