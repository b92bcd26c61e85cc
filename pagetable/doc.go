// Package pagetable is bwkv's mapping table: page IDs (PIDs) to page state.
//
// Internal to bwkv; no API stability promise.
//
// The table is a two-level chunked array: a fixed directory of chunk
// pointers, each chunk a fixed array of slots. Growing allocates a new chunk
// and publishes it with one atomic store, so readers never block and nothing
// is ever copied. A slot holds an atomic pointer to the page's immutable
// published state and the page's writer mutex (docs/architecture.md: writers of one page
// serialize; readers take no locks).
//
// PID allocation and release are O(1): a LIFO stack of free PIDs plus a FIFO
// of retired PIDs tagged with the epoch in which they were removed. INV-P2: a
// retired PID moves to the free stack only when Reclaim is told that epoch is
// published (a checkpoint made the removal durable); until then a crash could
// bring back a page that still names it. Eligibility is decided once, when
// the PID is retired, never by rescanning the free list.
//
// The table also keeps the page cache's per-slot bookkeeping, all O(1):
// each slot's accounted state size and the resident totals (Account), a
// CLOCK reference bit (Touched, Unref), and one word the cache alone uses
// to de-duplicate its candidate rings (Slot.Rings; the rings themselves
// live in cache/). The table keeps slots and PIDs; it decides nothing about
// eviction.
//
// # Slot fields and their owners
//
// Every Slot field is written by one package (Slot's comment has the
// table): the state and Mu by tree/ (the page's writers, loads, Evict),
// Stamp by generation/ (Manager.Touch), Disk by tree/ (Evict, and Map at
// open), the accounted size by this package (Account), the reference bit
// through this package's methods (set by readers, cleared by the eviction
// pass), and Rings by cache/. Other packages may read a field, never write
// it.
package pagetable
