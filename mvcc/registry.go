package mvcc

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

const slotsPerShard = 8

type paddedSlot struct {
	v atomic.Uint64 // 0: free; else registered lower bound + 1
	// since is the registration's wall-clock time (unix nanos) for
	// Stats' oldest-reader age; 0 while being claimed or freed.
	since atomic.Int64
	_     [48]byte
}

type shard struct {
	slots [slotsPerShard]paddedSlot
}

// Registry records the start timestamps of live readers and transactions.
type Registry struct {
	shards []shard

	overMu   sync.Mutex
	overflow map[*Reg]overReg // registrations that found no free slot
}

type overReg struct {
	lowerBound uint64
	since      int64
}

// Reg is one registration. The zero value is unregistered.
type Reg struct {
	slot *paddedSlot
	over bool
}

// NewRegistry sizes the registry for the machine.
func NewRegistry() *Registry {
	n := 4 * runtime.GOMAXPROCS(0)
	if n < 16 {
		n = 16
	}
	return &Registry{shards: make([]shard, n), overflow: make(map[*Reg]overReg)}
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
			sl := &sh.slots[i]
			if sl.v.Load() == 0 && sl.v.CompareAndSwap(0, v) {
				sl.since.Store(time.Now().UnixNano())
				g.slot = sl
				return
			}
		}
	}
	r.overMu.Lock()
	r.overflow[g] = overReg{lowerBound, time.Now().UnixNano()}
	g.over = true
	r.overMu.Unlock()
}

// Unregister releases g's slot.
func (r *Registry) Unregister(g *Reg) {
	if g.slot != nil {
		g.slot.since.Store(0) // before the slot is free for another claim
		g.slot.v.Store(0)
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
	for _, o := range r.overflow {
		if o.lowerBound < m {
			m = o.lowerBound
		}
	}
	r.overMu.Unlock()
	return m
}

// OldestSince returns the registration time of the oldest live
// registration (snapshot or txn), or the zero time if none. It scans every
// slot: for Stats, not for hot paths. A registration being claimed right
// now may be missed.
func (r *Registry) OldestSince() time.Time {
	var m int64
	for i := range r.shards {
		sh := &r.shards[i]
		for j := range sh.slots {
			if t := sh.slots[j].since.Load(); t != 0 && (m == 0 || t < m) {
				m = t
			}
		}
	}
	r.overMu.Lock()
	for _, o := range r.overflow {
		if m == 0 || o.since < m {
			m = o.since
		}
	}
	r.overMu.Unlock()
	if m == 0 {
		return time.Time{}
	}
	return time.Unix(0, m)
}
