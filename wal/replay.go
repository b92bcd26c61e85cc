package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/vfs"
)

// ReplayResult describes the log a Replay read.
type ReplayResult struct {
	// Records is the number of valid records read (from from on).
	Records int64
	// End is where valid data ends: the Writer continues the log here
	// (Open(o, End)), after DiscardAfter(End) if Damage is set.
	End LSN
	// TornBytes counts the bytes past End in the last segment, a torn tail
	// that Open will truncate. A zero-filled tail (a preallocated segment)
	// is not torn: it is counted in ZeroBytes.
	TornBytes int64
	// ZeroBytes counts the zero bytes that end the last segment past End:
	// a clean end of a preallocated segment.
	ZeroBytes int64
	// Segments lists every segment in the directory, ascending by LSN.
	Segments []LSN
	// Obsolete is the number of leading Segments that lie wholly below
	// from: they were not read, and Writer.Recycle deletes them.
	Obsolete int
	// Damage is set only with ReplayOptions.TruncateDamaged: the damage
	// the replay stopped at instead of failing. DroppedBytes counts the
	// log bytes past End it gives up: the rest of the damaged segment,
	// every later segment, and durable bytes already missing (a log that
	// ends below the synced LSN).
	Damage       *base.CorruptionError
	DroppedBytes int64
}

// ReplayOptions say where a replay starts and what the manifest knows
// about the log.
type ReplayOptions struct {
	// From is the manifest's analysisStart: the log is read from here.
	From LSN
	// Frontier is the checkpoint frontier: every byte below it was
	// fsynced before the manifest recorded it. From <= Frontier.
	Frontier LSN
	// Synced is the LSN the last checkpoint publish had fsynced (0: not
	// recorded). Like the frontier, every byte below it was durable.
	Synced LSN
	// TruncateDamaged keeps the longest valid prefix of a damaged log
	// instead of failing: Replay stops at the damage and reports it in
	// ReplayResult.Damage. The caller then discards the rest
	// (DiscardAfter) before it continues the log.
	TruncateDamaged bool
	// BindLSN: the log's records are bound to their LSN (Options.BindLSN),
	// so each is checked against the LSN it is read at.
	BindLSN bool
}

// readChunk is how much of a segment the reader fetches at a time.
const readChunk = 1 << 20

// Replay is ReplayWith without a synced LSN, failing on damage.
func Replay(fs vfs.FS, dir string, from, frontier LSN, fn func(lsn LSN, r *Record) error) (ReplayResult, error) {
	return ReplayWith(fs, dir, ReplayOptions{From: from, Frontier: frontier}, fn)
}

// ReplayWith reads the log in dir from o.From and calls fn for every
// record, in LSN order. It only reads: it changes no file, so a caller can
// validate the whole log before its first mutation.
//
// The rules (package doc, Reader rules): segments wholly below From are
// ignored, with no gap check. From From on, a missing segment (a segment
// not starting where its predecessor ends) is a *base.CorruptionError. A run
// of zero bytes to the end of a segment ends it cleanly. In the last
// segment the first bad record (short, bad length, checksum mismatch) at
// or beyond the durable bound, max(Frontier, Synced), ends the log as a
// torn tail, counted in TornBytes, but only if no valid record of this
// log follows it in the segment: a bad record followed by a valid one is
// damage. Damage, a bad record below the durable bound or in an older
// segment, a record whose checksum is valid but whose contents do not
// parse, and a log that ends below the durable bound are
// *base.CorruptionError, unless o.TruncateDamaged (then ReplayResult.Damage).
//
// The *Record passed to fn and the slices in it are valid only until fn
// returns; fn must copy what it keeps. An error from fn stops the replay
// and is returned wrapped. A nil fn only validates and measures the log.
func ReplayWith(fs vfs.FS, dir string, o ReplayOptions, fn func(lsn LSN, r *Record) error) (ReplayResult, error) {
	from, frontier := o.From, o.Frontier
	if from > frontier {
		return ReplayResult{}, fmt.Errorf("wal: replay %s from %d: beyond the frontier %d", dir, from, frontier)
	}
	durable := max(frontier, o.Synced)
	segs, err := Segments(fs, dir)
	if err != nil {
		return ReplayResult{}, err
	}
	res := ReplayResult{Segments: segs, End: from}
	r := replayer{fs: fs, dir: dir, frontier: frontier, synced: o.Synced, bind: o.BindLSN, fn: fn, res: &res}
	damaged := func(c *base.CorruptionError) (ReplayResult, error) { return r.damaged(c, o.TruncateDamaged, segs) }
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
		return damaged(&base.CorruptionError{File: segmentPath(dir, segs[0]),
			Reason: fmt.Sprintf("missing log from %d: the first segment starts at %d", from, segs[0])})
	}
	if first >= 0 {
		if err := r.segments(segs, first, from); err != nil {
			var c *base.CorruptionError
			if errors.As(err, &c) {
				return damaged(c)
			}
			return res, err
		}
	}
	if res.End < durable {
		c := &base.CorruptionError{File: dir, Reason: fmt.Sprintf("log ends at %d, below the frontier %d or the LSN %d the last checkpoint synced: durable log bytes are missing",
			res.End, frontier, o.Synced)}
		if len(segs) > 0 && segs[len(segs)-1] <= res.End {
			lastSeg := segs[len(segs)-1]
			c.File, c.Offset = segmentPath(dir, lastSeg), int64(res.End-lastSeg)
		}
		return damaged(c)
	}
	return res, nil
}

