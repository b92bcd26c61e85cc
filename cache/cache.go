package cache

import (
	"log/slog"
	"sync/atomic"

	"github.com/bwkv/bwkv/generation"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
	"github.com/bwkv/bwkv/tree"
)

// HardFloor is the part of the hard limit that does not scale with
// CacheBytes, so that tiny budgets (tests use 1 byte) throttle only when
// pages pile up.
const HardFloor = 4 << 20

// HardBase is the hard limit without the unpublished frames: twice
// CacheBytes plus HardFloor. It is the one place the limit is written
// (Cache.hardLimit; the engine's tests read it too).
func HardBase(cacheBytes int64) int64 { return 2*cacheBytes + HardFloor }

// Pages is what the cache needs of the mapping table
// (*pagetable.Table): the slots' ring words and the resident totals.
type Pages interface {
	// Rings returns pid's ring word (pagetable.Slot.Rings, which the
	// cache alone reads and writes), nil if pid was never mapped.
	Rings(pid pagetable.PID) *atomic.Uint32
	// Resident is the accounted memory of all resident states;
	// InnerResident the part inner pages hold.
	Resident() int64
	InnerResident() int64
}

// Tree is what the cache needs of the index (*tree.Tree).
type Tree interface {
	// Evict shrinks a clean leaf to a stub, or drops a stub when
	// dropStubs is set (tree.Tree.Evict).
	Evict(pid pagetable.PID, dropStubs bool) tree.Evicted
	// Compact consolidates a stub leaf whose chain grew long.
	Compact(pid pagetable.PID) error
	// Shorten consolidates a resident leaf whose chain reached a third
	// of ChainMax (after Evict reported EvictLongChain).
	Shorten(pid pagetable.PID) error
	// StubBytes is the memory stubs themselves hold.
	StubBytes() int64
	// MissedBytes is the bytes of pages read from disk so far, loaded or
	// peeked: the clock Admit measures reuse with.
	MissedBytes() int64
}

// Gens is what the cache needs of the generation manager
// (*generation.Manager): the unpublished generations.
type Gens interface {
	Hot() *generation.Gen
	Sealed() *generation.Gen
}

// Env is what the cache asks of the rest of the engine.
type Env struct {
	// CacheBytes is the budget for clean pages (Options.CacheBytes).
	CacheBytes int64
	// ReadOnly: no goroutine runs; callers of Check evict themselves and
	// WantCompact queues nothing.
	ReadOnly bool
	// NoEvict keeps Run from evicting or consolidating anything (tests
	// that make stubs themselves and measure what a write to one reads,
	// with a cache too small to admit it).
	NoEvict bool
	// Recovering reports whether Open's recovery runs (a read-only DB
	// then evicts nothing; see Check). Read-only DBs only.
	Recovering func() bool

	Pages Pages
	Tree  Tree
	Gens  Gens

	// Forget, if set, drops the GC ledger's chain of a page whose state
	// left memory entirely.
	Forget func(pid pagetable.PID)
	// KickCheckpoint asks the checkpointer for a cut (it reads
	// TakePressure).
	KickCheckpoint func()
	// BackgroundError counts and reports a failed background step.
	BackgroundError func(err error)
	// Log receives the warnings of failed background steps.
	Log *slog.Logger
}

// Stats are the cache's counters since Open.
type Stats struct {
	// Evictions counts leaves made stubs and stubs dropped.
	Evictions uint64
	// Compactions counts background consolidations of stub chains.
	Compactions uint64
	// Shortened counts leaves the evictor consolidated instead of
	// evicting them (in steady use, with a long chain).
	Shortened uint64
}

// Cache is the page cache's policy and its evictor: its candidate rings,
// mailbox, counters and the pressure flag. Safe for concurrent use; Run is
// its goroutine.
type Cache struct {
	env  Env
	kick chan struct{}
	// evictQ holds eviction candidates: pages loaded, or whose dirty
	// generation was published, not yet examined. compactQ holds stub
	// leaves whose chains want a background consolidation.
	evictQ, compactQ ring

	evictions   atomic.Uint64
	compactions atomic.Uint64
	shortened   atomic.Uint64
	// pressure asks the checkpointer for a cut below CheckpointBytes.
	pressure atomic.Bool
}

// New returns the cache of one DB. Env's Pages, Tree, Gens, KickCheckpoint,
// BackgroundError and Log must be set (Recovering too when ReadOnly).
func New(env Env) *Cache {
	return &Cache{env: env, kick: make(chan struct{}, 1), evictQ: ring{bit: inEvict}, compactQ: ring{bit: inCompact}}
}

// Stats returns the counters.
func (c *Cache) Stats() Stats {
	return Stats{Evictions: c.evictions.Load(), Compactions: c.compactions.Load(), Shortened: c.shortened.Load()}
}

