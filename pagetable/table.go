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
// writer mutex.
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
	// Bytes is the memory the resident state was accounted with, and
	// inner whether it was accounted as an inner page (guarded by Mu; see
	// Table.Account).
	Bytes int64
	inner bool
	// Ref is the CLOCK reference bit: set by reads, cleared by the evictor
	// (a page read since the evictor last passed gets a second chance).
	Ref atomic.Uint32
	// queued de-duplicates the eviction candidate ring; cqueued the
	// compaction ring.
	queued, cqueued atomic.Bool
}

// Touched sets the reference bit. It stores only when the bit is clear, so
// hot pages read on every core do not bounce the cache line.
func (s *Slot[T]) Touched() {
	if s.Ref.Load() == 0 {
		s.Ref.Store(1)
	}
}

// CompareAndSwap publishes v if the state is still old (loading a page
// from disk races only with other loaders).
func (s *Slot[T]) CompareAndSwap(old, v *T) bool { return s.state.CompareAndSwap(old, v) }

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
	// ring holds eviction candidates (see Enqueue); cring pages whose
	// chains want a background consolidation (EnqueueCompact).
	ring, cring ring
}

// Account records that slot now holds a state of n bytes (0: none), an
// inner page's if inner, and adjusts the resident totals. Callers hold the
// slot's Mu (or own the PID exclusively). O(1).
func (t *Table[T]) Account(s *Slot[T], n int64, inner bool) {
	if s.inner || inner {
		d := -s.Bytes
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
	if d := n - s.Bytes; d != 0 {
		s.Bytes = n
		t.resident.Add(d)
	}
}

// Resident returns the accounted memory of all resident states.
func (t *Table[T]) Resident() int64 { return t.resident.Load() }

// InnerResident returns the part of Resident held by inner pages.
func (t *Table[T]) InnerResident() int64 { return t.inner.Load() }

// Enqueue offers pid as an eviction candidate: a page just loaded, or one
// whose dirty generation was published. A PID already waiting is not added
// twice (the slot's flag), so the ring never holds more entries than there
// are pages. O(1) amortized.
func (t *Table[T]) Enqueue(pid PID) {
	offer(t, &t.ring, pid, func(s *Slot[T]) *atomic.Bool { return &s.queued })
}

// Dequeue takes the oldest candidate. Its flag is cleared before it is
// returned, so an Enqueue racing with the caller's inspection of the page
// is never lost. O(1).
func (t *Table[T]) Dequeue() (PID, bool) {
	return take(t, &t.ring, func(s *Slot[T]) *atomic.Bool { return &s.queued })
}

// EnqueueCompact offers pid for a background consolidation (a stub leaf
// whose chain grew long), de-duplicated like Enqueue. O(1) amortized.
func (t *Table[T]) EnqueueCompact(pid PID) {
	offer(t, &t.cring, pid, func(s *Slot[T]) *atomic.Bool { return &s.cqueued })
}

// DequeueCompact takes the oldest compaction request (its flag cleared
// first, as in Dequeue). O(1).
func (t *Table[T]) DequeueCompact() (PID, bool) {
	return take(t, &t.cring, func(s *Slot[T]) *atomic.Bool { return &s.cqueued })
}

// offer pushes pid on r unless the slot's flag says it is waiting there.
func offer[T any](t *Table[T], r *ring, pid PID, flag func(*Slot[T]) *atomic.Bool) {
	s := t.Lookup(pid)
	if s == nil || !flag(s).CompareAndSwap(false, true) {
		return
	}
	r.push(pid)
}

// take pops the oldest PID of r and clears its flag.
func take[T any](t *Table[T], r *ring, flag func(*Slot[T]) *atomic.Bool) (PID, bool) {
	pid, ok := r.pop()
	if ok {
		if s := t.Lookup(pid); s != nil {
			flag(s).Store(false)
		}
	}
	return pid, ok
}

// CompactQueued returns the number of waiting compaction requests.
func (t *Table[T]) CompactQueued() int { return t.cring.len() }

// Candidates returns the number of waiting eviction candidates.
func (t *Table[T]) Candidates() int { return t.ring.len() }

// ring is a FIFO of PIDs: a slice with a moving head, compacted when the
// dead prefix dominates, so push and pop are O(1) amortized.
type ring struct {
	mu   sync.Mutex
	q    []PID
	head int
}

func (r *ring) push(pid PID) {
	r.mu.Lock()
	r.q = append(r.q, pid)
	r.mu.Unlock()
}

func (r *ring) pop() (PID, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.head == len(r.q) {
		return 0, false
	}
	pid := r.q[r.head]
	r.head++
	if r.head == len(r.q) {
		r.q, r.head = r.q[:0], 0
	} else if r.head > 1024 && r.head*2 > len(r.q) {
		k := copy(r.q, r.q[r.head:])
		r.q, r.head = r.q[:k], 0
	}
	return pid, true
}

func (r *ring) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.q) - r.head
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
