package bwkv

import (
	"sync/atomic"

	"github.com/bwkv/bwkv/generation"
	"github.com/bwkv/bwkv/pagetable"
	"github.com/bwkv/bwkv/tree"
)

// The page cache (Options.CacheBytes).
//
// Every resident page state is accounted in the mapping table (its base
// and chain bytes, adjusted in O(1) at each install, load and eviction).
// CacheBytes budgets clean pages (docs/guarantees.md): the evictor's budget is
// CacheBytes plus the frame bytes of unpublished generations (the dirty
// part, like a memtable beside a block cache; see unpublished). When the
// total passes it the evictor shrinks clean leaves — pages whose every
// frame a published checkpoint made durable — until it is back under the
// budget less 10% of CacheBytes: a leaf first becomes a stub (fences, a Bloom
// filter of its keys and its durable head; node.Stub), which takes blind
// inserts of keys the filter rules out without a disk read; while stubs
// hold over a quarter of the budget, a stub left untouched for a whole pass
// is dropped. The next touch that needs the
// entries reloads the same state from the data files. Candidates are discovered on the write path, never by walking
// the tree: a page enters the candidate ring when it is loaded and when the
// generation that dirtied it is published (both O(1) per page, de-duplicated
// by a slot flag). The ring is a CLOCK: a page read since the evictor last
// passed it gets a second chance.
//
// Dirty pages cannot be dropped. When the evictor has run out of clean
// candidates and the resident total is still over the budget by a quarter,
// it asks the checkpointer for a cut even below CheckpointBytes: after the
// publish those pages are clean and become candidates. Random writes can
// dirty pages faster than checkpoints clean them (each write pins a whole
// page), so past a hard limit (cacheHardLimit) writers wait for a publish,
// like the dirty-bytes backpressure. So the memory held by pages stays
// bounded by the hard limit whatever the data size.

// cacheState is the evictor's mailbox and counters.
type cacheState struct {
	kick      chan struct{}
	evictions atomic.Uint64
	// compactions counts background consolidations of stub chains.
	compactions atomic.Uint64
	// pressure asks the checkpointer for a cut below CheckpointBytes.
	pressure atomic.Bool
}

func newCacheState() cacheState { return cacheState{kick: make(chan struct{}, 1)} }

// cacheHardFloor is the part of the cache's hard limit that does not
// scale with CacheBytes, so that tiny budgets (tests use 1 byte) throttle
// only when pages pile up.
const cacheHardFloor = 4 << 20

// cacheHardBase is the cache's hard limit without the unpublished frames:
// twice CacheBytes plus cacheHardFloor. It is the one place the limit is
// written (cacheHardLimit; the tests read it through export_test.go).
func cacheHardBase(cacheBytes int64) int64 { return 2*cacheBytes + cacheHardFloor }

// cacheHardLimit is the resident leaf total at which writers wait for a
// publish (backpressure): cacheHardBase plus the unpublished frame bytes.
func (db *DB) cacheHardLimit() int64 {
	return cacheHardBase(db.opts.CacheBytes) + db.unpublished()
}

// unpublished is the frame bytes installed in generations not yet
// published: the dirty part of the resident pages, which CacheBytes (a
// budget for clean pages) does not cover. Like a memtable next to a block
// cache, it is bounded by the checkpoint backpressure (2x CheckpointBytes).
// It counts frames, not whole pages, so under writes scattered over many
// pages it underestimates the dirty memory: then the pressure cuts and the
// hard limit keep the total bounded. O(1).
func (db *DB) unpublished() int64 {
	n := db.gens.Hot().Bytes()
	if g := db.gens.Sealed(); g != nil {
		n += g.Bytes()
	}
	return n
}

// budget is the resident total the evictor aims for: CacheBytes of clean
// pages plus the dirty part.
func (db *DB) budget() int64 { return db.opts.CacheBytes + db.unpublished() }

// overBudget reports whether resident leaves exceed the budget. O(1).
func (db *DB) overBudget() bool { return db.leafResident() > db.budget() }

// leafResident is the memory of resident leaves (stubs included): what
// the budget, the evictor and the hard limit govern. Inner pages are
// accounted apart (pagetable.InnerResident) and never evicted: a
// checkpoint or an eviction cannot shrink them, so counting them here
// made every write force a useless cut once they alone passed the hard
// limit. Their own bound follows from the data: one separator (key and
// child PID) per page below them, about (separator bytes + 40) per leaf
// (Options.CacheBytes). O(1).
func (db *DB) leafResident() int64 { return db.pt.Resident() - db.pt.InnerResident() }