// segments replays segs[first:], the first from LSN from, checking that
// each segment starts where its predecessor's valid data ends. Damage is
// returned as (or wrapping) a *base.CorruptionError.
func (r *replayer) segments(segs []LSN, first int, from LSN) error {
	for i := first; i < len(segs); i++ {
		last := i == len(segs)-1
		start := from
		if i > first {
			start = segs[i]
		}
		if err := r.segment(segs[i], start, last); err != nil {
			return err
		}
		if end := r.res.End; !last && segs[i+1] != end {
			reason := fmt.Sprintf("segment ends at %d but the next starts at %d (missing segment)", end, segs[i+1])
			if segs[i+1] < end {
				reason = fmt.Sprintf("segment ends at %d, after the next one starts at %d", end, segs[i+1])
			}
			return &base.CorruptionError{File: segmentPath(r.dir, segs[i]), Offset: int64(end - segs[i]), Reason: reason}
		}
	}
	return nil
}

// damaged either fails the replay with c or, when the caller asked for it
// (truncate: ReplayOptions.TruncateDamaged), keeps the valid prefix (End)
// and drops every byte of segs after it.
func (r *replayer) damaged(c *base.CorruptionError, truncate bool, segs []LSN) (ReplayResult, error) {
	res := r.res
	if !truncate {
		return *res, c
	}
	if res.End < r.frontier {
		// Records below the frontier are already in the data files,
		// and a log continued below it would hand out LSNs that the
		// next redo skips: no prefix that short can be kept.
		c.Reason += fmt.Sprintf("; the valid log ends at %d, below the checkpoint frontier %d, so it cannot be truncated", res.End, r.frontier)
		return *res, c
	}
	res.Damage = c
	res.TornBytes = 0
	dropped, err := bytesAfter(r.fs, r.dir, segs, res.End)
	if err != nil {
		return *res, err
	}
	if durable := max(r.frontier, r.synced); res.End < durable {
		dropped += int64(durable - res.End)
	}
	res.DroppedBytes = dropped
	return *res, nil
}

// bytesAfter returns how many bytes the segments hold past end.
func bytesAfter(fs vfs.FS, dir string, segs []LSN, end LSN) (int64, error) {
	var n int64
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1] <= end {
			continue // wholly below end
		}
		st, err := fs.Stat(segmentPath(dir, s))
		if err != nil {
			return 0, fmt.Errorf("wal: stat %s: %w", segmentPath(dir, s), err)
		}
		if s >= end {
			n += st.Size()
		} else if e := int64(end - s); st.Size() > e {
			n += st.Size() - e
		}
	}
	return n, nil
}

// replayer carries the state of one Replay across segments.
type replayer struct {
	fs  vfs.FS
	dir string
	// Every byte below either was fsynced before the manifest recorded it.
	frontier, synced LSN
	bind             bool // ReplayOptions.BindLSN
	fn               func(LSN, *Record) error
	res              *ReplayResult
	buf              []byte // read window, reused across segments
	rec              Record // the record handed to fn, reused
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
	w := window{f: f, size: size, buf: r.buf[:0], path: path, bind: r.bind}
	defer func() { r.buf = w.buf }()
	for off < size {
		b, err := w.record(off)
		if err == nil {
			r.rec, _, err = decode(b, seedAt(seg+LSN(off), r.bind))
		}
		if err != nil {
			var rerr *readError
			if errors.As(err, &rerr) {
				return rerr.err
			}
			r.res.End = seg + LSN(off) // the valid prefix, if the caller keeps it
			if !torn(err) {
				return base.CorruptionErrorf(path, off, "checksummed record does not parse: %v", err)
			}
			// Zeroes to the end of the segment are a clean end (a
			// preallocated segment); whether the log may end there is
			// for the caller's contiguity and durable-bound checks.
			zero, zerr := w.zeroFrom(off)
			if zerr != nil {
				return zerr
			}
			if zero {
				if last {
					r.res.ZeroBytes = size - off
				}
				return nil
			}
			switch {
			case !last:
				return base.CorruptionErrorf(path, off, "%v in a segment that is not the last", err)
			case seg+LSN(off) < max(r.frontier, r.synced):
				return base.CorruptionErrorf(path, off, "%v below the frontier %d or the LSN %d the last checkpoint synced", err, r.frontier, r.synced)
			}
			next, found, serr := w.resync(off, seg)
			if serr != nil {
				return serr
			}
			if found {
				return base.CorruptionErrorf(path, off, "%v, but a valid record follows at offset %d: damage, not a torn tail", err, next)
			}
			// A torn tail: the first bad record at or beyond the durable
			// bound in the last segment, with nothing valid after it.
			r.res.TornBytes = size - off
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
	bind bool // the records are bound to their LSN (ReplayOptions.BindLSN)
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
