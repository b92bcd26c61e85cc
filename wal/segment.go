package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/bwkv/bwkv/vfs"
)

// segmentSuffix ends every segment file name; the stem is the segment's
// first LSN as 16 lowercase hex digits, so names sort in LSN order.
const segmentSuffix = ".log"

// SegmentName returns the file name (not the path) of the segment whose
// first record is at lsn.
func SegmentName(lsn LSN) string {
	return fmt.Sprintf("%016x%s", uint64(lsn), segmentSuffix)
}

// segmentPath returns the path of the segment starting at lsn in dir.
func segmentPath(dir string, lsn LSN) string {
	return filepath.Join(dir, SegmentName(lsn))
}

// parseSegmentName returns the LSN a segment file name stands for, and false
// for any other name.
func parseSegmentName(name string) (LSN, bool) {
	const stem = 16
	if len(name) != stem+len(segmentSuffix) || name[stem:] != segmentSuffix {
		return 0, false
	}
	for _, c := range name[:stem] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(name[:stem], 16, 64)
	if err != nil {
		return 0, false
	}
	return LSN(v), true
}

// Segments returns the first LSNs of the segment files in dir, ascending.
// Files whose names are not segment names are ignored. A missing directory
// holds no segments.
func Segments(fs vfs.FS, dir string) ([]LSN, error) {
	names, err := fs.List(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("wal: list %s: %w", dir, err)
	}
	var segs []LSN
	for _, name := range names {
		if lsn, ok := parseSegmentName(name); ok {
			segs = append(segs, lsn)
		}
	}
	slices.Sort(segs)
	return segs, nil
}

// DiscardAfter removes, newest first, every segment in dir that starts
// beyond end, then fsyncs the directory. It is the first mutation of a
// WALRecoveryTruncateDamaged recovery: after it the segment holding end is
// the newest, and Open(o, end) truncates it at end. A read-only open skips
// it (and Open) and simply stops replaying at end. A crash part way leaves
// a log that replays to the same damage, so the step can be repeated.
func DiscardAfter(fs vfs.FS, dir string, end LSN) error {
	segs, err := Segments(fs, dir)
	if err != nil {
		return err
	}
	removed := false
	for i := len(segs) - 1; i >= 0 && segs[i] > end; i-- {
		path := segmentPath(dir, segs[i])
		if err := fs.Remove(path); err != nil {
			return fmt.Errorf("wal: discard %s: %w", path, err)
		}
		removed = true
	}
	if removed {
		if err := fs.SyncDir(dir); err != nil {
			return fmt.Errorf("wal: sync dir %s after discarding segments: %w", dir, err)
		}
	}
	return nil
}