// cacheCheck runs after a page load and a write: it wakes the evictor when
// the budget is exceeded. A read-only DB runs no background goroutines, so
// there the caller evicts a bounded batch itself.
func (db *DB) cacheCheck() {
	if !db.overBudget() {
		return
	}
	if db.opts.ReadOnly {
		// Recovery's redo loads a stub leaf in full and then writes to
		// it; evicting here would turn it back into a stub first and the
		// write would load it again forever. A read-only open keeps
		// redone pages anyway (they are dirty and never published), so
		// eviction waits until recovery ends.
		if !db.recovering.Load() {
			db.evict(64)
		}
		return
	}
	select {
	case db.cache.kick <- struct{}{}:
	default:
	}
}

// wantCompact queues a stub leaf whose chain grew long for the
// background worker (tree.Env.WantCompact). O(1).
func (db *DB) wantCompact(pid pagetable.PID) {
	if db.opts.ReadOnly {
		return
	}
	db.pt.EnqueueCompact(pid)
	select {
	case db.cache.kick <- struct{}{}:
	default:
	}
}

// compact runs the queued consolidations of long stub chains (at most
// max per call, so eviction is not starved).
func (db *DB) compact(max int) {
	for i := 0; i < max; i++ {
		pid, ok := db.pt.DequeueCompact()
		if !ok {
			return
		}
		db.cache.compactions.Add(1)
		if err := db.tree.Compact(pid); err != nil {
			// The page stays a stub; its next writer or reader retries
			// the read and reports the error.
			db.backgroundError(err)
			db.log.Warn("bwkv: background consolidation failed", "pid", pid, "err", err)
		}
	}
}

// evictLoop is the background evictor; it also consolidates long stub
// chains (so blind inserts never wait for a full read).
func (db *DB) evictLoop() {
	defer db.bg.Done()
	for {
		select {
		case <-db.stop:
			return
		case <-db.cache.kick:
		}
		for db.pt.CompactQueued() > 0 {
			db.compact(64)
			if db.overBudget() {
				db.evict(256)
			}
			select {
			case <-db.stop:
				return
			default:
			}
		}
		if !db.overBudget() {
			continue
		}
		db.evict(-1)
		if db.leafResident() > db.budget()+db.opts.CacheBytes/4 && db.gens.Hot().Frames() > 0 {
			// What is left is dirty: a cut turns it into candidates.
			db.cache.pressure.Store(true)
			db.kickCheckpoint()
		}
	}
}

// evict shrinks clean leaves until the resident total is under the budget
// less 10% of CacheBytes, examining at most max candidates (max < 0: one pass over the
// ring). Referenced pages go back to the ring; dirty or non-leaf ones leave
// it and return when their generation is published or they are reloaded.
func (db *DB) evict(max int) {
	target := db.budget() - db.opts.CacheBytes/10
	if n := db.pt.Candidates(); max < 0 || max > n {
		// At most one visit per candidate: a second visit in the same
		// pass would drop a page whose reference bit this pass cleared
		// (one its caller is about to use).
		max = n
	}
	for i := 0; i < max && db.leafResident() > target; i++ {
		pid, ok := db.pt.Dequeue()
		if !ok {
			return
		}
		// Stubs are small and save a disk read per blind insert: they
		// are dropped only while they hold over a quarter of the budget.
		dropStubs := db.tree.StubBytes() > db.opts.CacheBytes/4
		switch db.tree.Evict(pid, dropStubs) {
		case tree.EvictStubbed:
			// The stub stays a candidate: untouched for a whole pass of
			// the ring, it is dropped too.
			db.cache.evictions.Add(1)
			db.pt.Enqueue(pid)
		case tree.EvictDropped:
			db.cache.evictions.Add(1)
			// Nothing of the page stays in memory: neither does its
			// ledger chain (the GC reads it from disk if it needs it).
			if db.gc.ledger != nil {
				db.gc.ledger.Forget(uint64(pid))
			}
		case tree.EvictReferenced:
			db.pt.Enqueue(pid)
		}
	}
}

// offerPublished makes the pages a published generation dirtied eviction
// candidates. O(pages the generation dirtied), in the checkpointer.
func (db *DB) offerPublished(g *generation.Gen) {
	for _, pid := range g.Dirty() {
		db.pt.Enqueue(pid)
	}
	db.cacheCheck()
}
