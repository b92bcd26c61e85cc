package pagetable

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/bwkv/bwkv/internal/base"
)

// PID identifies a page (base.PID). PID 0 is never allocated (it means
// "none").
type PID = base.PID

const (
	chunkBits = 12
	chunkSize = 1 << chunkBits
	dirSize   = 1 << 16 // 2^28 PIDs in all
)

// Slot is one mapping-table entry: the page's published state and its
// writer mutex. Each field has one owning package, which alone writes it
// (others may read it):
//
//	state        tree/: Store under Mu (publish, install, Evict)
//	Mu           tree/: the page's writers (write, SMO, load install, Evict)
//	Stamp        generation/: Manager.Touch under Mu; Manager.Clean reads it
//	Disk         tree/: Evict under Mu, tree.Map at open; load reads it
//	bytes, inner pagetable/: Table.Account (called by tree under Mu)
//	ref          pagetable/: set by readers (Touched), cleared by the
//	             eviction pass (Unref, from tree.Evict run by cache/)
//	Rings        cache/: its rings' membership bits, never touched elsewhere
type Slot[T any] struct {
	state atomic.Pointer[T]
	// Mu serializes writers of this page (conflict check, log append,
	// install). Readers never take it.
	Mu sync.Mutex
	// Stamp is the generation in which the page was last marked dirty
	// (written under Mu; the generation layer's O(1) de-duplication).
	Stamp atomic.Uint64
	// Disk is the logical address of the page's newest durable frame while
	// its state is not loaded (0: none). Written under Mu when a clean page
	// is evicted.
	Disk atomic.Uint64
	// bytes is the memory the resident state was accounted with, and
	// inner whether it was accounted as an inner page (guarded by Mu; see
	// Table.Account).
	bytes int64
	inner bool
	// ref is the CLOCK reference word: bit 0 is set by reads and cleared
	// by the evictor's pass (a page read since the evictor last passed
	// gets a second chance); bit 1 remembers that the previous pass found
	// bit 0 set, so the evictor tells a page in steady use from one read
	// once (Unref).
	ref atomic.Uint32
	// Rings belongs to the page cache (cache/): one bit per candidate
	// ring that holds the PID, so an offer de-duplicates in O(1) without
	// a map. pagetable only stores it (Table.Rings).
	Rings atomic.Uint32
}

// Touched sets the reference bit. It stores only when the bit is clear, so
// hot pages read on every core do not bounce the cache line.
func (s *Slot[T]) Touched() {
	if r := s.ref.Load(); r&1 == 0 {
		s.ref.Store(r | 1)
	}
}

// Unref is the eviction pass's look at the reference bit: it clears the
// bit and reports in how many passes in a row, this one included, the
// page was found referenced: 0 (not read since the last pass), 1, or 2
// (read before each of the last two passes: in steady use). Touched and
// Unref race without harm: a lost update only costs a page one chance.
func (s *Slot[T]) Unref() int {
	r := s.ref.Load()
	if r&1 == 0 {
		if r != 0 {
			s.ref.Store(0)
		}
		return 0
	}
	s.ref.Store(2)
	return 1 + int(r>>1&1)
}

// Load returns the slot's published state (nil if none). Safe concurrently.
func (s *Slot[T]) Load() *T { return s.state.Load() }

// Store publishes a new state. Callers hold Mu (or own the PID exclusively).
func (s *Slot[T]) Store(v *T) { s.state.Store(v) }

type chunk[T any] struct {
	slots [chunkSize]Slot[T]
}

type retired struct {
	pid   PID
	epoch uint64
}

// Table is the mapping table. All methods are safe for concurrent use.
type Table[T any] struct {
	dir [dirSize]atomic.Pointer[chunk[T]]

	mu sync.Mutex // guards the fields below
	// next is the lowest PID never handed out.
	next PID
	// free holds PIDs ready for reuse (LIFO).
	free []PID
	// pending holds retired PIDs in retirement order (FIFO); head is the
	// index of its first live element.
	pending []retired
	head    int

	// resident is the accounted memory of every resident state; inner
	// the part of it held by inner pages.
	resident, inner atomic.Int64
}

