package pool

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/vfs"
)

// FileInfo describes a data file.
type FileInfo struct {
	// Frames is the number of frames in the file.
	Frames int
	// MinAddr and MaxAddr are the lowest and highest frame addresses (both
	// 0 for a file without frames).
	MinAddr, MaxAddr uint64
	// FrameBytes is the bytes the frames take (the offset of the table):
	// the file's total for junk accounting (docs/crash-safety.md).
	FrameBytes int64
	// Size is the whole file: frames, table and footer.
	Size int64
}

// File is an open, validated data file. Its methods but Close are safe for
// concurrent use; its table is immutable once OpenFile returns.
type File struct {
	f    vfs.File
	name string
	table
	info   FileInfo
	closed atomic.Bool
}

// table is a data file's relocation table as File keeps it, immutable:
// addrs ascending, slots[i] where the frame at addrs[i] lies, and sample
// every sampleEvery-th address. The addresses apart keep a search's cache
// lines few (find).
type table struct {
	addrs  []uint64
	slots  []slot
	sample []uint64
}

// OpenFile reads and validates f's footer and relocation table (see the
// package documentation) and returns a File that reads frames from it. name
// is used in errors only. On success the File owns f and Close closes it;
// on error f is left open for the caller.
//
// Damaged bytes return a *base.CorruptionError; a newer format version an
// error wrapping base.ErrVersion.
func OpenFile(f vfs.File, name string) (*File, error) {
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("pool: open %s: size: %w", name, err)
	}
	if size < footerSize {
		return nil, base.CorruptionErrorf(name, 0, "file of %d bytes is shorter than the %d-byte footer: truncated", size, footerSize)
	}
	var fb [footerSize]byte
	if err := readFull(f, fb[:], size-footerSize); err != nil {
		return nil, fmt.Errorf("pool: open %s: read footer at %d: %w", name, size-footerSize, err)
	}
	ft, err := decodeFooter(fb[:], size)
	if err != nil {
		return nil, withFile(name, "open", err)
	}
	if ft.tableLen > math.MaxInt/2 {
		return nil, fmt.Errorf("pool: open %s: table of %d bytes is too large for this platform", name, ft.tableLen)
	}
	tab := make([]byte, ft.tableLen)
	if err := readFull(f, tab, int64(ft.tableOff)); err != nil {
		return nil, fmt.Errorf("pool: open %s: read table at %d: %w", name, ft.tableOff, err)
	}
	t, err := parseTable(tab, ft)
	if err != nil {
		return nil, withFile(name, "open", err)
	}
	return &File{
		f:     f,
		name:  name,
		table: t,
		info: FileInfo{
			Frames:     len(t.addrs),
			MinAddr:    ft.minAddr,
			MaxAddr:    ft.maxAddr,
			FrameBytes: int64(ft.tableOff),
			Size:       size,
		},
	}, nil
}

// slot is a relocation-table entry less its address (table.addrs).
type slot struct {
	off int64
	len uint32
	crc uint32
	pid uint64 // 0 in a version 1 file: unknown
}

// sampleOf returns every sampleEvery-th address of addrs (table.sample).
func sampleOf(addrs []uint64) []uint64 {
	s := make([]uint64, 0, (len(addrs)+sampleEvery-1)/sampleEvery)
	for i := 0; i < len(addrs); i += sampleEvery {
		s = append(s, addrs[i])
	}
	return s
}

// entry returns the table entry i.
func (r *File) entry(i int) entry {
	s := r.slots[i]
	return entry{addr: r.addrs[i], off: s.off, len: s.len, crc: s.crc, pid: s.pid}
}

// withFile names the file in a decode error: a *base.CorruptionError gets its
// File, anything else is wrapped with the operation.
func withFile(name, op string, err error) error {
	var ce *base.CorruptionError
	if errors.As(err, &ce) {
		ce.File = name
		return ce
	}
	return fmt.Errorf("pool: %s %s: %w", op, name, err)
}

