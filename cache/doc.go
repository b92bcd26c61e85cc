// Package cache is bwkv's page cache policy: the memory budget
// (Options.CacheBytes), the evictor goroutine that shrinks clean leaves,
// the background consolidation of long stub chains, and the hard limit at
// which writers wait for a checkpoint (docs/architecture.md, "The page
// cache and stubs"; docs/guarantees.md for the bound).
//
// Internal to bwkv; no API stability promise.
//
// # Budget
//
// Every resident page state is accounted in the mapping table (its base
// and chain bytes, adjusted in O(1) at each install, load and eviction).
// CacheBytes budgets clean pages: the evictor's budget is CacheBytes plus
// the frame bytes of unpublished generations (the dirty part, like a
// memtable beside a block cache; Cache.unpublished). Only leaves count
// (stubs included): inner pages are accounted apart and never evicted
// (Cache.leafResident says why).
//
// # Eviction
//
// When the resident total passes the budget the evictor shrinks clean
// leaves — pages whose every frame a published checkpoint made durable —
// until it is back under the budget less 10% of CacheBytes: a leaf first
// becomes a stub (fences, a Bloom filter of its keys and its durable head;
// node.Stub), which takes blind inserts of keys the filter rules out
// without a disk read; while stubs hold over a quarter of CacheBytes, a
// stub left untouched for a whole pass is dropped. The next touch that
// needs the entries reloads the same state from the data files.
//
// Candidates are discovered on the write path, never by walking the tree:
// a page enters the candidate ring when it is loaded (Cache.Loaded, the
// tree's Env.Loaded hook) and when the generation that dirtied it is
// published (OfferPublished). Both are O(1) per page: the cache's rings
// (rings.go) de-duplicate by one bit per ring in the slot's ring word
// (pagetable.Slot.Rings, which only this package reads or writes), so an
// offer of a page already waiting is one atomic load, with no map and no
// allocation. The ring is a CLOCK: a page read since the evictor last
// passed it gets a second chance.
//
// A page in steady use (found referenced by two passes in a row, not
// just loaded and read once) whose delta chain reached a third of ChainMax,
// or holds a quarter of a leaf's bytes, gets more than that: the evictor consolidates it (tree.Tree.Shorten, reported by
// Evict as EvictLongChain). The chain's superseded versions are memory the
// budget pays for and every read of the page walks: on a read-mostly data
// set slightly larger than the budget, consolidating them is what lets it
// fit (W1, 200k x 1 KiB in 256 MiB: no miss left instead of one read in
// ten loading a page). The new base is dirty, so the page leaves the ring
// until its generation is published; a page written as often as read
// keeps the long chain ChainMax allows, as it is seldom clean when the
// evictor passes.
//
// # Stub policy
//
// The decisions are here, the mechanism in tree.Tree.Evict: the evictor
// asks the tree to shrink a leaf to a stub, and to drop stubs only while
// they hold over a quarter of CacheBytes (Cache.evict); a stub the tree
// reports as stubbed stays a candidate, so one untouched for a whole pass
// is dropped. The tree's own thresholds concern chains, not memory: a stub
// whose chain reaches 3x ChainMax is queued here for a background
// consolidation (WantCompact), and at twice that its writer reads it in
// full itself.
//
// # Dirty pages and the hard limit
//
// Dirty pages cannot be dropped. When the evictor has run out of clean
// candidates and the resident total is still over the budget by a quarter
// of CacheBytes, it asks the checkpointer for a cut even below
// CheckpointBytes (the pressure flag): after the publish those pages are
// clean and become candidates. Random writes can dirty pages faster than
// checkpoints clean them (each write pins a whole page), so past a hard
// limit (HardBase plus the unpublished frames) writers wait for a publish,
// like the dirty-bytes backpressure (Cache.MustWait). So the memory held
// by pages stays bounded by the hard limit whatever the data size.
//
// # Owner and goroutines
//
// A Cache is one per DB. The engine starts Run in its own goroutine
// (read-write DBs only) and stops it by closing the channel it passes;
// Loaded, Check, WantCompact, OfferPublished, MustWait and TakePressure
// are safe from any goroutine. A read-only DB runs no goroutine: the
// caller whose load or write passed the budget evicts a bounded batch
// itself, except while recovery runs. The cache reaches the rest of the
// engine only through Env.
package cache
