// Package bwkv is an embedded, transactional key-value engine.
//
// Its index is a Bw-tree: a mapping table routes page IDs to delta chains,
// writers prepend small delta records instead of rewriting pages, and
// readers never block on writers. Transactions have snapshot isolation with
// first-writer-wins conflicts.
//
// # Use
//
//	db, err := bwkv.Open(dir, nil)
//	...
//	err = db.Update(func(tx *bwkv.Txn) error { return tx.Put(k, v) })
//	v, err := db.Get(k)
//
// # Memory ownership
//
// Get returns a slice the caller owns. GetAppend appends into the caller's
// buffer (allocation-free when it has room). Iter.Key and Iter.Value are
// valid until the next positioning call on that iterator and must not be
// modified (they point into immutable page memory). Nothing bwkv hands out
// aliases memory it later mutates or reuses, and bwkv keeps no reference to
// the key and value slices passed to Put.
//
// # Concurrency
//
// A DB and a Snapshot are safe for concurrent use. A Txn and an Iter are for
// one goroutine at a time.
//
// # Durability
//
// Every write is logged with the full old value; Commit returns after its
// record is durable (DurabilitySync, group commit) or appended
// (DurabilityRelaxed). Dirty pages are checkpointed to data files by a
// background checkpointer when CheckpointBytes of frames accumulate; Open
// loads pages lazily and replays the log from the last checkpoint. After
// each checkpoint the same goroutine runs a data-file GC round: files
// whose frames no page reaches any more are deleted, and files below
// Options.GCLiveRatio live (or any, least live first, while the data
// files exceed Options.GCSpaceAmp times their live bytes) are rewritten
// into new files. Stats.GC reports it.
//
// # Caveats
//
//   - CacheBytes bounds clean pages: the evictor shrinks clean leaves to
//     stubs (fences, a key filter, the durable head) and drops idle stubs;
//     dirty pages stay until a checkpoint publishes them (they are not
//     part of the budget), and writers wait when resident leaves pass
//     twice CacheBytes plus 4 MiB plus the unpublished frames. Inner
//     pages stay resident outside the budget (about separator + 40 bytes
//     per leaf; Stats.Cache.InnerBytes). Reads of an evicted leaf take its
//     page lock briefly to install what they read. At most MaxOpenFiles
//     data files stay open (least recently used ones are closed).
//   - The data-file GC runs in the checkpointer: under a write load that
//     outruns it, writers see backpressure during a round as during a
//     checkpoint. A read-only DB runs no GC.
//   - Snapshots are pooled so that NewSnapshot and Close allocate nothing:
//     never use a Snapshot after closing it, and close it exactly once.
//   - Write skew is possible: snapshot isolation does not serialize two
//     transactions that read overlapping data and write disjoint keys.
//   - A transaction's iterator works a leaf at a time; writes the
//     transaction makes while iterating may or may not show up in leaves
//     the iterator already loaded.
package bwkv
