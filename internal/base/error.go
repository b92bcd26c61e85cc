package base

import (
	"errors"
	"fmt"
)

// ErrCorruption is matched (errors.Is) by every *CorruptionError. The root
// package re-exports it as bwkv.ErrCorruption.
var ErrCorruption = errors.New("bwkv: corruption")

// ErrVersion is wrapped by the errors for files (log, manifest, data file,
// backup stream) written by a newer format version than this code reads.
// The root package re-exports it as bwkv.ErrVersion.
var ErrVersion = errors.New("bwkv: unsupported format version")

// CorruptionError reports bytes on disk that fail validation. It matches
// ErrCorruption with errors.Is. A layer that learns more about where the
// bytes live (a data file around a frame, a replay around a record) may
// fill in File or shift Offset before returning it.
type CorruptionError struct {
	// File is the path or name of the damaged file; empty when the layer
	// that found the damage does not know it (a frame decoded from a
	// buffer, an edit rejected outside a replay).
	File string
	// Offset is the byte offset in File where the damage was found; -1
	// when unknown or not applicable.
	Offset int64
	// Reason says what was wrong.
	Reason string
}

// CorruptionErrorf returns a *CorruptionError for file at offset off (-1:
// unknown) whose Reason is formatted from format and args.
func CorruptionErrorf(file string, off int64, format string, args ...any) error {
	return &CorruptionError{File: file, Offset: off, Reason: fmt.Sprintf(format, args...)}
}

// Error implements error.
func (e *CorruptionError) Error() string {
	switch {
	case e.File == "" && e.Offset < 0:
		return "bwkv: corruption: " + e.Reason
	case e.File == "":
		return fmt.Sprintf("bwkv: corruption at offset %d: %s", e.Offset, e.Reason)
	case e.Offset < 0:
		return fmt.Sprintf("bwkv: corruption in %s: %s", e.File, e.Reason)
	}
	return fmt.Sprintf("bwkv: corruption in %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorruption) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorruption }
