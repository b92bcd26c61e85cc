// Package recovery is bwkv's open-time recovery: analysis, redo and undo
// (docs/crash-safety.md, ARIES-style, steal / no-force).
//
// Internal to bwkv; no API stability promise.
//
// Run reads the log from analysisStart with wal.Replay, which changes no
// file, and hands every record at or after the frontier to the engine's
// Applier (redo repeats history, losers included: their versions are
// installed exactly as they were). It tracks each transaction's records
// until its commit or end record; those left are the losers. Only after the
// whole log validated does Run open the writer (which truncates a torn
// tail: the first mutation), and then undoes every loser newest first: for
// each of its writes not yet compensated it appends a CLR (key, the old
// value from the log record or a tombstone, undo-next = the write's
// previous record) and installs the compensation, then appends the end
// record. A CLR met while walking a loser's records jumps to its undo-next
// LSN, so a crash during recovery resumes where it stopped and recovering
// twice gives the same state (INV-R1).
//
// Undo needs only the log: update and delete records carry the full old
// value, so it never depends on data files (the hole mace once had).
package recovery
