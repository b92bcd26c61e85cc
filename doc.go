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
// # Conflicts and waiting
//
// A write that meets another transaction's uncommitted version of its key
// waits for that transaction (up to Options.LockTimeout): if it rolls
// back the write goes on, if it commits the write fails with ErrConflict
// (first committer wins), and a wait that would close a cycle of waiting
// transactions fails at once. A transaction that got ErrConflict is
// doomed: every later call returns ErrConflict. DB.Update and
// DB.UpdateContext retry such a transaction (Options.MaxUpdateRetries, with
// jittered backoff; writers of a hot key take turns instead of racing);
// DB.Put and DB.Delete never conflict on contention alone, only after
// LockTimeout.
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
// Every write is logged; the full old value of an update or delete is
// logged too when undo can need it (at the next checkpoint cut, while the
// transaction is open), so undo never reads data files. Commit returns
// after its record is durable (DurabilitySync, group commit) or appended
// (DurabilityRelaxed). Dirty pages are checkpointed to data files by a
// background checkpointer when CheckpointBytes of frames accumulate; Open
// loads pages lazily and replays the log from the last checkpoint. After
// each checkpoint the same goroutine runs a data-file GC round: files
// whose frames no page reaches any more are deleted, and files below
// Options.GCLiveRatio live (or any, least live first, while the data
// files exceed Options.GCSpaceAmp times their live bytes) are rewritten
// into new files; small fully-live files are merged. While writes go on
// the rounds work to looser targets (an eighth of the ratio, 6 times the
// slack), so the GC copies less per byte it reclaims. Stats.GC reports it.
// Once no write has arrived for about 5 s the database settles: it
// checkpoints what is dirty, consolidates resident pages whose durable
// chain holds deltas, rotates and recycles the covered log segment and
// runs GC rounds until none has work, so an idle directory holds little
// more than the live data. DB.Compact does the same at once (after a bulk
// load, say).
//
// # Compression
//
// Options.Compression (S2 or zstd) compresses data-file frames that
// shrink by it; each frame records its codec, so a directory may mix them.
// The codec chosen at creation is stored and wins on every reopen. The
// log is not compressed.
//
// # Faults
//
// A failed fsync (of the log, the manifest or a data file) is never
// retried and trusted, since the kernel may have dropped the dirty pages:
// the DB turns read-only until it is reopened. Writes then return an
// error matching ErrReadOnly that wraps the cause, Stats.Degraded names
// it, checkpoints and GC stop, reads and Close keep working, and Open
// recovers every acknowledged commit from the log. A failed data-file
// write (a full disk) only abandons that checkpoint or GC round; a later
// one retries.
//
// Open tells a torn tail (the partly written end of the log a crash
// leaves, cut off and counted in Stats.Recovery.TornBytes) from damage: a
// bad log record followed by a valid one, a bad or missing record below
// what the last checkpoint synced, or a missing segment. Damage fails Open
// with a *CorruptionError naming the file and offset, and Open changes
// nothing; Options.WALRecovery = WALRecoveryTruncateDamaged instead keeps
// the longest valid prefix and reports what it dropped (Stats.Recovery,
// the Logger).
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
//   - Update may run its function more than once (it retries conflicts);
//     keep side effects out of it.
//   - Write skew is possible: snapshot isolation does not serialize two
//     transactions that read overlapping data and write disjoint keys.
//   - A transaction's iterator works a leaf at a time; writes the
//     transaction makes while iterating may or may not show up in leaves
//     the iterator already loaded.
package bwkv
