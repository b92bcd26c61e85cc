package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/bwkv/bwkv/vfs"
)

// CorruptionError reports log bytes that the reader rules (see the package
// documentation) do not allow to be a torn tail. The root package
// translates it into its public corruption error.
type CorruptionError struct {
	File   string // path of the segment (or the log directory)
	Offset int64  // byte offset in File
	Reason string
}

// Error implements error.
func (e *CorruptionError) Error() string {
	return fmt.Sprintf("wal: corruption in %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// ReplayResult describes the log a Replay read.
type ReplayResult struct {
	// Records is the number of valid records read (from from on).
	Records int64
	// End is where valid data ends: the Writer continues the log here
	// (Open(o, End)).
	End LSN
	// TornBytes counts the bytes past End in the last segment, a torn tail
	// that Open will truncate. A tail of zeros only is the writer's
	// preallocated space (see the package documentation) and counts 0.
	TornBytes int64
	// Segments lists every segment in the directory, ascending by LSN.
	Segments []LSN
	// Obsolete is the number of leading Segments that lie wholly below
	// from: they were not read, and Writer.Recycle deletes them.
	Obsolete int
}

// readChunk is how much of a segment the reader fetches at a time.
const readChunk = 1 << 20

// Replay reads the log in dir from LSN from and calls fn for every record,
// in LSN order. frontier is the checkpoint frontier from the manifest:
// every byte below it was durable before the manifest recorded it.
// Replay only reads: it changes no file, so a caller can validate the whole
// log before its first mutation.
//
// The rules (DESIGN §6): segments wholly below from are ignored, with no
// gap check. From from on, a missing segment (a segment not starting where
// its predecessor ends) is a *CorruptionError. In the last segment the
// first bad record (short, bad length, checksum mismatch; zeroes have a bad
// length) at or beyond frontier ends the log: a torn tail, counted in
// TornBytes. A bad record below frontier or in an older segment, a record
// whose checksum is valid but whose contents do not parse, and a log that
// ends below frontier are *CorruptionError.
//
// The *Record passed to fn and the slices in it are valid only until fn
// returns; fn must copy what it keeps. An error from fn stops the replay
// and is returned wrapped. A nil fn only validates and measures the log.
func Replay(fs vfs.FS, dir string, from, frontier LSN, fn func(lsn LSN, r *Record) error) (ReplayResult, error) {
	if from > frontier {
		return ReplayResult{}, fmt.Errorf("wal: replay %s from %d: beyond the frontier %d", dir, from, frontier)
	}
	segs, err := Segments(fs, dir)
	if err != nil {
		return ReplayResult{}, err
	}
	res := ReplayResult{Segments: segs, End: from}
	// The first segment to read is the last one starting at or below from
	// (-1: none); the ones before it end at or below from.
	first := -1
	for i, s := range segs {
		if s <= from {
			first = i
		}
	}
	switch {
	case first >= 0:
		res.Obsolete = first
	case len(segs) > 0:
		return res, &CorruptionError{File: segmentPath(dir, segs[0]),
			Reason: fmt.Sprintf("missing log from %d: the first segment starts at %d", from, segs[0])}
	}
	if first >= 0 {
		r := replayer{fs: fs, dir: dir, frontier: frontier, fn: fn, res: &res}
		for i := first; i < len(segs); i++ {
			last := i == len(segs)-1
			start := from
			if i > first {
				start = segs[i]
			}
			if err := r.segment(segs[i], start, last); err != nil {
				return res, err
			}
			if !last && segs[i+1] != res.End {
				reason := fmt.Sprintf("segment ends at %d but the next starts at %d (missing segment)", res.End, segs[i+1])
				if segs[i+1] < res.End {
					reason = fmt.Sprintf("segment ends at %d, after the next one starts at %d", res.End, segs[i+1])
				}
				return res, &CorruptionError{File: segmentPath(dir, segs[i]), Offset: int64(res.End - segs[i]), Reason: reason}
			}
		}
	}
	if res.End < frontier {
		c := &CorruptionError{File: dir, Reason: fmt.Sprintf("log ends at %d, below the frontier %d", res.End, frontier)}
		if len(segs) > 0 {
			lastSeg := segs[len(segs)-1]
			c.File, c.Offset = segmentPath(dir, lastSeg), int64(res.End-lastSeg)
		}
		return res, c
	}
	return res, nil
}

// replayer carries the state of one Replay across segments.
type replayer struct {
	fs       vfs.FS
	dir      string
	frontier LSN
	fn       func(LSN, *Record) error
	res      *ReplayResult
	buf      []byte // read window, reused across segments
	rec      Record // the record handed to fn, reused
}

// segment replays the segment starting at seg from LSN start and sets
// res.End to where its valid data ends.
func (r *replayer) segment(seg, start LSN, last bool) error {
	path := segmentPath(r.dir, seg)
	f, err := r.fs.Open(path)
	if err != nil {
		return fmt.Errorf("wal: replay %s: %w", path, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("wal: replay %s: size: %w", path, err)
	}
	off := int64(start - seg)
	if off > size {
		// The segment ends before from: the checks on the next segment or
		// on the frontier report the missing bytes.
		r.res.End = seg + LSN(size)
		return nil
	}
	w := window{f: f, size: size, buf: r.buf[:0], path: path}
	defer func() { r.buf = w.buf }()
	for off < size {
		b, err := w.record(off)
		if err == nil {
			r.rec, _, err = Decode(b)
		}
		if err != nil {
			var rerr *readError
			switch {
			case errors.As(err, &rerr):
				return rerr.err
			case !torn(err):
				return &CorruptionError{File: path, Offset: off, Reason: fmt.Sprintf("checksummed record does not parse: %v", err)}
			case !last:
				return &CorruptionError{File: path, Offset: off, Reason: fmt.Sprintf("%v in a segment that is not the last", err)}
			case seg+LSN(off) < r.frontier:
				return &CorruptionError{File: path, Offset: off, Reason: fmt.Sprintf("%v below the frontier %d", err, r.frontier)}
			}
			// A torn tail: the first bad record at or beyond the frontier
			// in the last segment ends the log. A tail of zeros only is
			// the writer's preallocated space, not damage: not counted.
			r.res.End = seg + LSN(off)
			zero, zerr := w.zeros(off)
			if zerr != nil {
				return zerr
			}
			if !zero {
				r.res.TornBytes = size - off
			}
			return nil
		}
		if r.fn != nil {
			if err := r.fn(seg+LSN(off), &r.rec); err != nil {
				return fmt.Errorf("wal: replay %s at %d: %w", path, off, err)
			}
		}
		r.res.Records++
		off += int64(len(b))
	}
	r.res.End = seg + LSN(size)
	return nil
}

// readError is an I/O error while reading a segment: never a torn tail.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// window reads a segment through a reusable buffer.
type window struct {
	f    vfs.File
	size int64
	path string
	buf  []byte // the file's bytes [off, off+len(buf))
	off  int64
}

// record returns the bytes of the record claimed at off: exactly its
// length when the length field is plausible and the file holds that many
// bytes, or a decode error that says why not.
func (w *window) record(off int64) ([]byte, error) {
	if w.size-off < headerSize {
		return nil, errShort
	}
	hdr, err := w.bytes(off, headerSize)
	if err != nil {
		return nil, err
	}
	n := int64(binary.LittleEndian.Uint32(hdr[offLength:]))
	if n < minRecordSize {
		return nil, errLength
	}
	if n > w.size-off {
		return nil, errShort
	}
	return w.bytes(off, int(n))
}

// zeros reports whether every byte from off to the end of the file is zero.
func (w *window) zeros(off int64) (bool, error) {
	for off < w.size {
		n := int(min(readChunk, w.size-off))
		b, err := w.bytes(off, n)
		if err != nil {
			return false, err
		}
		for _, c := range b {
			if c != 0 {
				return false, nil
			}
		}
		off += int64(n)
	}
	return true, nil
}

// bytes returns the n file bytes at off, which the file holds.
func (w *window) bytes(off int64, n int) ([]byte, error) {
	if off >= w.off && off+int64(n) <= w.off+int64(len(w.buf)) {
		return w.buf[off-w.off : off-w.off+int64(n)], nil
	}
	want := max(int64(n), min(readChunk, w.size-off))
	if int64(cap(w.buf)) < want {
		w.buf = make([]byte, want)
	}
	w.buf = w.buf[:want]
	if k, err := w.f.ReadAt(w.buf, off); k < len(w.buf) || err != nil && err != io.EOF {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		w.buf = w.buf[:0]
		return nil, &readError{fmt.Errorf("wal: read %s at %d: %w", w.path, off, err)}
	}
	w.off = off
	return w.buf[:n], nil
}
