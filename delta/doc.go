// Package delta holds bwkv's page records: the small delta records writers
// prepend to a page's chain and the immutable flat base pages that
// consolidation builds.
//
// Internal to bwkv; no API stability promise.
//
// A published record is never mutated (INV-M1); readers follow pointers
// without locks and the Go GC reclaims what no state reaches. A base page
// keeps its entries' fixed fields in one array, their keys back to back in
// one buffer and their values in another, so the GC traces a few pointers
// per page instead of one per entry, and a search or a scan that reads keys
// and versions touches consecutive memory, not a line beside each value.
//
// Entries are ordered by key, and the versions of one key newest first. A
// version is (txid, seq) plus flags: Tombstone for a delete, CLR for a
// compensation written by a rollback (its value is the restored old value; a
// reader that meets a CLR of txn T ignores every version of T for that key).
//
// Frame bytes that fail validation (DecodeFrame, VerifyFrame,
// ParseFrameHeader) return a *base.CorruptionError (internal/base) whose
// Offset is inside the frame and whose File is empty: package pool, which
// knows where the frame lives, names the file and shifts the offset.
//
// # Blob frames
//
// A frame of kind KindBlob holds one large value on its own (blob.go); an
// entry of a delta or base frame may hold, with the Blob version flag, a
// BlobRef to it instead of the value. References exist only in encoded
// frames: Frame.Refs tells AppendFrame which entries to write as
// references, and Frame.Materialize puts the values back into a decoded
// frame, checking each against its reference's length and CRC, so records
// in memory always hold their values.
package delta
