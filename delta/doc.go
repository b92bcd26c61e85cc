// Package delta holds bwkv's page records: the small delta records writers
// prepend to a page's chain and the immutable flat base pages that
// consolidation builds.
//
// Internal to bwkv; no API stability promise.
//
// A published record is never mutated (INV-M1); readers follow pointers
// without locks and the Go GC reclaims what no state reaches. A base page
// stores its entries in one byte slab plus an offset array, so the GC traces
// two pointers per page instead of one per entry.
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
package delta
