// Package pool holds bwkv's page frames on disk: the data-file format and
// its reader and writer, through vfs (docs/architecture.md).
//
// Internal to bwkv; no API stability promise.
//
// # Data files
//
// A checkpoint (or a GC rewrite) writes one data file: the frames it emits,
// blob frames included (their addresses, with the top bit set, come after
// every page frame's; docs/formats.md), back to back in ascending
// logical-address order (each encoded by
// delta.AppendFrame, which carries its own CRC-32C), then a relocation
// table, then a fixed 64-byte footer. Little endian throughout.
//
//	frames   count frames; the first starts at offset 0; each plain or
//	         compressed (the frame header names its codec, so one file
//	         may mix them: see package delta)
//	table    count entries of 32 bytes: addr u64, offset u64, length u32,
//	         crc u32 (the frame's own CRC, so a frame can be checked, or
//	         copied, against the table without being parsed), pid u64
//	         (the frame's page, so the GC decides liveness from the table
//	         alone: PageFrames); version 1 files have 24-byte entries
//	         without pid and stay readable
//	footer   tableOffset u64, tableLength u64, count u64, minAddr u64,
//	         maxAddr u64, tableCRC u32 (CRC-32C of the table), flags u32
//	         (0), version u32, footerCRC u32, magic "bwkvdata"
//
// footerCRC is the CRC-32C of the footer's other 60 bytes. The magic, the
// footer CRC and the version keep their places in every format version, so
// that a reader checks the magic, then the CRC, then the version: a damaged
// version field reads as corruption, a genuinely newer file as base.ErrVersion.
//
// OpenFile validates the whole layout before it answers a read: the table
// must exactly fill the space between the frames and the footer, its
// entries must describe frames lying back to back from offset 0, each at
// least a frame header long, with addresses non-zero and strictly
// ascending and matching the footer's count, minAddr and maxAddr. A frame
// itself is checked only when it is read: a damaged frame fails the reads
// that touch it and nothing else (docs/crash-safety.md).
//
// # Errors
//
// Bytes that fail validation return a *base.CorruptionError (internal/base,
// the one corruption marker the root re-exports) naming the file, the
// offset and the reason (errors.Is(err, base.ErrCorruption)); a file too
// short for its footer, or whose footer magic is wrong (a truncated or
// foreign file), is corruption too. A footer of a newer format returns an
// error wrapping base.ErrVersion; an address the file does not hold,
// ErrNoFrame.
// I/O errors from vfs are returned wrapped, with context. No input makes
// this package panic.
//
// # Concurrency and memory
//
// A File is immutable once OpenFile returns: ReadFrame, Lookup, Addrs and
// Info may run concurrently from any number of goroutines (each ReadFrame
// is one vfs ReadAt). Close must not race with them; the caller's reference
// counting (docs/crash-safety.md) ensures it. Records returned by ReadFrame belong to
// the caller and alias no buffer of the package.
//
// Files (files.go) bounds the open data files: reference-counted handles,
// least recently used idle files closed past Options.MaxOpenFiles, and the
// retirement handshake with the GC (a retired file is closed, then
// unlinked, only once no reader holds it).
//
// A FileWriter is used by one goroutine. It buffers frames and writes them
// with WriteAt in large chunks; Finish writes the table and the footer but
// does not fsync: publishing makes the data durable itself (docs/crash-safety.md step
// 3: file fsync, then directory fsync).
package pool
