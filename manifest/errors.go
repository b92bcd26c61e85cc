package manifest

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/bwkv/bwkv/internal/base"
)

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

// corruptf builds a *base.CorruptionError without a location; replay
// fills it in (an edit rejected by State.Apply outside a replay keeps an
// empty File).
func corruptf(format string, args ...any) *base.CorruptionError {
	return &base.CorruptionError{Offset: -1, Reason: fmt.Sprintf(format, args...)}
}

// versionError reports a version newer than this code reads; it wraps
// base.ErrVersion.
func versionError(what string, got, newest uint64) error {
	return fmt.Errorf("manifest: %s version %d is newer than %d, the newest this code reads: %w", what, got, newest, base.ErrVersion)
}