// unpublished is the frame bytes installed in generations not yet
// published (generation.Gen.Installed): the dirty part of the resident
// pages, which CacheBytes (a budget for clean pages) does not cover. Like
// a memtable next to a block cache, it is bounded by the checkpoint
// backpressure. It counts frames, not whole pages, so under writes
// scattered over many pages it underestimates the dirty memory: then the
// pressure cuts and the hard limit keep the total bounded. (Gen.Bytes,
// which takes back the frames consolidations fold, would underestimate it
// further: a W1 whose leaves fill the cache then shortened and evicted
// more, 4% slower in paired runs.) O(1).
func (c *Cache) unpublished() int64 {
	n := c.env.Gens.Hot().Installed()
	if g := c.env.Gens.Sealed(); g != nil {
		n += g.Installed()
	}
	return n
}

// budget is the resident total the evictor aims for: CacheBytes of clean
// pages plus the dirty part.
func (c *Cache) budget() int64 { return c.env.CacheBytes + c.unpublished() }

// hardLimit is the resident leaf total at which writers wait for a
// publish (backpressure): HardBase plus the unpublished frame bytes.
func (c *Cache) hardLimit() int64 { return HardBase(c.env.CacheBytes) + c.unpublished() }

// overBudget reports whether resident leaves exceed the budget. O(1).
func (c *Cache) overBudget() bool { return c.leafResident() > c.budget() }

// leafResident is the memory of resident leaves (stubs included): what
// the budget, the evictor and the hard limit govern. Inner pages are
// accounted apart (pagetable.InnerResident) and never evicted: a
// checkpoint or an eviction cannot shrink them, so counting them here
// made every write force a useless cut once they alone passed the hard
// limit. Their own bound follows from the data: one separator (key and
// child PID) per page below them, about (separator bytes + 40) per leaf
// (Options.CacheBytes). O(1).
func (c *Cache) leafResident() int64 { return c.env.Pages.Resident() - c.env.Pages.InnerResident() }

// Loaded makes a page just read from disk an eviction candidate and
// checks the budget (tree.Env.Loaded). O(1) under the budget.
func (c *Cache) Loaded(pid pagetable.PID) {
	c.evictQ.offer(c.env.Pages, pid)
	c.Check()
}

// Check runs after a page load and a write: it wakes the evictor when
// the budget is exceeded. A read-only DB runs no background goroutines, so
// there the caller evicts a bounded batch itself. O(1) under the budget.
func (c *Cache) Check() {
	if !c.overBudget() {
		return
	}
	if c.env.ReadOnly {
		// Recovery's redo loads a stub leaf in full and then writes to
		// it; evicting here would turn it back into a stub first and the
		// write would load it again forever. A read-only open keeps
		// redone pages anyway (they are dirty and never published), so
		// eviction waits until recovery ends.
		if !c.env.Recovering() {
			c.evict(64)
		}
		return
	}
	c.wake()
}

// wake posts to the mailbox without blocking (one pending wake suffices).
func (c *Cache) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// WantCompact queues a stub leaf whose chain grew long for the
// background worker (tree.Env.WantCompact). O(1).
func (c *Cache) WantCompact(pid pagetable.PID) {
	if c.env.ReadOnly {
		return
	}
	c.compactQ.offer(c.env.Pages, pid)
	c.wake()
}

// OfferPublished makes the pages a published generation dirtied eviction
// candidates. O(pages the generation dirtied), in the checkpointer.
func (c *Cache) OfferPublished(g *generation.Gen) {
	for _, pid := range g.Dirty() {
		c.evictQ.offer(c.env.Pages, pid)
	}
	c.Check()
}

// Admit decides, when a point read or write misses stub leaf s, whether
// the page is loaded and cached (true) or searched on disk and left a stub
// (false; tree.Env.Admit). While the cache fills (resident leaves under
// the budget less a quarter of CacheBytes: below where the evictor stops,
// so a full cache is never taken for a filling one), it is loaded.
// Otherwise it is loaded only if its last two reuse distances (the bytes
// of pages read from disk between a miss of it and the one before) were
// both under CacheBytes: it would then most likely have stayed cached. A
// page used again only after more than a cache's worth of other pages
// stays on disk and evicts nothing: the case a full cache mostly sees
// when the data is far larger than it and the accesses spread over it.
// One short distance is not enough: under accesses spread evenly over
// data D times the cache, about 1/D of the misses come that soon by
// chance (a tenth at 2M x 1 KiB through 256 MiB), and a full load costs
// several peeks for a page that is not used again before it is evicted;
// two in a row come by chance about 1/D^2 of the time, and a page in
// steady use passes both.
// A leaf with nothing in memory (s nil) has no recorded miss: it comes
// back as a stub (tree.Tree's point accesses). Pages recovery writes are
// always loaded. O(1).
func (c *Cache) Admit(s *node.Stub) bool {
	if c.leafResident() < c.budget()-c.env.CacheBytes/4 || (c.env.Recovering != nil && c.env.Recovering()) {
		return true
	}
	if s == nil {
		return false // nothing of it in memory: no miss recorded
	}
	now := c.env.Tree.MissedBytes()
	prev, ok := s.Miss(now)
	return s.Short(ok && now-prev < c.env.CacheBytes)
}

