package mvcc

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
)

const slotsPerShard = 8

type paddedSlot struct {
	v atomic.Uint64 // 0: free; else registered lower bound + 1
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
// next) in a free slot. O(1) expected; allocation-free unless every slot is
// taken.
func (r *Registry) Register(g *Reg, lowerBound uint64) {
	v := lowerBound + 1
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
	r.overflow[g] = lowerBound
	g.over = true
	r.overMu.Unlock()
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

// Min returns the smallest registered lower bound, or limit if smaller.
func (r *Registry) Min(limit uint64) uint64 {
	m := limit
	for i := range r.shards {
		sh := &r.shards[i]
		for j := range sh.slots {
			if v := sh.slots[j].v.Load(); v != 0 && v-1 < m {
				m = v - 1
			}
		}
	}
	r.overMu.Lock()
	for _, v := range r.overflow {
		if v < m {
			m = v
		}
	}
	r.overMu.Unlock()
	return m
}
