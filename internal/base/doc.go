// Package base holds what every layer of bwkv shares and nothing else: the
// identity types (PID, Addr, LSN, TxID, FileID), the one corruption
// marker and a CPU cache prefetch hint. It is internal to bwkv; no API
// stability promise.
//
// # Identity types
//
// wal.LSN and wal.TxID, manifest.FileID and pagetable.PID are aliases of
// the types here, so they are one type wherever they meet. Fields that
// still hold these identities as plain uint64 (delta frames and records,
// manifest.Edit and State, the checkpoint and GC, mvcc's txids and
// timestamps, which share one clock) are converted at those packages'
// boundaries; moving them to these types is a later, separate change.
//
// # Errors
//
// Bytes on disk that fail validation, in any file the engine reads (log
// segments, the manifest, data files, a backup stream), are reported as a
// *CorruptionError naming the file, the offset and what was wrong; it
// matches ErrCorruption with errors.Is. Every layer builds it with
// CorruptionErrorf and wraps it with context, and the root package
// re-exports the type and the sentinel, so errors.As(err, &ce) with a
// *bwkv.CorruptionError finds corruption from any layer with no
// translation. Files written by a newer format version return an error
// wrapping ErrVersion.
//
// # Prefetch
//
// Prefetch is a CPU cache hint: it asks for memory a caller will read
// soon and returns at once. The index uses it where a read is a chain of
// dependent cache misses whose next link is known early (a forward scan's
// crossing into the next leaf, tree.Ahead, through node.Page's
// PrefetchState and delta.Base's PrefetchHeader and PrefetchEntries), and
// where the address of what a read copies next is known before the work
// in between (a point read's value, delta.Base.PrefetchValue; a leaf's
// search words, in delta.Base's search). It lives here, in the one
// package every layer may import, so no index package depends on another
// for it. It is assembly on amd64 and arm64 and a no-op elsewhere.
//
// Package base imports nothing of bwkv: every other package may import it.
package base