// readFull reads len(p) bytes at off. A file that ends early is
// io.ErrUnexpectedEOF.
func readFull(f vfs.File, p []byte, off int64) error {
	n, err := f.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Name returns the name the file was opened with.
func (r *File) Name() string { return r.name }

// Info returns the file's description.
func (r *File) Info() FileInfo { return r.info }

// Addrs returns the addresses of the file's frames in ascending order. The
// slice is new and belongs to the caller.
func (r *File) Addrs() []uint64 {
	return slices.Clone(r.addrs)
}

// PageFrame is one frame's identity as the relocation table records it.
type PageFrame struct {
	Addr, PID uint64
	Len       int
}

// PageFrames returns the file's frames in ascending address order with
// their page IDs and lengths, from the relocation table alone (no frame
// is read; the table is checksummed as a whole). ok is false for a
// version 1 file, whose table records no page IDs: the caller then reads
// the frame headers. The slice is new and belongs to the caller.
func (r *File) PageFrames() (frames []PageFrame, ok bool) {
	if len(r.slots) > 0 && r.slots[0].pid == 0 {
		return nil, false
	}
	out := make([]PageFrame, len(r.slots))
	for i, s := range r.slots {
		out[i] = PageFrame{Addr: r.addrs[i], PID: s.pid, Len: int(s.len)}
	}
	return out, true
}

// Lookup returns where the frame at addr lies, and whether the file holds
// it. It does no I/O.
func (r *File) Lookup(addr uint64) (FrameRef, bool) {
	i, ok := r.find(addr)
	if !ok {
		return FrameRef{}, false
	}
	return r.entry(i).ref(), true
}

// find returns the index of the entry for addr, and whether there is one
// (else the index where it would go). It searches the sample first, which
// is small enough to stay in the processor's cache, then the sampleEvery
// addresses it points to (512 contiguous bytes). A binary search of the
// whole table, a cache miss at each step, took about 7% of the CPU of
// 2M-key updates through a 256 MiB cache half a minute in, with tens of
// MiB of tables (BenchmarkLookup: about half the time per search). Plain
// loops: the generic search with a compare func cost a call per step.
// O(log n).
func (r *File) find(addr uint64) (int, bool) {
	a, s := r.addrs, r.sample
	j, k := 0, len(s) // j: how many sampled addresses are <= addr
	for j < k {
		m := int(uint(j+k) >> 1)
		if s[m] <= addr {
			j = m + 1
		} else {
			k = m
		}
	}
	// The addresses before the last sample <= addr are below addr, and
	// the next sample is above it.
	lo, hi := max(j-1, 0)*sampleEvery, min(j*sampleEvery, len(a))
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a[m] < addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(a) && a[lo] == addr
}

// sampleEvery is the spacing of table.sample: the sample of a checkpoint's
// 30k frames is 4 KiB.
const sampleEvery = 64

// ReadFrame reads, verifies and decodes the frame at addr. The frame's CRC
// must match both its bytes and the table, and its header must carry addr;
// otherwise the error is a *base.CorruptionError for this frame only, and other
// frames stay readable. An address the file does not hold returns an error
// wrapping ErrNoFrame. The returned frame belongs to the caller and aliases
// no buffer. Safe for concurrent use.
func (r *File) ReadFrame(addr uint64) (*delta.Frame, error) {
	if r.closed.Load() {
		return nil, fmt.Errorf("pool: read %s frame %d: %w", r.name, addr, ErrClosed)
	}
	i, ok := r.find(addr)
	if !ok {
		return nil, fmt.Errorf("pool: read %s frame %d: %w", r.name, addr, ErrNoFrame)
	}
	e := r.entry(i)
	if uint64(e.len) > math.MaxInt/2 {
		return nil, fmt.Errorf("pool: read %s frame %d: %d bytes is too large for this platform", r.name, addr, e.len)
	}
	bp := getBuf(int(e.len))
	defer putBuf(bp)
	buf := (*bp)[:e.len]
	if err := readFull(r.f, buf, e.off); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, r.corrupt(e.off, "frame %d: the file ends inside it", addr)
		}
		return nil, fmt.Errorf("pool: read %s frame %d at %d: %w", r.name, addr, e.off, err)
	}
	fr, err := delta.DecodeFrame(buf)
	if err != nil {
		var de *base.CorruptionError
		if errors.As(err, &de) {
			return nil, r.corrupt(e.off+de.Offset, "frame %d: %s", addr, de.Reason)
		}
		return nil, r.corrupt(e.off, "frame %d: %v", addr, err)
	}
	// The frame is self-consistent; it must also be the one the table
	// describes (a stale or misplaced frame has a valid CRC of its own).
	h, _ := delta.ParseFrameHeader(buf)
	switch {
	case h.CRC != e.crc:
		return nil, r.corrupt(e.off, "frame %d: checksum %08x, the table says %08x", addr, h.CRC, e.crc)
	case fr.Addr != addr:
		return nil, r.corrupt(e.off, "table slot of frame %d holds frame %d", addr, fr.Addr)
	case e.pid != 0 && fr.PID != e.pid:
		return nil, r.corrupt(e.off, "frame %d is of page %d, the table says page %d", addr, fr.PID, e.pid)
	}
	return fr, nil
}