// MustWait reports whether a writer must wait for the next publish
// because resident leaves passed the hard limit while a publish can clean
// some (a sealed generation waits, or the hot one holds frames); it then
// asks the checkpointer for a cut under pressure. O(1).
func (c *Cache) MustWait() bool {
	if c.leafResident() > c.hardLimit() && (c.env.Gens.Sealed() != nil || c.env.Gens.Hot().Frames() > 0) {
		c.pressure.Store(true)
		c.env.KickCheckpoint()
		return true
	}
	return false
}

// TakePressure reports and clears a request for a cut below
// CheckpointBytes (the checkpointer, before it decides to cut).
func (c *Cache) TakePressure() bool { return c.pressure.Swap(false) }

// Run is the background evictor; it also consolidates long stub chains
// (so blind inserts never wait for a full read). It returns when stop is
// closed. Read-write DBs only.
func (c *Cache) Run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-c.kick:
		}
		if c.env.NoEvict {
			continue
		}
		for c.compactQ.len() > 0 {
			c.compact(64)
			if c.overBudget() {
				c.evict(256)
			}
			select {
			case <-stop:
				return
			default:
			}
		}
		if !c.overBudget() {
			continue
		}
		c.evict(-1)
		if c.leafResident() > c.budget()+c.env.CacheBytes/4 && c.env.Gens.Hot().Frames() > 0 {
			// What is left is dirty: a cut turns it into candidates.
			c.pressure.Store(true)
			c.env.KickCheckpoint()
		}
	}
}

// compact runs the queued consolidations of long stub chains (at most
// max per call, so eviction is not starved).
func (c *Cache) compact(max int) {
	for i := 0; i < max; i++ {
		pid, ok := c.compactQ.take(c.env.Pages)
		if !ok {
			return
		}
		c.compactions.Add(1)
		if err := c.env.Tree.Compact(pid); err != nil {
			// The page stays a stub; its next writer or reader retries
			// the read and reports the error.
			c.env.BackgroundError(err)
			c.env.Log.Warn("bwkv: background consolidation failed", "pid", pid, "err", err)
		}
	}
}

// evict shrinks clean leaves until the resident total is under the budget
// less 10% of CacheBytes, examining at most max candidates (max < 0: one
// pass over the ring). Referenced pages go back to the ring; dirty or
// non-leaf ones leave it and return when their generation is published or
// they are reloaded.
func (c *Cache) evict(max int) {
	target := c.budget() - c.env.CacheBytes/10
	if n := c.evictQ.len(); max < 0 || max > n {
		// At most one visit per candidate: a second visit in the same
		// pass would drop a page whose reference bit this pass cleared
		// (one its caller is about to use).
		max = n
	}
	for i := 0; i < max && c.leafResident() > target; i++ {
		pid, ok := c.evictQ.take(c.env.Pages)
		if !ok {
			return
		}
		// Stubs are small and save a disk read per blind insert: they
		// are dropped only while they hold over a quarter of the budget.
		dropStubs := c.env.Tree.StubBytes() > c.env.CacheBytes/4
		switch c.env.Tree.Evict(pid, dropStubs) {
		case tree.EvictStubbed:
			// The stub stays a candidate: untouched for a whole pass of
			// the ring, it is dropped too.
			c.evictions.Add(1)
			c.evictQ.offer(c.env.Pages, pid)
		case tree.EvictDropped:
			c.evictions.Add(1)
			// Nothing of the page stays in memory: neither does its
			// ledger chain (the GC reads it from disk if it needs it).
			if c.env.Forget != nil {
				c.env.Forget(pid)
			}
		case tree.EvictReferenced:
			c.evictQ.offer(c.env.Pages, pid)
		case tree.EvictLongChain:
			// A page in steady use whose chain holds superseded versions:
			// consolidating it frees them and shortens its reads.
			// The new base is dirty: the page returns to the ring
			// when its generation is published.
			c.shortened.Add(1)
			if err := c.env.Tree.Shorten(pid); err != nil {
				c.env.BackgroundError(err)
				c.env.Log.Warn("bwkv: consolidation of a cached page failed", "pid", pid, "err", err)
			}
			c.evictQ.offer(c.env.Pages, pid)
		}
	}
}
