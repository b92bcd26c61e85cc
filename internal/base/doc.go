// Package base holds what every layer of bwkv shares and nothing else: the
// identity types (PID, Addr, LSN, TxID, FileID) and the one corruption
// marker. It is internal to bwkv; no API stability promise.
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
// Package base imports nothing of bwkv: every other package may import it.
package base
