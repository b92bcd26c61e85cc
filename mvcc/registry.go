package mvcc

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

const slotsPerShard = 8

// provisional marks a slot (or overflow value) that holds only a lower
// bound of its reader's start: the reader registered but has not settled
// its sampled start yet (Settle).
const provisional = 1 << 63

type paddedSlot struct {
	v atomic.Uint64 // 0: free; else (start or lower bound) + 1, maybe | provisional
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
	// clock, once Tick set it, is the wall-clock time (unix nanos) a
	// registration records instead of reading the clock: a Register per
	// snapshot read made time.Now about 4% of a read-heavy load's CPU.
	// 0: never ticked (a read-only DB), Register reads the clock.
	clock atomic.Int64

	overMu   sync.Mutex
	overflow map[*Reg]overReg // registrations that found no free slot

	// hints remembers, per P (sync.Pool keeps a private item per P), the
	// slot the last registration there claimed. A claim tries that slot
	// first: its line was last written by the same CPU, usually still in
	// its cache, where a slot picked at random was last written by
	// another CPU, or by none for a while.
	hints sync.Pool // of *slotHint
}

// slotHint is a slot index: shard*slotsPerShard + slot.
type slotHint struct{ i uint32 }

// overReg is an overflow registration: its slot value and its time.
type overReg struct {
	v     uint64 // as paddedSlot.v
	since int64
}

// Reg is one registration. The zero value is unregistered.
type Reg struct {
	slot *paddedSlot
	// shard is the index of slot's shard (set with slot).
	shard int32
	over  bool
}

// Shard returns the index of the registry shard g's slot is in, in
// [0, Registry.Shards()), or -1 if g holds no slot (unregistered, or
// registered in the overflow). Registrations on one P claim slots next to
// each other (Registry.hints), so the shard tells roughly which CPU
// registered: a caller can keep per-CPU state by it.
func (g *Reg) Shard() int {
	if g.slot == nil {
		return -1
	}
	return int(g.shard)
}

// NewRegistry sizes the registry for the machine.
func NewRegistry() *Registry {
	n := 4 * runtime.GOMAXPROCS(0)
	if n < 16 {
		n = 16
	}
	r := &Registry{shards: make([]shard, n), overflow: make(map[*Reg]overReg)}
	r.hints.New = func() any { return &slotHint{i: rand.Uint32()} }
	return r
}

// Shards returns the number of shards (a Reg.Shard is below it).
func (r *Registry) Shards() int { return len(r.shards) }

// Register stores lowerBound (which must be <= the start the caller samples
// next) in a free slot, marked provisional until Settle. O(1) expected;
// allocation-free unless every slot is taken (or a GC emptied the hint
// pool: one small hint per P then).
func (r *Registry) Register(g *Reg, lowerBound uint64) {
	r.RegisterAt(g, lowerBound, r.Now())
}

// Now returns the time registrations record (Unix nanoseconds): the
// last Tick, or the clock's reading if nothing ticks (a read-only
// database runs no ticker).
func (r *Registry) Now() int64 {
	if now := r.clock.Load(); now != 0 {
		return now
	}
	return time.Now().UnixNano()
}

// Tick sets the time later registrations record (unix nanos, > 0): the
// engine ticks every few milliseconds, so an age OldestSince implies is
// at most that much (plus the ticker's scheduling delay) too long, never
// too short.
func (r *Registry) Tick(now int64) { r.clock.Store(now) }

// RegisterAt is Register with the registration time (Unix nanoseconds)
// given, for a caller that read the clock already.
func (r *Registry) RegisterAt(g *Reg, lowerBound uint64, since int64) {
	v := (lowerBound + 1) | provisional
	n := uint32(len(r.shards)) * slotsPerShard
	h := r.hints.Get().(*slotHint)
	s := h.i % n
	for probe := uint32(0); probe < n; probe++ {
		i := (s + probe) % n
		sl := &r.shards[i/slotsPerShard].slots[i%slotsPerShard]
		if sl.v.Load() == 0 && sl.v.CompareAndSwap(0, v) {
			sl.since.Store(since)
			g.slot = sl
			g.shard = int32(i / slotsPerShard)
			h.i = i
			r.hints.Put(h)
			return
		}
	}
	r.hints.Put(h)
	r.overMu.Lock()
	r.overflow[g] = overReg{v, since}
	g.over = true
	r.overMu.Unlock()
}

// Settle replaces g's lower bound by the start its reader sampled after
// registering (start >= the bound, so the watermark only rises). From then
// on consolidation keeps exactly the version this start sees instead of
// everything newer than the bound (node.Retention). O(1).
func (r *Registry) Settle(g *Reg, start uint64) {
	if g.slot != nil {
		g.slot.v.Store(start + 1)
		return
	}
	if g.over {
		r.overMu.Lock()
		o := r.overflow[g]
		o.v = start + 1
		r.overflow[g] = o
		r.overMu.Unlock()
	}
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
	for _, o := range r.overflow {
		if v := o.v &^ provisional; v-1 < m {
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
	for _, o := range r.overflow {
		add(o.v)
	}
	r.overMu.Unlock()
	return dst, p
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
