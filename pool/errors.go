package pool

import (
	"errors"
	"fmt"

	"github.com/bwkv/bwkv/internal/base"
)

// Sentinel errors, returned wrapped with context: match them with errors.Is.
var (
	// ErrNoFrame: the file holds no frame at the requested address.
	ErrNoFrame = errors.New("pool: address not in file")
	// ErrClosed: the File was closed.
	ErrClosed = errors.New("pool: file closed")
	// ErrRetired: the data file was retired by the GC (Files.Retire); the
	// caller re-reads its address map, which names the file's successor.
	ErrRetired = errors.New("pool: data file retired")
	// ErrFinished: the FileWriter was used after Finish.
	ErrFinished = errors.New("pool: writer finished")
	// ErrSync is wrapped by the writers of data files (checkpoint, GC)
	// around a failed fsync of a data file or of its directory: its
	// outcome is unknown and never retried and trusted, so the DB
	// degrades to read-only instead of trying again.
	ErrSync = errors.New("pool: data file sync failed")
)

// corruptAt reports data-file bytes that fail validation; the caller
// fills in File (withFile).
func corruptAt(off int64, format string, args ...any) error {
	return base.CorruptionErrorf("", off, format, args...)
}

// versionError reports a footer of a newer format version; it wraps
// base.ErrVersion. The caller adds the file name.
type versionError struct{ version uint32 }

func (e *versionError) Error() string {
	return fmt.Sprintf("format version %d is newer than %d, the newest this code reads", e.version, FormatVersion)
}

func (e *versionError) Unwrap() error { return base.ErrVersion }
