package manifest

import (
	"errors"
	"fmt"
	"io/fs"
)

// ErrVersion is returned (wrapped) when a manifest record or the format
// version it carries is newer than this code understands. The root package
// maps it to its public bwkv.ErrVersion.
var ErrVersion = errors.New("manifest: newer format version")

// ErrFailed is wrapped by the error of a commit whose durable outcome is
// unknown (a failed write, fsync or rename) and by every later writer call:
// the Manifest is then unusable until the next Open, because a failed
// fsync is never retried and trusted. The DB degrades to read-only on it.
var ErrFailed = errors.New("manifest: failed")

// ErrClosed is returned by every method of a closed Manifest.
var ErrClosed = errors.New("manifest: closed")

// ErrNotExist is returned (wrapped) by Open with create == false when the
// directory holds no manifest. errors.Is(err, fs.ErrNotExist) also holds.
var ErrNotExist = fmt.Errorf("manifest: no manifest: %w", fs.ErrNotExist)

// CorruptionError reports bytes on disk, or an edit, that break the
// manifest's format or its invariants. The root package translates it to
// its public corruption error.
type CorruptionError struct {
	// File is the path of the damaged file; empty for an edit rejected by
	// State.Apply outside a replay.
	File string
	// Offset is the byte offset in File where the damage starts; -1 when
	// unknown or not applicable.
	Offset int64
	// Reason says what was wrong.
	Reason string
}

// Error implements error.
func (e *CorruptionError) Error() string {
	switch {
	case e.File == "":
		return "manifest: corruption: " + e.Reason
	case e.Offset < 0:
		return fmt.Sprintf("manifest: corruption in %s: %s", e.File, e.Reason)
	default:
		return fmt.Sprintf("manifest: corruption in %s at offset %d: %s", e.File, e.Offset, e.Reason)
	}
}

// corruptf builds a CorruptionError without a location; replay fills it in.
func corruptf(format string, args ...any) *CorruptionError {
	return &CorruptionError{Offset: -1, Reason: fmt.Sprintf(format, args...)}
}

// versionError reports a version newer than this code reads.
func versionError(what string, got, newest uint64) error {
	return fmt.Errorf("manifest: %s version %d is newer than %d, the newest this code reads: %w", what, got, newest, ErrVersion)
}
