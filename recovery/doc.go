// Package recovery is bwkv's open-time recovery: analysis, redo and undo
// (docs/crash-safety.md, ARIES-style, steal / no-force).
//
// Internal to bwkv; no API stability promise.
//
// Run reads the log twice with wal.Replay, which changes no file. The first
// pass, from analysisStart, is the analysis: it attributes every record to
// its transaction until its commit or end record (those left open are the
// losers) and keeps what undo needs of the losers' records below the
// frontier, the old values included (from the record, or from the
// before-image a cut logged for it). The second pass, from the frontier,
// is redo: it hands the engine's Applier every record of a transaction
// that committed, only the CLRs of one that rolled back (each of its
// writes has a CLR restoring the old value), and nothing of a loser. Only
// after the whole log validated does Run open the writer (which truncates
// a torn tail: the first mutation), and then undoes every loser newest
// first: the checkpoint holds its writes below the frontier, and for each
// not yet compensated it appends a CLR (key, the old value or a tombstone,
// undo-next = the write's previous record) and installs the compensation,
// then appends the end record. A CLR met while walking a loser's records
// jumps to its undo-next. A crash during recovery leaves the loser without
// its end record, and the next recovery compensates its writes again with
// the same values, so recovering twice gives the same state (INV-R1).
//
// Undo needs only the log: a write below the frontier has its full old
// value in its record or in a before-image, and a write at or after it is
// never installed, so undo never depends on data files (the hole mace
// once had).
package recovery
