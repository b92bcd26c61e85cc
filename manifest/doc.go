// Package manifest is bwkv's durable metadata: an append-only log of
// CRC-checked edit records, in the style of the LevelDB and Pebble
// MANIFEST, written through vfs so that power-loss and I/O-error tests
// reach it (docs/architecture.md step 4, §7, §8).
//
// Internal to bwkv; no API stability promise.
//
// # Contents
//
// An Edit changes the State: format version and options, the counters
// (NextPID, NextAddr, NextFileID, Oracle, and NextManifest, the manifest's
// own file counter), the checkpoint Frontier and AnalysisStart, the page
// table (PID -> address of the newest durable frame), the address ranges
// -> data file map, the data files with their total and live bytes, the
// retired files Open must finish deleting, and the GC stage mark. The State
// is what applying every edit in order yields; State.Apply validates each
// edit against it (counters never move back, ranges never overlap, a file
// is retired only when no range names it, a staged file is never
// registered, ...), and a violation is a *base.CorruptionError.
//
// # Files
//
// The directory holds MANIFEST-%06d files and a CURRENT file whose content
// is the live manifest's name and a newline. Every manifest file starts
// with a snapshot edit of the whole State (NextManifest set past its own
// number), followed by one record per commit. A record is
//
//	length  uint32 little-endian, payload bytes (> 0)
//	crc     uint32 little-endian, CRC-32C (Castagnoli) of length and payload
//	payload encoded Edit
//
// and an encoded Edit is a version byte (1; a larger one is base.ErrVersion)
// followed by (tag, value) pairs in strictly increasing tag order, varints
// from encoding/binary, each present field once (see Edit.Encode). The
// decoder is strict (minimal varints, no empty lists, no unknown tags), so
// every accepted payload re-encodes to the same bytes.
//
// # Writing
//
// One writer: Commit validates the edit against the State, appends its
// record at the end of the last valid record, fsyncs, and only then
// applies it to the in-memory State (so State, FileOf and Stats describe
// durable commits only). A failed write or fsync leaves the Manifest
// failed: the record may or may not be durable, and a failed fsync is never
// retried and trusted.
//
// When the live file has grown past max(4 MiB, twice its snapshot), the
// next commit rotates: it writes MANIFEST-n (n = NextManifest) holding a
// snapshot of the State and then the commit's own record, fsyncs it and the
// directory, writes CURRENT.tmp, fsyncs it, renames it over CURRENT and
// fsyncs the directory; then it removes the old manifest. Rewriting only
// after the log doubles the snapshot keeps the amortized cost per commit
// proportional to the commit's size. The first commit of a new manifest
// is such a rotation, to MANIFEST-000001.
//
// Open only reads. The first mutation (Prepare, or the first Commit)
// truncates a torn tail and removes leftover files of an interrupted
// rotation, so the caller can validate everything it read before anything
// changes.
//
// Failpoints: failpoints.ManifestAppend fires after a record is written
// and before its fsync; failpoints.ManifestRotate after the new manifest
// file and its directory entry are durable and before CURRENT changes.
//
// # Crash safety
//
// The argument rests on the vfs durability model: file data is durable
// after File.Sync, a create, rename or remove after SyncDir of its
// directory, and a rename replaces its target atomically.
//
//   - A commit that returned nil is durable. Appends: its record was
//     fsynced after every earlier record (each commit fsyncs before the
//     next record is written), so the durable log holds it and everything
//     before it intact. Rotations: the new file was fsynced and its
//     directory entry made durable before CURRENT.tmp was renamed, and the
//     rename was made durable before rotate returned; the old file is
//     removed only after that.
//   - Replay finds exactly a prefix of the commits. Only the last record
//     of the live file can be damaged by a crash, since it is the only one
//     written after the last fsync; it is then short, has a bad CRC or is
//     zeros at the end of the file, and replay ignores it. A damaged record
//     followed by a valid one cannot be produced by a crash and is
//     corruption. The ignored record belongs to a commit that never
//     returned nil, so dropping it is allowed; Prepare truncates it before
//     the next append so it can never be mistaken for damage in the middle
//     of the log.
//   - CURRENT always names a complete file. It is replaced only by the
//     rename of a fully fsynced temporary, and only after the file it names
//     is fsynced with a durable directory entry. A crash before the rename
//     is durable leaves CURRENT naming the old file, which still exists;
//     the new file is an orphan, never read, removed by the next Prepare
//     (or overwritten: its number is not yet consumed by any durable
//     state).
//   - Before CURRENT first exists, the only write is the creating rotation
//     (MANIFEST-000001, at most two records); Open treats such a directory
//     as new, since that commit never returned nil. Any other manifest file
//     without CURRENT means CURRENT was lost, which Open reports as
//     corruption rather than starting afresh and orphaning the data files.
//   - A rotation error before the rename leaves the old file live and the
//     Manifest usable; the commit did not happen. From the rename on, its
//     outcome is unknown and the Manifest fails.
//
// # Concurrency
//
// Commit, Rotate, Prepare, SetRotateBytes and Close serialize on one
// mutex, held across I/O. State returns a deep copy (O(pages + files))
// under a read lock that is never held across I/O; FileOf reads an
// immutable, atomically published range slice and takes no lock.
package manifest
