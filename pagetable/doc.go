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
// The table also keeps the page cache's bookkeeping, all O(1): each slot's
// accounted state size and the resident total (Account), a CLOCK reference
// bit (Touched), and a FIFO ring of eviction candidates de-duplicated by a
// slot flag, fed from the write path (loads and published dirty sets) and
// never by walking the table.
package pagetable
