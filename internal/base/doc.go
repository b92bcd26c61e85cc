// Package base holds what every layer of bwkv shares and nothing else: the
// one corruption marker. It is internal to bwkv; no API stability promise.
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
