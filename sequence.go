package bwkv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Sequence hands out strictly increasing uint64s backed by one key. It
// leases a block of numbers at a time: a lease is one small transaction
// that moves the number stored at the key forward by the lease size and is
// durable before any number of the block is handed out, so numbers never
// repeat, across reopens and crashes too; numbers leased but not handed
// out before a crash (or Close) are skipped. Between leases Next is one
// atomic add, lock-free. All methods are safe for concurrent use; the
// numbers one goroutine gets are strictly increasing, and no two calls get
// the same number.
//
// The key holds the next number not yet leased, as 8 big-endian bytes; it
// is an ordinary key (readable, and writable at the risk of repeats).
// Several Sequences on one key, in one process, share its numbers without
// repeats.
type Sequence struct {
	db    *DB
	key   []byte
	lease uint64

	cur atomic.Pointer[seqLease] // nil after Release
	mu  sync.Mutex               // serializes leasing and Release
}

// seqLease is one leased block [next, limit). next only grows: once past
// limit the block is spent and Next leases a new one.
type seqLease struct {
	next  atomic.Uint64
	limit uint64
}

var errSeqLease = errors.New("bwkv: Sequence: lease must be > 0")

// errSeqExhausted: the sequence reached the end of uint64.
var errSeqExhausted = errors.New("bwkv: Sequence: numbers exhausted")

// Sequence returns a sequence stored at key that leases lease numbers at a
// time. A bigger lease makes Next cheaper and a crash skip more numbers.
// The first number of a new key is 0.
func (db *DB) Sequence(key []byte, lease uint64) (*Sequence, error) {
	if err := db.checkOpen(); err != nil {
		return nil, err
	}
	if err := db.checkKey(key); err != nil {
		return nil, err
	}
	if lease == 0 {
		return nil, errSeqLease
	}
	q := &Sequence{db: db, key: append([]byte(nil), key...), lease: lease}
	spent := &seqLease{}
	q.cur.Store(spent) // empty: the first Next leases
	return q, nil
}

// Next returns the next number. Errors come from leasing (the lease
// transaction failed, or the DB is closed) or Release (ErrClosed).
func (q *Sequence) Next() (uint64, error) {
	for {
		l := q.cur.Load()
		if l == nil {
			return 0, fmt.Errorf("bwkv: Sequence: released: %w", ErrClosed)
		}
		if n := l.next.Add(1) - 1; n < l.limit {
			return n, nil
		}
		if err := q.renew(l); err != nil {
			return 0, err
		}
	}
}

// renew leases a new block unless another caller already replaced spent.
func (q *Sequence) renew(spent *seqLease) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.cur.Load() != spent {
		return nil // renewed or released meanwhile: Next looks again
	}
	var start, limit uint64
	err := q.db.Update(func(tx *Txn) error {
		v, err := tx.Get(q.key)
		switch {
		case errors.Is(err, ErrNotFound):
			start = 0
		case err != nil:
			return err
		case len(v) != 8:
			return fmt.Errorf("bwkv: Sequence %q: stored value is %d bytes, not 8", q.key, len(v))
		default:
			start = binary.BigEndian.Uint64(v)
		}
		if start > math.MaxUint64-q.lease {
			return errSeqExhausted
		}
		limit = start + q.lease
		return tx.Put(q.key, binary.BigEndian.AppendUint64(nil, limit))
	})
	if err == nil && q.db.opts.Durability != DurabilitySync {
		// The lease must be durable before its numbers are handed out,
		// or a crash would hand them out again.
		err = q.db.Sync()
	}
	if err != nil {
		return fmt.Errorf("bwkv: Sequence %q: lease: %w", q.key, err)
	}
	l := &seqLease{limit: limit}
	l.next.Store(start)
	q.cur.Store(l)
	return nil
}

// Release ends the sequence; later Next calls return ErrClosed. If no other
// lease of the key was taken since this sequence's last one, it gives the
// unused rest of the lease back (the key is set to the first number never
// handed out), so the next Sequence on the key continues without a gap;
// otherwise the unused numbers are skipped. Releasing twice returns
// ErrClosed.
func (q *Sequence) Release() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.cur.Swap(nil)
	if l == nil {
		return ErrClosed
	}
	// Claim the rest of the block: a Next racing with Release either got
	// its number before this swap, or gets one at or past the limit and
	// then finds the sequence released.
	var first uint64
	for {
		first = l.next.Load()
		if first >= l.limit || l.next.CompareAndSwap(first, l.limit) {
			break
		}
	}
	if first >= l.limit {
		return nil
	}
	err := q.db.Update(func(tx *Txn) error {
		v, err := tx.Get(q.key)
		if err != nil || len(v) != 8 || binary.BigEndian.Uint64(v) != l.limit {
			return nil // leased further by someone else (or changed): keep the gap
		}
		return tx.Put(q.key, binary.BigEndian.AppendUint64(nil, first))
	})
	if err != nil {
		return fmt.Errorf("bwkv: Sequence %q: release: %w", q.key, err)
	}
	return nil
}
