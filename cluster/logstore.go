package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/hashicorp/raft"
)

// Key layout of a Store's database. Log entries sit under one prefix with
// big-endian indexes, so index order is key order: FirstIndex and LastIndex
// are the two ends of one key range and DeleteRange walks a contiguous run
// of keys. Stable-store keys sit under another prefix and never interleave.
const (
	logPrefix    = 'l'
	stablePrefix = 's'
	logKeyLen    = 9

	// deleteChunk bounds one DeleteRange transaction: compaction of a long
	// log prefix must not hold the write lock (and stall StoreLogs) for the
	// whole range, nor build one huge transaction.
	deleteChunk = 1024

	logCodecVersion = 1
	logFlagTime     = 1 // AppendedAt is set (the zero time is stored as no field)
)

// Store is a raft.LogStore and raft.StableStore on one bwkv database, a
// drop-in replacement for raft-boltdb's BoltStore. Every write is one
// transaction committed with DurabilitySync: raft's safety rests on log
// entries and the current term being durable before it answers a peer.
//
// Store is safe for concurrent use. Slices it returns belong to the
// caller.
type Store struct {
	db       *bwkv.DB
	maxValue int // the database's MaxValueSize as requested (with defaults)

	// mu serializes writes so the cached ends below always describe the
	// committed log (raft appends from its main goroutine and compacts from
	// its snapshot goroutine).
	mu sync.Mutex
	// first and last are the log's ends (0, 0 when empty); written under mu,
	// read without it.
	first, last atomic.Uint64
}

var (
	_ raft.LogStore    = (*Store)(nil)
	_ raft.StableStore = (*Store)(nil)
)

// OpenStore opens (creating if missing) the log and stable store in dir.
// opts is passed to bwkv.Open; nil means defaults. A DurabilityRelaxed
// request is rejected: a log entry raft has acknowledged must survive a
// crash.
func OpenStore(dir string, opts *bwkv.Options) (*Store, error) {
	o := opts.Clone()
	if o.Durability != bwkv.DurabilitySync {
		return nil, fmt.Errorf("cluster: log store %s: Durability must be DurabilitySync (raft acknowledges entries as durable)", dir)
	}
	db, err := bwkv.Open(dir, o)
	if err != nil {
		return nil, fmt.Errorf("cluster: open log store %s: %w", dir, err)
	}
	s := &Store{db: db, maxValue: o.Clone().EnsureDefaults().MaxValueSize}
	if err := s.loadEnds(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("cluster: open log store %s: %w", dir, err)
	}
	return s, nil
}

