package cache

import (
	"sync"
	"sync/atomic"

	"github.com/bwkv/bwkv/pagetable"
)

// The bits of a slot's ring word (pagetable.Slot.Rings) the cache owns:
// set while the PID waits in that ring.
const (
	inEvict uint32 = 1 << iota
	inCompact
)

// ring is a FIFO of PIDs de-duplicated by one bit of each slot's ring
// word: a slice with a moving head, compacted when the dead prefix
// dominates, so offer and take are O(1) amortized and the ring never holds
// more entries than there are pages.
type ring struct {
	bit  uint32
	mu   sync.Mutex
	q    []pagetable.PID
	head int
}

// offer pushes pid unless its bit says it waits already (or pid was never
// mapped). A PID already waiting costs one atomic load.
func (r *ring) offer(pages Pages, pid pagetable.PID) {
	w := pages.Rings(pid)
	if w == nil || !mark(w, r.bit) {
		return
	}
	r.mu.Lock()
	r.q = append(r.q, pid)
	r.mu.Unlock()
}

// mark sets bit in w and reports whether it was clear.
func mark(w *atomic.Uint32, bit uint32) bool {
	if w.Load()&bit != 0 {
		return false
	}
	return w.Or(bit)&bit == 0
}

// take pops the oldest PID and clears its bit before returning it, so an
// offer racing with the caller's inspection of the page is never lost.
func (r *ring) take(pages Pages) (pagetable.PID, bool) {
	pid, ok := r.pop()
	if ok {
		if w := pages.Rings(pid); w != nil {
			w.And(^r.bit)
		}
	}
	return pid, ok
}

func (r *ring) pop() (pagetable.PID, bool) {
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

// len returns the number of waiting PIDs.
func (r *ring) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.q) - r.head
}
