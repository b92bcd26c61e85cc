// Package tree is bwkv's B-link Bw-tree: traversal from the root over the
// mapping table, and the structure modifications (split, root split, merge).
//
// Internal to bwkv; no API stability promise.
//
// Files: tree.go (the Tree, its configuration and what it asks of the
// engine, publishing a state), traverse.go (descents, sibling hops, reads,
// loading pages from disk), write.go (a leaf write and its consolidation),
// smo.go (splits and merges posted in parents), evict.go (eviction to
// stubs and the background consolidations), bulk.go (bulk loading),
// check.go (the structure check), hits.go (the sampled visit counter),
// hint.go (the leaf hints of point reads).
//
// # Traversal
//
// Readers take no locks. At each page a key >= the high fence follows the
// right sibling; a key below the low fence, an unmapped slot or a removed
// page restarts from the root (a PID may have been merged away or, after a
// checkpoint, reused). Every page state is immutable, so a reader that
// loaded a state reads a consistent page even if a writer publishes a new
// one meanwhile: any version visible to it was installed before its
// snapshot began, hence before the load.
//
// An iterator leaving a leaf goes to the leaf's right sibling directly
// (RightLeaf) instead of descending from the root for its high fence H.
// That is the leaf a descent would find as long as the sibling is live,
// a leaf, and still starts at H: a split of the sibling keeps its low
// fence (the moved half follows by its own link), a split of the leaf
// left behind does not change the sibling, and a merge marks the sibling
// removed. Anything else (removed, PID freed or reused, another low fence)
// falls back to the descent.
//
// A point read of a key read before may start at the leaf that answered
// it last time (hint.go): the hint is taken only if that page is a
// resident live leaf whose fences cover the key, the test a descent ends
// with, so a stale one costs a check and then the descent. The hints are
// used only while a sample of reads finds them right often enough (a
// skewed load), and only by reads: writers descend.
//
// # Locks
//
// Each page has a writer mutex in its mapping-table slot. A write locks one
// leaf. A split holds only the splitting page's lock while it publishes the
// new right page and then the left page with the sibling link (the atomic
// unit); posting the separator in the parent is a separate step under the
// parent's lock alone (plus, for a moment, the new child's lock if the
// child must be read from disk: a load installs under the page's lock), so
// it holds locks only top-down. A root split holds the
// root's lock; the two new children are unreachable until the root is
// published. A merge locks parent, left, right in that order (top-down,
// left to right); nothing else holds more than one lock, so there is no
// deadlock.
//
// # Half splits
//
// Between the two steps of a split the parent lacks the separator; readers
// reach the new page through the left page's sibling link. Posting is
// idempotent (a separator already present is not added twice) and Check
// accepts a half split. A writer whose traversal moves right from a page
// it reached from the parent posts that separator itself after its write
// (the new child is validated under the parent's lock), so a split whose
// post was lost in a crash heals on the next write that crosses it.
// Readers only follow the link.
//
// # Carried bases
//
// A writer's consolidation is usually carried (write.go, carryOf): its
// new base is never written, takes the address of the newest delta it
// absorbed and keeps the absorbed deltas not durable yet
// (delta.Carry), which the checkpointer writes as the delta frames it
// would have written without the consolidation. The on-disk chain is
// bounded by carryFrames() frames and the leaf byte bound; past them, or
// over a base not written yet, the consolidation is a whole one. The
// carry also indexes those frames (address and key hash) down to the
// written base, so a stub of the leaf reads one key's frames on disk, not
// the whole chain (node.NewStub).
// Compact's, Squash's, Rebase's and Shorten's consolidations are whole.
//
// # Merges
//
// Leaves also split above SplitBytes of keys and values, so a
// consolidation of large values copies a bounded amount. A leaf left
// underfull by consolidation (fewer than a quarter of PageSplitEntries
// keys and of SplitBytes) is merged with an adjacent leaf under the same
// parent when the result stays below three quarters of PageSplitEntries
// (so a merge never triggers a split). The merge is one atomic unit under
// the three locks: the left page is replaced by the merged contents, the
// right page is marked removed, the separator leaves the parent. Inner
// pages are not merged; an inner page always keeps at least one child.
// Root split keeps the root PID: the root's entries move to two new pages
// and the root becomes their parent.
//
// # Eviction and stubs
//
// The engine's evictor calls Evict on clean leaves (every frame durable:
// the page's dirty stamp is in a published generation and its head
// address at or below the published one). A full leaf becomes a stub
// (node.Stub): an entry-less base with the fences, the sibling, the level
// and, as its address, the durable head, plus a Bloom filter of its keys.
// Traversal works on a stub unchanged. A write of a key the filter rules
// out is a blind insert: its delta goes on the stub's chain without a disk
// read, and the checkpointer writes it linked to the stub's durable head,
// exactly as it links a delta to a resident base. A write of any other key,
// a read that needs entries (Leaf, LeafBelow, a Get the filter cannot
// answer) and a chain of 3x ChainMax (in memory and on disk) read the full
// page (fullOnce: the durable state with copies of the stub's deltas
// replayed on top, installed only if the slot still holds the stub).
// Consolidation, splits and merges work on full pages only. A stub with no
// chain may be dropped (the slot keeps the durable head; the next touch
// reads the full page). Loads install under the page lock and only if the
// slot still names the address read, so a page evicted again meanwhile is
// never installed stale.
package tree