// Account records that slot now holds a state of n bytes (0: none), an
// inner page's if inner, and adjusts the resident totals. Callers hold the
// slot's Mu (or own the PID exclusively). O(1).
func (t *Table[T]) Account(s *Slot[T], n int64, inner bool) {
	if s.inner || inner {
		d := -s.bytes
		if !s.inner {
			d = 0
		}
		if inner {
			d += n
		}
		if d != 0 {
			t.inner.Add(d)
		}
		s.inner = inner
	}
	if d := n - s.bytes; d != 0 {
		s.bytes = n
		t.resident.Add(d)
	}
}

// Resident returns the accounted memory of all resident states.
func (t *Table[T]) Resident() int64 { return t.resident.Load() }

// InnerResident returns the part of Resident held by inner pages.
func (t *Table[T]) InnerResident() int64 { return t.inner.Load() }

// Rings returns pid's Slot.Rings, or nil if pid's chunk was never
// allocated. For the page cache (cache/), the word's one owner.
func (t *Table[T]) Rings(pid PID) *atomic.Uint32 {
	s := t.Lookup(pid)
	if s == nil {
		return nil
	}
	return &s.Rings
}

// New returns an empty table whose first allocated PID is first (>= 1).
func New[T any](first PID) *Table[T] {
	if first == 0 {
		first = 1
	}
	return &Table[T]{next: first}
}

// Slot returns the slot of pid, allocating its chunk if needed. It never
// returns nil for pid < 2^28.
func (t *Table[T]) Slot(pid PID) *Slot[T] {
	ci := uint64(pid) >> chunkBits
	if ci >= dirSize {
		panic(fmt.Sprintf("pagetable: PID %d beyond the table", pid))
	}
	c := t.dir[ci].Load()
	if c == nil {
		c = t.grow(ci)
	}
	return &c.slots[uint64(pid)&(chunkSize-1)]
}

// Lookup returns the slot of pid, or nil if its chunk was never allocated.
func (t *Table[T]) Lookup(pid PID) *Slot[T] {
	ci := uint64(pid) >> chunkBits
	if ci >= dirSize {
		return nil
	}
	c := t.dir[ci].Load()
	if c == nil {
		return nil
	}
	return &c.slots[uint64(pid)&(chunkSize-1)]
}

// Load returns pid's published state, or nil.
func (t *Table[T]) Load(pid PID) *T {
	s := t.Lookup(pid)
	if s == nil {
		return nil
	}
	return s.Load()
}

func (t *Table[T]) grow(ci uint64) *chunk[T] {
	nc := new(chunk[T])
	if t.dir[ci].CompareAndSwap(nil, nc) {
		return nc
	}
	return t.dir[ci].Load()
}

// Alloc returns an unused PID in O(1): a reclaimed one if any, else a fresh
// one.
func (t *Table[T]) Alloc() PID {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.free); n > 0 {
		pid := t.free[n-1]
		t.free = t.free[:n-1]
		return pid
	}
	pid := t.next
	t.next++
	return pid
}

// Reserve makes sure Alloc never hands out a PID below next (used when
// loading a table from disk).
func (t *Table[T]) Reserve(next PID) {
	t.mu.Lock()
	if next > t.next {
		t.next = next
	}
	t.mu.Unlock()
}

// Next returns the lowest PID never handed out.
func (t *Table[T]) Next() PID {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.next
}

// Retire records that pid's last reference was removed in epoch. The PID
// becomes reusable once Reclaim(epoch or later) is called (INV-P2). O(1).
func (t *Table[T]) Retire(pid PID, epoch uint64) {
	t.mu.Lock()
	t.pending = append(t.pending, retired{pid, epoch})
	t.mu.Unlock()
}

// Reclaim moves every PID retired in an epoch <= published to the free
// stack. The cost is proportional to the PIDs moved, never to the size of
// the free stack.
func (t *Table[T]) Reclaim(published uint64) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for t.head < len(t.pending) && t.pending[t.head].epoch <= published {
		t.free = append(t.free, t.pending[t.head].pid)
		t.head++
		n++
	}
	if t.head == len(t.pending) {
		t.pending = t.pending[:0]
		t.head = 0
	} else if t.head > 1024 && t.head*2 > len(t.pending) {
		// Compact so the queue's memory tracks its live length.
		k := copy(t.pending, t.pending[t.head:])
		t.pending = t.pending[:k]
		t.head = 0
	}
	return n
}