// loadEnds reads the log's first and last index from the two ends of the
// log key range (two seeks, whatever the log's length).
func (s *Store) loadEnds() error {
	return s.db.View(func(sn *bwkv.Snapshot) error {
		it, err := sn.NewIter(&bwkv.IterOptions{LowerBound: []byte{logPrefix}, UpperBound: []byte{logPrefix + 1}})
		if err != nil {
			return err
		}
		defer it.Close()
		if it.First() {
			s.first.Store(logIndex(it.Key()))
		}
		if it.Last() {
			s.last.Store(logIndex(it.Key()))
		}
		return it.Error()
	})
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// DB returns the underlying database (for Stats and Check).
func (s *Store) DB() *bwkv.DB { return s.db }

func logKey(dst []byte, idx uint64) []byte {
	dst = append(dst[:0], logPrefix)
	return binary.BigEndian.AppendUint64(dst, idx)
}

func logIndex(key []byte) uint64 { return binary.BigEndian.Uint64(key[1:logKeyLen]) }

// FirstIndex returns the first index written, 0 for an empty log.
func (s *Store) FirstIndex() (uint64, error) { return s.first.Load(), nil }

// LastIndex returns the last index written, 0 for an empty log.
func (s *Store) LastIndex() (uint64, error) { return s.last.Load(), nil }

// GetLog reads the entry at index into log; raft.ErrLogNotFound if absent.
// The entry's Data and Extensions belong to the caller.
func (s *Store) GetLog(index uint64, log *raft.Log) error {
	var kb [logKeyLen]byte
	v, err := s.db.Get(logKey(kb[:0], index))
	if errors.Is(err, bwkv.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return fmt.Errorf("cluster: get log %d: %w", index, err)
	}
	if err := decodeLog(v, log); err != nil {
		return fmt.Errorf("cluster: get log %d: %w", index, err)
	}
	log.Index = index
	return nil
}

// StoreLog stores one entry.
func (s *Store) StoreLog(log *raft.Log) error { return s.StoreLogs([]*raft.Log{log}) }

// StoreLogs stores entries in one durable transaction: all or none survive
// a crash, and a batch pays one log sync (group commit shares it further).
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	lo, hi := logs[0].Index, logs[0].Index
	var kb [logKeyLen]byte
	var vb []byte
	err := s.db.Update(func(tx *bwkv.Txn) error {
		for _, l := range logs {
			vb = encodeLog(vb[:0], l)
			if err := tx.Put(logKey(kb[:0], l.Index), vb); err != nil {
				return err
			}
			lo, hi = min(lo, l.Index), max(hi, l.Index)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cluster: store logs %d..%d: %w", lo, hi, err)
	}
	if f := s.first.Load(); f == 0 || lo < f {
		s.first.Store(lo)
	}
	if hi > s.last.Load() {
		s.last.Store(hi)
	}
	return nil
}

// DeleteRange deletes the entries min..max (inclusive). Raft uses it to
// compact a prefix (after a snapshot) and to truncate a conflicting
// suffix. The range is clamped to the log's ends, so the work is
// proportional to the entries deleted, never to the indexes named. It
// runs in transactions of deleteChunk entries, ordered so that a crash
// between them leaves a contiguous log: a prefix deletion walks up from
// the bottom, a suffix deletion walks down from the top.
func (s *Store) DeleteRange(lo, hi uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, last := s.first.Load(), s.last.Load()
	lo, hi = max(lo, first), min(hi, last)
	if first == 0 || lo > hi {
		return nil
	}
	suffix := hi == last && lo > first
	for lo <= hi {
		var a, b uint64 // this chunk, inclusive
		if suffix {
			b = hi
			a = max(lo, hi-min(hi-lo, deleteChunk-1))
		} else {
			a = lo
			b = min(hi, lo+deleteChunk-1)
		}
		if err := s.deleteChunk(a, b); err != nil {
			return fmt.Errorf("cluster: delete logs %d..%d: %w", a, b, err)
		}
		switch {
		case a == first && b == last:
			s.first.Store(0)
			s.last.Store(0)
		case suffix:
			s.last.Store(a - 1)
			last = a - 1
		default:
			s.first.Store(b + 1)
			first = b + 1
		}
		if suffix {
			if a == lo {
				break
			}
			hi = a - 1
		} else {
			if b == hi {
				break
			}
			lo = b + 1
		}
	}
	return nil
}

func (s *Store) deleteChunk(a, b uint64) error {
	var kb [logKeyLen]byte
	return s.db.Update(func(tx *bwkv.Txn) error {
		for i := a; ; i++ {
			if err := tx.Delete(logKey(kb[:0], i)); err != nil {
				return err
			}
			if i == b {
				return nil
			}
		}
	})
}

func stableKey(k []byte) []byte {
	return append([]byte{stablePrefix}, k...)
}

// Set stores a stable key durably.
func (s *Store) Set(key, val []byte) error {
	if err := s.db.Put(stableKey(key), val); err != nil {
		return fmt.Errorf("cluster: stable set %q: %w", key, err)
	}
	return nil
}

// Get returns a stable key's value (owned by the caller), or
// ErrKeyNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	v, err := s.db.Get(stableKey(key))
	if errors.Is(err, bwkv.ErrNotFound) {
		return nil, ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: stable get %q: %w", key, err)
	}
	return v, nil
}

// SetUint64 stores a stable integer (8 bytes big-endian, as raft-boltdb).
func (s *Store) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns a stable integer, or 0 and ErrKeyNotFound.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("cluster: stable get %q: %d bytes, want 8: %w", key, len(v), bwkv.ErrCorruption)
	}
	return binary.BigEndian.Uint64(v), nil
}

// encodeLog appends a log entry's fields but its index (the key holds it):
// version, type, flags, term, AppendedAt, Data, Extensions.
func encodeLog(dst []byte, l *raft.Log) []byte {
	var flags byte
	if !l.AppendedAt.IsZero() {
		flags |= logFlagTime
	}
	dst = append(dst, logCodecVersion, byte(l.Type), flags)
	dst = binary.AppendUvarint(dst, l.Term)
	if flags&logFlagTime != 0 {
		dst = binary.AppendVarint(dst, l.AppendedAt.UnixNano())
	}
	dst = binary.AppendUvarint(dst, uint64(len(l.Data)))
	dst = append(dst, l.Data...)
	dst = binary.AppendUvarint(dst, uint64(len(l.Extensions)))
	return append(dst, l.Extensions...)
}

// decodeLog fills l from v; Data and Extensions alias v, which the caller
// owns (bwkv.DB.Get returns a fresh slice).
func decodeLog(v []byte, l *raft.Log) error {
	if len(v) < 3 {
		return fmt.Errorf("log entry of %d bytes: %w", len(v), bwkv.ErrCorruption)
	}
	if v[0] != logCodecVersion {
		return fmt.Errorf("log entry codec version %d: %w", v[0], bwkv.ErrVersion)
	}
	l.Type, l.AppendedAt = raft.LogType(v[1]), time.Time{}
	flags := v[2]
	d := decoder{b: v[3:]}
	l.Term = d.uvarint()
	if flags&logFlagTime != 0 {
		l.AppendedAt = time.Unix(0, d.varint())
	}
	l.Data = d.bytes()
	l.Extensions = d.bytes()
	if d.bad || len(d.b) != 0 {
		return fmt.Errorf("log entry malformed: %w", bwkv.ErrCorruption)
	}
	return nil
}

// decoder reads varint-framed fields; a short or malformed input sets bad
// and yields zero values (checked once at the end).
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) uvarint() uint64 {
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) varint() int64 {
	x, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.b)) {
		d.bad, d.b = true, nil
		return nil
	}
	b := d.b[:n:n]
	d.b = d.b[n:]
	if n == 0 {
		return nil
	}
	return b
}
