// Package wal is bwkv's write-ahead log: the record codec, segment files,
// group commit, replay and recycling (docs/formats.md). It knows nothing of the
// index or of visibility; the root package decides what to log and when to
// wait for durability.
//
// Internal to bwkv; no API stability promise.
//
// # Records
//
// An LSN is the offset of a record's first byte in the global log stream.
// Every record is
//
//	length   uint32  the whole record, header included
//	crc      uint32  CRC-32C (Castagnoli) of every other byte of the record
//	type     uint8   Begin, Put, Update, Delete, CLR, Commit, End, Image
//	txid     uint64
//	seq      uint32
//	prevLSN  uint64  the transaction's previous record
//	flags    uint8   bit 0: old value present, bit 1: CLR restores a
//	                 tombstone, bit 2: old value deferred to an Image
//	payload          what the type carries, each byte string uvarint-length-prefixed:
//	                 Put: key, value; Update: key, value, old value unless
//	                 deferred; Delete: key, old value if bit 0; CLR: key,
//	                 value unless a tombstone, then undo-next as a uvarint;
//	                 Image: key, old value, then the LSN of its write as a
//	                 uvarint
//
// little endian. The CRC covers the length field too (it is computed over
// bytes [0,4) and [8,length)), so a damaged length cannot frame a
// plausible record. The old value an undo needs is always in the log, so
// undo never reads data files: in the Update or Delete record itself, or,
// when the record defers it (bit 2, databases of format 4 and later), in
// a before-image (Image) the engine logs at the next cut while the
// transaction is open, before any checkpoint can hold the write. An Image
// is outside its transaction's chain (seq and prevLSN zero). Delete of a
// missing key and every Put have no old value. Decoding is strict and
// canonical: unknown types or flags, overlong varints, fields past the end
// and trailing bytes are rejected, and
// re-encoding a decoded record reproduces its bytes (FuzzDecode checks
// this).
//
// # Segments
//
// The log is a sequence of files <dir>/%016x.log, each named by the LSN of
// its first byte. The stream has no padding: a segment starts exactly where
// its predecessor ends. A record never spans segments: when a record would
// push a segment past Options.SegmentBytes, it starts the next one (a
// record larger than a segment is refused). Open creates a missing log
// directory durably (it fsyncs the parent of every directory it creates).
//
// Rotation protocol: segment N is fsynced before N+1 is created, and the
// directory is fsynced right after the create and before any byte is
// written to N+1. Rotation runs where the pending bytes are written: in a
// group-commit leader (Sync), in the relaxed-mode flusher, or in the
// writer's background goroutine, which Append kicks when the pending
// bytes past the soft flush threshold cross a segment boundary or pass
// twice the threshold; never in an Append below the hard limit, because
// the engine appends under a page lock and the cut gate and a rotation
// waits for an fsync. Hence an existing older segment is always complete
// on disk, which is what lets the reader treat any damage outside the last
// segment as corruption, and a segment holding an acknowledged commit
// always has a durable directory entry. Recycle deletes segments wholly
// below an LSN (never the newest, never past the durable LSN), oldest first,
// then fsyncs the directory; a crash in between leaves only segments the
// reader ignores. With Options.Spares it keeps some of them as spare files
// that rotations write over (spare.go); that needs Options.BindLSN.
//
// # Records bound to their LSN
//
// With Options.BindLSN (format 3) a record's CRC starts from the CRC of
// its LSN (codec.go: lsnSeed), so it reads as valid only at the LSN it was
// written at. Replay and the torn-tail scan check each record at its own
// LSN (ReplayOptions.BindLSN). A writer and its readers must agree on the
// setting: the database derives it from its manifest's format version.
//
// # Group commit
//
// Append encodes the record into an in-memory buffer under the append mutex
// and returns its LSN; it does no I/O below a hard limit, the log's
// backpressure, past which it writes (and rotates) itself. Past a soft
// limit the bytes are due: the engine writes them out (FlushDue, no
// rotation) once the appending transaction has ended and released its
// locks, so that writers queued on its keys do not wait for the write.
// Sync is leader/follower: a caller whose LSN is not durable becomes the
// leader unless a sync is in flight (then it waits). The leader swaps the buffer out (the append mutex is held only
// for the swap, never across a write or an fsync), writes it under the
// write lock, rotating where needed, releases the write lock, fsyncs once,
// publishes the durable LSN and wakes every waiter: those it covered
// return without an fsync, and one of the others leads the next batch.
// One fsync therefore covers every record appended before it, and the
// batch grows with the number of committers (Stats.RecordsPerSync).
// Because the fsync runs outside the write lock, appenders keep writing
// meanwhile; a rotation waits for an in-flight fsync before it closes the
// segment.
//
// In relaxed mode commits do not call Sync; the background goroutine also
// writes and fsyncs every FlushInterval, rotation still fsyncs, Sync
// remains the caller's flush point, and Close stops the goroutine.
//
// A failed write or fsync fails the writer for good: the error is recorded
// (wrapping ErrFailed and the cause) and every later Append, Sync, Flush
// and Close returns it. An fsync is never retried, because after a failure
// the kernel may have dropped the dirty pages and a later success would be
// a lie.
//
// # Preallocation
//
// A new segment is grown to SegmentBytes of zeros at once (vfs.Preallocate:
// fallocate on Linux), so a commit's fdatasync flushes the records, not
// also a size change. A reused spare (Options.Spares) is grown the same
// way where it is shorter; the rest of it holds its old records, which a
// bound log reads as the end (spare.go). Every segment but the last is cut back to its
// records, and that size made durable, before the next one is created: the
// reader rules below allow a zero tail only in the last segment. Open
// truncates the last segment at the end of its records and preallocates it
// again; a clean Close cuts the preallocated tail, so only the Open after
// a crash reads zeros.
//
// # Reader rules
//
// ReplayWith(fs, dir, opts, fn) is read-only, so the DB can validate the
// whole log before its first mutation. opts.From is the manifest's
// analysisStart, opts.Frontier its checkpoint frontier and opts.Synced the
// LSN the last checkpoint publish had fsynced; every byte below the
// durable bound max(Frontier, Synced) was fsynced before the manifest
// recorded it.
//
//   - Segments wholly below From are ignored, with no gap check (Recycle
//     may have removed some of them and crashed).
//   - From From on, the segments must be contiguous: a segment that does
//     not start where its predecessor ends (a missing or short segment) is
//     corruption, and so is a first segment that starts after From.
//   - Zero bytes to the end of a segment end it cleanly (a preallocated
//     segment); ZeroBytes counts them in the last one.
//   - In the last segment, the first bad record (too short for its header
//     or its length, a bad length, a CRC mismatch) at or beyond the
//     durable bound ends the log, a torn tail left by a power loss and
//     never acknowledged, only if no valid record of this log follows it
//     in the segment (resync.go says what counts as one, so that random
//     bytes cannot pass). Its bytes are counted in TornBytes, and Open
//     truncates them. A bad record followed by a valid one is damage: the
//     writer appends sequentially, so a later record on disk means the
//     bad one was once written whole, and ending the log there would drop
//     acknowledged commits silently.
//   - Damage, a bad record below the durable bound or in any segment but
//     the last, a record whose CRC is valid but whose contents do not
//     parse (a bug or a newer format, not a torn write), and a log that
//     ends below the durable bound (a missing or cut newest segment) are
//     corruption.
//
// With opts.TruncateDamaged, corruption does not fail the replay: it stops
// there, keeps the longest valid prefix and reports the damage and the
// bytes it gives up (ReplayResult.Damage, DroppedBytes); the caller calls
// DiscardAfter before Open continues the log. A prefix ending below the
// frontier cannot be kept (its records are partly in the data files, and
// the next redo would skip records logged below the frontier): that stays
// corruption.
//
// Corruption is reported as a *base.CorruptionError (internal/base, the
// one corruption marker the root re-exports) naming the file, the offset
// and the reason. The log is
// never silently cut short before an acknowledged commit the reader can
// see or the manifest vouches for.
package wal
