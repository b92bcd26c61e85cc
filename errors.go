package bwkv

import (
	"errors"

	"github.com/bwkv/bwkv/internal/base"
)

// Sentinel errors. Match them with errors.Is: errors returned by bwkv wrap
// them with context.
var (
	// ErrNotFound: the key has no visible value.
	ErrNotFound = errors.New("bwkv: not found")
	// ErrConflict: another transaction committed the key after this
	// transaction began (including one this write waited for; first
	// committer wins), the wait for another transaction's uncommitted
	// version would have closed a cycle (deadlock), or it lasted
	// Options.LockTimeout. The transaction is doomed: every later call,
	// Commit included, returns ErrConflict and nothing of it is applied.
	ErrConflict = errors.New("bwkv: write conflict")
	// ErrTxnDone: the transaction was already committed or rolled back.
	ErrTxnDone = errors.New("bwkv: transaction done")
	// ErrTxnTooOld: the engine aborted the transaction because it pinned
	// the log more than Options.MaxTxnLag bytes behind the head.
	ErrTxnTooOld = errors.New("bwkv: transaction too old")
	// ErrClosed: the DB, snapshot, transaction or iterator is closed.
	ErrClosed = errors.New("bwkv: closed")
	// ErrEmptyKey: keys must be at least one byte long.
	ErrEmptyKey = errors.New("bwkv: empty key")
	// ErrKeyTooLarge: the key exceeds Options.MaxKeySize.
	ErrKeyTooLarge = errors.New("bwkv: key too large")
	// ErrValueTooLarge: the value exceeds Options.MaxValueSize.
	ErrValueTooLarge = errors.New("bwkv: value too large")
	// ErrLocked: the directory is held by another process or handle.
	ErrLocked = errors.New("bwkv: directory locked")
	// ErrCorruption: bytes on disk are not what bwkv wrote. The error is a
	// *CorruptionError naming the file, offset and problem.
	ErrCorruption = base.ErrCorruption
	// ErrVersion: the files were written by a newer format version.
	ErrVersion = base.ErrVersion
	// ErrReadOnly: the DB was opened read-only, or an unrecoverable I/O
	// error (a failed fsync of the log, the manifest or a data file)
	// degraded it until it is reopened; the error then wraps the cause.
	ErrReadOnly = errors.New("bwkv: read-only")
)

// CorruptionError reports bytes on disk that fail validation: File names
// the file (empty when not known), Offset the byte offset in it (-1 when
// not known) and Reason what was wrong. It matches ErrCorruption with
// errors.Is, and errors.As finds it in corruption from any layer (log,
// manifest, data file, backup stream): every layer builds this one type.
type CorruptionError = base.CorruptionError
