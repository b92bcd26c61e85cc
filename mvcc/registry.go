package mvcc

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
)

const slotsPerShard = 8

// provisional marks a slot (or overflow value) that holds only a lower
// bound of its reader's start: the reader registered but has not settled
// its sampled start yet (Settle).
const provisional = 1 << 63

type paddedSlot struct {
	v atomic.Uint64 // 0: free; else (start or lower bound) + 1, maybe | provisional
	_ [56]byte
}

type shard struct {
	slots [slotsPerShard]paddedSlot
}

// Registry records the start timestamps of live readers and transactions.
type Registry struct {
	shards []shard

	overMu   sync.Mutex
	overflow map[*Reg]uint64 // registrations that found no free slot
}

// Reg is one registration. The zero value is unregistered.
type Reg struct {
	slot *atomic.Uint64
	over bool
}

// NewRegistry sizes the registry for the machine.
func NewRegistry() *Registry {
	n := 4 * runtime.GOMAXPROCS(0)
	if n < 16 {
		n = 16
	}
	return &Registry{shards: make([]shard, n), overflow: make(map[*Reg]uint64)}
}

// Register stores lowerBound (which must be <= the start the caller samples
// next) in a free slot, marked provisional until Settle. O(1) expected;
// allocation-free unless every slot is taken.
func (r *Registry) Register(g *Reg, lowerBound uint64) {
	v := (lowerBound + 1) | provisional
	n := uint32(len(r.shards))
	s := rand.Uint32() % n
	for probe := uint32(0); probe < n; probe++ {
		sh := &r.shards[(s+probe)%n]
		for i := range sh.slots {
			sl := &sh.slots[i].v
			if sl.Load() == 0 && sl.CompareAndSwap(0, v) {
				g.slot = sl
				return
			}
		}
	}
	r.overMu.Lock()
	r.overflow[g] = v
	g.over = true
	r.overMu.Unlock()
}

// Settle replaces g's lower bound by the start its reader sampled after
// registering (start >= the bound, so the watermark only rises). From then
// on consolidation keeps exactly the version this start sees instead of
// everything newer than the bound (node.Retention). O(1).
func (r *Registry) Settle(g *Reg, start uint64) {
	if g.slot != nil {
		g.slot.Store(start + 1)
		return
	}
	if g.over {
		r.overMu.Lock()
		r.overflow[g] = start + 1
		r.overMu.Unlock()
	}
}

// Unregister releases g's slot.
func (r *Registry) Unregister(g *Reg) {
	if g.slot != nil {
		g.slot.Store(0)
		g.slot = nil
		return
	}
	if g.over {
		r.overMu.Lock()
		delete(r.overflow, g)
		g.over = false
		r.overMu.Unlock()
	}
}

// Min returns the smallest registered start (or lower bound), or limit if
// smaller.
func (r *Registry) Min(limit uint64) uint64 {
	m := limit
	for i := range r.shards {
		sh := &r.shards[i]
		for j := range sh.slots {
			if v := sh.slots[j].v.Load() &^ provisional; v != 0 && v-1 < m {
				m = v - 1
			}
		}
	}
	r.overMu.Lock()
	for _, v := range r.overflow {
		if v := v &^ provisional; v-1 < m {
			m = v - 1
		}
	}
	r.overMu.Unlock()
	return m
}

// Starts appends the settled starts of the registered readers to dst
// (unsorted, duplicates kept) and returns it with the smallest provisional
// lower bound, or limit if smaller. One pass over the slots: O(slots), about
// 4·GOMAXPROCS·8 words, independent of the write rate.
func (r *Registry) Starts(dst []uint64, limit uint64) ([]uint64, uint64) {
	p := limit
	add := func(v uint64) {
		if v&provisional != 0 {
			p = min(p, (v&^provisional)-1)
			return
		}
		dst = append(dst, v-1)
	}
	for i := range r.shards {
		sh := &r.shards[i]
		for j := range sh.slots {
			if v := sh.slots[j].v.Load(); v != 0 {
				add(v)
			}
		}
	}
	r.overMu.Lock()
	for _, v := range r.overflow {
		add(v)
	}
	r.overMu.Unlock()
	return dst, p
}
