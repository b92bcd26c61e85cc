package pool

import (
	"errors"
	"fmt"
)

// Sentinel errors, returned wrapped with context: match them with errors.Is.
var (
	// ErrCorruption is matched by every *CorruptionError.
	ErrCorruption = errors.New("pool: corruption")
	// ErrVersion: the data file was written by a newer format version.
	ErrVersion = errors.New("pool: newer data file format version")
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

// CorruptionError reports data-file bytes that fail validation. The root
// package translates it to its public corruption error.
type CorruptionError struct {
	// File is the name the file was opened with.
	File string
	// Offset is the byte offset in File where the damage was found.
	Offset int64
	// Reason says what was wrong.
	Reason string
}

// Error implements error.
func (e *CorruptionError) Error() string {
	return fmt.Sprintf("pool: corruption in %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorruption) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorruption }

// corruptAt builds a CorruptionError; the caller fills in File.
func corruptAt(off int64, format string, args ...any) *CorruptionError {
	return &CorruptionError{Offset: off, Reason: fmt.Sprintf(format, args...)}
}

// versionError reports a footer of a newer format version; it wraps
// ErrVersion. The caller adds the file name.
type versionError struct{ version uint32 }

func (e *versionError) Error() string {
	return fmt.Sprintf("format version %d is newer than %d, the newest this code reads", e.version, FormatVersion)
}

func (e *versionError) Unwrap() error { return ErrVersion }
