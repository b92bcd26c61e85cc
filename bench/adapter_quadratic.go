package bench

import (
	"bytes"
	"sort"
	"sync"
)

// The quadratic adapter is a test fixture, not a peer: an in-memory sorted
// slice whose write finds its position by a linear scan and inserts by
// shifting the tail, so every write costs O(n) whatever the key order and a
// bulk import of n records costs O(n^2). It is the hidden-linear-step bug
// the bulk gate (`kvbench bulk`) must catch. Reads and scans use binary
// search. It keeps nothing on disk; durability does not apply.

func init() { Register("quadratic", openQuadratic) }

type qEntry struct{ key, value []byte }

type quadraticEngine struct {
	mu      sync.RWMutex
	entries []qEntry // sorted by key; guarded by mu
}

func openQuadratic(cfg Config) (Engine, error) {
	if _, err := cfg.compressed("quadratic", false); err != nil {
		return nil, err
	}
	return &quadraticEngine{}, nil
}

// put inserts or replaces key with a linear scan (the O(n) step) and returns
// the previous value (nil, false when absent). The caller holds mu.
func (e *quadraticEngine) put(key, value []byte) (old []byte, existed bool) {
	i := 0
	for i < len(e.entries) && bytes.Compare(e.entries[i].key, key) < 0 {
		i++
	}
	v := append([]byte(nil), value...)
	if i < len(e.entries) && bytes.Equal(e.entries[i].key, key) {
		old = e.entries[i].value
		e.entries[i].value = v
		return old, true
	}
	e.entries = append(e.entries, qEntry{})
	copy(e.entries[i+1:], e.entries[i:])
	e.entries[i] = qEntry{key: append([]byte(nil), key...), value: v}
	return nil, false
}

func (e *quadraticEngine) remove(key []byte) {
	i := e.search(key)
	if i < len(e.entries) && bytes.Equal(e.entries[i].key, key) {
		e.entries = append(e.entries[:i], e.entries[i+1:]...)
	}
}

// search returns the index of the first key >= key. The caller holds mu.
func (e *quadraticEngine) search(key []byte) int {
	return sort.Search(len(e.entries), func(i int) bool { return bytes.Compare(e.entries[i].key, key) >= 0 })
}

func (e *quadraticEngine) Read(dst, key []byte, _ ReadPath) ([]byte, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	i := e.search(key)
	if i < len(e.entries) && bytes.Equal(e.entries[i].key, key) {
		return append(dst, e.entries[i].value...), nil
	}
	return dst, ErrNotFound
}

func (e *quadraticEngine) Update(key, value []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.put(key, value)
	return nil
}

func (e *quadraticEngine) Scan(lo, hi []byte, limit int, _ ReadPath) (int, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	n, sink := 0, 0
	for i := e.search(lo); i < len(e.entries) && n < limit; i++ {
		if hi != nil && bytes.Compare(e.entries[i].key, hi) >= 0 {
			break
		}
		sink += int(e.entries[i].key[0]) + len(e.entries[i].value)
		n++
	}
	_ = sink
	return n, nil
}

func (e *quadraticEngine) Begin() (Batch, error) { return &quadraticBatch{e: e}, nil }

// quadraticBatch applies each Put at once (as an engine that installs
// writes in its index does) and keeps an undo list for Rollback.
type quadraticBatch struct {
	e    *quadraticEngine
	undo []qEntry // key, old value (nil value: the key was absent)
	done bool
}

func (b *quadraticBatch) Put(key, value []byte) error {
	b.e.mu.Lock()
	old, existed := b.e.put(key, value)
	b.e.mu.Unlock()
	if !existed {
		old = nil
	} else if old == nil {
		old = []byte{}
	}
	b.undo = append(b.undo, qEntry{key: append([]byte(nil), key...), value: old})
	return nil
}

func (b *quadraticBatch) Commit() error {
	b.undo, b.done = nil, true
	return nil
}

func (b *quadraticBatch) Rollback() error {
	if b.done {
		return nil
	}
	b.e.mu.Lock()
	for i := len(b.undo) - 1; i >= 0; i-- {
		u := b.undo[i]
		if u.value == nil {
			b.e.remove(u.key)
		} else {
			b.e.put(u.key, u.value)
		}
	}
	b.e.mu.Unlock()
	b.undo, b.done = nil, true
	return nil
}

func (e *quadraticEngine) Settle() error { return nil }

func (e *quadraticEngine) Info() Info {
	return Info{Durability: "none (in memory)", UpdateMode: "rmw_txn", Settings: "sorted slice, O(n) insert"}
}

func (e *quadraticEngine) Close() error { return nil }
