package wal

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bwkv/bwkv/failpoints"
	"github.com/bwkv/bwkv/vfs"
)

// Spare segment files (Options.Spares)
//
// Recycle retires a segment by renaming it to <first LSN>.spare, up to
// Options.Spares files, instead of deleting it; a rotation renames the
// oldest spare to the new segment's name and writes over it. A spare is
// never read: Segments ignores its name, so a crash anywhere in either
// rename leaves a log the reader accepts.
//
//   - A crash after a segment became a spare: the segment lay wholly
//     below the analysis start (Recycle's rule), which the reader skips.
//   - A crash after a spare became the newest segment, before or after
//     records were written into it: the segment holds new records, then
//     the spare's stale ones. Those were written at other LSNs, so with
//     BindLSN each fails its CRC where it lies (codec.go): the first one
//     is a bad record at or beyond the durable bound with no valid record
//     of this log after it, that is a torn tail (replay.go), and Open cuts
//     it. A segment that stops being the newest is cut back to its records
//     before the next one exists (rotateLocked), as before.
//
// Close and DropSpares delete every spare, so a closed or idle database
// keeps no log beyond its segments.

// spareSuffix ends every spare file's name; the stem is the LSN the file
// started at as a segment, so names never collide.
const spareSuffix = ".spare"

// spareName returns the name of the spare made from the segment at lsn.
func spareName(lsn LSN) string { return fmt.Sprintf("%016x%s", uint64(lsn), spareSuffix) }

// openSpares lists o.Dir's spare files, oldest first, keeping at most
// o.Spares and deleting the rest (then fsyncing the directory).
func openSpares(o Options) ([]string, error) {
	names, err := o.FS.List(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("wal: list %s: %w", o.Dir, err)
	}
	var spares []string
	for _, name := range names {
		if strings.HasSuffix(name, spareSuffix) {
			spares = append(spares, filepath.Join(o.Dir, name))
		}
	}
	slices.Sort(spares)
	if len(spares) <= o.Spares {
		return spares, nil
	}
	for _, path := range spares[o.Spares:] {
		if err := o.FS.Remove(path); err != nil {
			return nil, fmt.Errorf("wal: remove spare %s: %w", path, err)
		}
	}
	if err := o.FS.SyncDir(o.Dir); err != nil {
		return nil, fmt.Errorf("wal: sync dir %s after removing spares: %w", o.Dir, err)
	}
	return spares[:o.Spares:o.Spares], nil
}

// retire removes the segment at lsn, which Recycle found wholly below
// the analysis start, or keeps it as a spare while fewer than maxSpares
// are kept. The caller fsyncs the directory.
func (w *Writer) retire(lsn LSN) error {
	path := segmentPath(w.dir, lsn)
	if err := failpoints.Hit(failpoints.WALRecycle); err != nil {
		return fmt.Errorf("wal: recycle %s: %w", path, err)
	}
	w.spareMu.Lock()
	defer w.spareMu.Unlock()
	if len(w.spareFiles) >= w.maxSpares {
		if err := w.fs.Remove(path); err != nil {
			return fmt.Errorf("wal: recycle %s: %w", path, err)
		}
		return nil
	}
	spare := filepath.Join(w.dir, spareName(lsn))
	if err := w.fs.Rename(path, spare); err != nil {
		return fmt.Errorf("wal: recycle %s as a spare: %w", path, err)
	}
	w.spareFiles = append(w.spareFiles, spare)
	return nil
}

// newSegment creates the segment file at path: the oldest spare renamed,
// if there is one (reused reports it), else a new file. The caller
// preallocates it and fsyncs the directory.
func (w *Writer) newSegment(path string) (f vfs.File, reused bool, err error) {
	w.spareMu.Lock()
	var spare string
	if len(w.spareFiles) > 0 {
		spare = w.spareFiles[0]
		w.spareFiles = slices.Delete(w.spareFiles, 0, 1)
	}
	w.spareMu.Unlock()
	if spare == "" {
		f, err = w.fs.Create(path)
		return f, false, err
	}
	if err := w.fs.Rename(spare, path); err != nil {
		return nil, false, fmt.Errorf("reuse spare %s: %w", spare, err)
	}
	f, err = w.fs.OpenReadWrite(path)
	return f, err == nil, err
}

// DropSpares deletes every spare file and fsyncs the directory, so that
// an idle database keeps no log beyond its segments (the settle step and
// Close call it). The next Recycle keeps spares again.
func (w *Writer) DropSpares() error {
	w.spareMu.Lock()
	defer w.spareMu.Unlock()
	if len(w.spareFiles) == 0 {
		return nil
	}
	for len(w.spareFiles) > 0 {
		if err := w.fs.Remove(w.spareFiles[0]); err != nil {
			return fmt.Errorf("wal: remove spare %s: %w", w.spareFiles[0], err)
		}
		w.spareFiles = w.spareFiles[1:]
	}
	if err := w.fs.SyncDir(w.dir); err != nil {
		return fmt.Errorf("wal: sync dir %s after removing spares: %w", w.dir, err)
	}
	return nil
}