// ReadRaw appends the encoded bytes of the frame at addr to dst and
// returns them with the frame's header, after checking them as ReadFrame
// does (CRC against the bytes and the table, address) but without
// decoding or decompressing the payload: a copy into another file
// (FileWriter.AddRaw) keeps the frame exactly as it was written. Errors as
// for ReadFrame. Safe for concurrent use.
func (r *File) ReadRaw(dst []byte, addr uint64) ([]byte, delta.FrameHeader, error) {
	if r.closed.Load() {
		return dst, delta.FrameHeader{}, fmt.Errorf("pool: read %s frame %d: %w", r.name, addr, ErrClosed)
	}
	i, ok := r.find(addr)
	if !ok {
		return dst, delta.FrameHeader{}, fmt.Errorf("pool: read %s frame %d: %w", r.name, addr, ErrNoFrame)
	}
	e := r.entry(i)
	if uint64(e.len) > math.MaxInt/2 {
		return dst, delta.FrameHeader{}, fmt.Errorf("pool: read %s frame %d: %d bytes is too large for this platform", r.name, addr, e.len)
	}
	start := len(dst)
	dst = slices.Grow(dst, int(e.len))[:start+int(e.len)]
	buf := dst[start:]
	if err := readFull(r.f, buf, e.off); err != nil {
		if err == io.ErrUnexpectedEOF {
			return dst[:start], delta.FrameHeader{}, r.corrupt(e.off, "frame %d: the file ends inside it", addr)
		}
		return dst[:start], delta.FrameHeader{}, fmt.Errorf("pool: read %s frame %d at %d: %w", r.name, addr, e.off, err)
	}
	h, err := delta.VerifyFrame(buf)
	switch {
	case err != nil:
		var de *base.CorruptionError
		if errors.As(err, &de) {
			return dst[:start], h, r.corrupt(e.off+de.Offset, "frame %d: %s", addr, de.Reason)
		}
		return dst[:start], h, r.corrupt(e.off, "frame %d: %v", addr, err)
	case h.CRC != e.crc:
		return dst[:start], h, r.corrupt(e.off, "frame %d: checksum %08x, the table says %08x", addr, h.CRC, e.crc)
	case h.Addr != addr:
		return dst[:start], h, r.corrupt(e.off, "table slot of frame %d holds frame %d", addr, h.Addr)
	case e.pid != 0 && h.PID != e.pid:
		return dst[:start], h, r.corrupt(e.off, "frame %d is of page %d, the table says page %d", addr, h.PID, e.pid)
	}
	return dst, h, nil
}

func (r *File) corrupt(off int64, format string, args ...any) error {
	return base.CorruptionErrorf(r.name, off, format, args...)
}

// Close closes the underlying vfs.File. It must not race with other
// methods; a second Close returns an error wrapping ErrClosed.
func (r *File) Close() error {
	if r.closed.Swap(true) {
		return fmt.Errorf("pool: close %s: %w", r.name, ErrClosed)
	}
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("pool: close %s: %w", r.name, err)
	}
	return nil
}

// maxPooledBuf bounds the read buffers kept for reuse, so one huge frame
// does not pin its buffer forever.
const maxPooledBuf = 1 << 20

// bufPool holds read buffers: DecodeFrame copies what it keeps, so a
// buffer is free again as soon as ReadFrame returns.
var bufPool = sync.Pool{New: func() any { return new([]byte) }}

func getBuf(n int) *[]byte {
	bp := bufPool.Get().(*[]byte)
	if cap(*bp) < n {
		*bp = make([]byte, n)
	}
	return bp
}

func putBuf(bp *[]byte) {
	if cap(*bp) > maxPooledBuf {
		*bp = nil
	}
	bufPool.Put(bp)
}
