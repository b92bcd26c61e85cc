package manifest

import (
	"encoding/binary"
	"math"

	"github.com/bwkv/bwkv/internal/base"
)

// editEncoding is the version byte that starts every encoded Edit. A larger
// value is a newer encoding: DecodeEdit returns base.ErrVersion.
const editEncoding = 1

// Field tags of the encoding. They appear in strictly increasing order, each
// at most once, so an Edit has exactly one encoding. Tag values are part of
// the on-disk format: never renumber, only append.
const (
	tagFormatVersion  = 1
	tagOptions        = 2
	tagNextPID        = 3
	tagNextAddr       = 4
	tagNextFileID     = 5
	tagOracle         = 6
	tagNextManifest   = 7
	tagFrontier       = 8
	tagAnalysisStart  = 9
	tagStageFile      = 10
	tagSetPages       = 11
	tagRemovePages    = 12
	tagAddRanges      = 13
	tagRemoveRanges   = 14
	tagAddFiles       = 15
	tagFileStats      = 16
	tagPendingDeletes = 17
	tagDeletedFiles   = 18
	tagLogSynced      = 19
	// tagMaxValueSize carries FormatOptions.MaxValueSize. It is a tag of
	// its own (not part of tagOptions' value) so that manifests written
	// before it existed still decode; it is present only with tagOptions
	// and only when non-zero.
	tagMaxValueSize = 20
)

// maxCodecLen bounds the Compression codec name.
const maxCodecLen = 255

// Encode appends the binary encoding of e to dst and returns the extended
// slice. The encoding is a version byte, then for every present field its
// tag (uvarint) and value: unsigned integers as uvarints, Total and Live as
// zig-zag varints, ints of FormatOptions as uvarints, a string as its
// length and bytes, a slice as its length and its elements. Encode does not
// validate: State.Apply does. A negative FormatOptions int encodes as a
// value DecodeEdit rejects.
func (e *Edit) Encode(dst []byte) []byte {
	dst = append(dst, editEncoding)
	u := binary.AppendUvarint
	scalar := func(f Field, tag uint64, v uint64) {
		if e.Has&f != 0 {
			dst = u(u(dst, tag), v)
		}
	}
	scalar(HasFormatVersion, tagFormatVersion, e.FormatVersion)
	if e.Has&HasOptions != 0 {
		o := &e.Options
		dst = u(dst, tagOptions)
		dst = u(dst, intBits(o.PageSplitEntries))
		dst = u(dst, intBits(o.BlobThreshold))
		dst = u(dst, intBits(o.MaxKeySize))
		dst = u(dst, uint64(len(o.Compression)))
		dst = append(dst, o.Compression...)
	}
	scalar(HasNextPID, tagNextPID, e.NextPID)
	scalar(HasNextAddr, tagNextAddr, e.NextAddr)
	scalar(HasNextFileID, tagNextFileID, uint64(e.NextFileID))
	scalar(HasOracle, tagOracle, e.Oracle)
	scalar(HasNextManifest, tagNextManifest, e.NextManifest)
	scalar(HasFrontier, tagFrontier, e.Frontier)
	scalar(HasAnalysisStart, tagAnalysisStart, e.AnalysisStart)
	scalar(HasStageFile, tagStageFile, uint64(e.StageFile))

	if n := len(e.SetPages); n > 0 {
		dst = u(u(dst, tagSetPages), uint64(n))
		for _, p := range e.SetPages {
			dst = u(u(dst, p.PID), p.Addr)
		}
	}
	if n := len(e.RemovePages); n > 0 {
		dst = u(u(dst, tagRemovePages), uint64(n))
		for _, pid := range e.RemovePages {
			dst = u(dst, pid)
		}
	}
	dst = appendRanges(dst, tagAddRanges, e.AddRanges)
	dst = appendRanges(dst, tagRemoveRanges, e.RemoveRanges)
	dst = appendFiles(dst, tagAddFiles, e.AddFiles)
	dst = appendFiles(dst, tagFileStats, e.FileStats)
	dst = appendIDs(dst, tagPendingDeletes, e.PendingDeletes)
	dst = appendIDs(dst, tagDeletedFiles, e.DeletedFiles)
	scalar(HasLogSynced, tagLogSynced, e.LogSynced)
	if e.Has&HasOptions != 0 && e.Options.MaxValueSize != 0 {
		dst = u(u(dst, tagMaxValueSize), intBits(e.Options.MaxValueSize))
	}
	return dst
}

// intBits maps a non-negative int to its uvarint value and a negative one
// to a value above MaxInt64, which DecodeEdit rejects.
func intBits(v int) uint64 {
	if v < 0 {
		return math.MaxUint64
	}
	return uint64(v)
}

func appendRanges(dst []byte, tag uint64, rs []Range) []byte {
	if len(rs) == 0 {
		return dst
	}
	dst = binary.AppendUvarint(binary.AppendUvarint(dst, tag), uint64(len(rs)))
	for _, r := range rs {
		dst = binary.AppendUvarint(dst, r.Lo)
		dst = binary.AppendUvarint(dst, r.Hi)
		dst = binary.AppendUvarint(dst, uint64(r.File))
	}
	return dst
}

func appendFiles(dst []byte, tag uint64, fs []FileMeta) []byte {
	if len(fs) == 0 {
		return dst
	}
	dst = binary.AppendUvarint(binary.AppendUvarint(dst, tag), uint64(len(fs)))
	for _, f := range fs {
		dst = binary.AppendUvarint(dst, uint64(f.ID))
		dst = binary.AppendVarint(dst, f.Total)
		dst = binary.AppendVarint(dst, f.Live)
	}
	return dst
}

func appendIDs(dst []byte, tag uint64, ids []FileID) []byte {
	if len(ids) == 0 {
		return dst
	}
	dst = binary.AppendUvarint(binary.AppendUvarint(dst, tag), uint64(len(ids)))
	for _, id := range ids {
		dst = binary.AppendUvarint(dst, uint64(id))
	}
	return dst
}

// decoder reads the encoding strictly: a non-minimal varint, an empty or
// impossible count, an unknown or repeated tag or trailing bytes are
// errors, so every accepted input re-encodes to itself.
type decoder struct {
	b   []byte
	off int
	err *base.CorruptionError
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = corruptf(format, args...)
		d.err.Offset = int64(d.off)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("edit: bad varint in %s", what)
		return 0
	}
	if n != uvarintLen(v) {
		d.fail("edit: non-minimal varint in %s", what)
		return 0
	}
	d.off += n
	return v
}

func (d *decoder) varint(what string) int64 {
	u := d.uvarint(what)
	// Zig-zag, as binary.AppendVarint writes it.
	return int64(u>>1) ^ -int64(u&1)
}

func (d *decoder) int(what string) int {
	v := d.uvarint(what)
	if v > uint64(math.MaxInt) {
		d.fail("edit: %s %d out of range", what, v)
		return 0
	}
	return int(v)
}

// count reads a slice length: at least 1 (empty slices are not encoded)
// and at most the bytes left divided by the minimum element size, so a
// hostile count cannot make the decoder allocate more than its input.
func (d *decoder) count(what string, minElem int) int {
	n := d.uvarint(what)
	if d.err != nil {
		return 0
	}
	if n == 0 || n > uint64((len(d.b)-d.off)/minElem) {
		d.fail("edit: bad %s count %d", what, n)
		return 0
	}
	return int(n)
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// DecodeEdit decodes one Edit encoded by Encode. A version byte newer than
// this code reads returns an error wrapping base.ErrVersion; any other malformed
// input returns a *base.CorruptionError whose Offset is the position in payload.
// The returned Edit does not alias payload.
func DecodeEdit(payload []byte) (*Edit, error) {
	if len(payload) == 0 {
		return nil, &base.CorruptionError{Offset: 0, Reason: "edit: empty payload"}
	}
	if v := payload[0]; v != editEncoding {
		if v > editEncoding {
			return nil, versionError("edit encoding", uint64(v), editEncoding)
		}
		return nil, &base.CorruptionError{Offset: 0, Reason: "edit: encoding version 0"}
	}
	d := &decoder{b: payload, off: 1}
	e := &Edit{}
	last := uint64(0)
	for d.err == nil && d.off < len(d.b) {
		start := d.off
		tag := d.uvarint("tag")
		if d.err != nil {
			break
		}
		if tag <= last {
			d.off = start
			d.fail("edit: tag %d after tag %d", tag, last)
			break
		}
		last = tag
		d.field(e, tag)
	}
	if d.err != nil {
		return nil, d.err
	}
	return e, nil
}

// field decodes the value of one tag into e.
func (d *decoder) field(e *Edit, tag uint64) {
	switch tag {
	case tagFormatVersion:
		e.Has |= HasFormatVersion
		e.FormatVersion = d.uvarint("format version")
	case tagOptions:
		e.Has |= HasOptions
		d.options(&e.Options)
	case tagNextPID:
		e.Has |= HasNextPID
		e.NextPID = d.uvarint("next pid")
	case tagNextAddr:
		e.Has |= HasNextAddr
		e.NextAddr = d.uvarint("next addr")
	case tagNextFileID:
		e.Has |= HasNextFileID
		e.NextFileID = FileID(d.uvarint("next file id"))
	case tagOracle:
		e.Has |= HasOracle
		e.Oracle = d.uvarint("oracle")
	case tagNextManifest:
		e.Has |= HasNextManifest
		e.NextManifest = d.uvarint("next manifest")
	case tagFrontier:
		e.Has |= HasFrontier
		e.Frontier = d.uvarint("frontier")
	case tagAnalysisStart:
		e.Has |= HasAnalysisStart
		e.AnalysisStart = d.uvarint("analysis start")
	case tagStageFile:
		e.Has |= HasStageFile
		e.StageFile = FileID(d.uvarint("stage file"))
	case tagSetPages:
		e.SetPages = d.pages("set pages")
	case tagRemovePages:
		e.RemovePages = d.pids("remove pages")
	case tagAddRanges:
		e.AddRanges = d.ranges("add ranges")
	case tagRemoveRanges:
		e.RemoveRanges = d.ranges("remove ranges")
	case tagAddFiles:
		e.AddFiles = d.files("add files")
	case tagFileStats:
		e.FileStats = d.files("file stats")
	case tagPendingDeletes:
		e.PendingDeletes = d.ids("pending deletes")
	case tagDeletedFiles:
		e.DeletedFiles = d.ids("deleted files")
	case tagLogSynced:
		e.Has |= HasLogSynced
		e.LogSynced = d.uvarint("log synced")
	case tagMaxValueSize:
		d.maxValueSize(e)
	default:
		d.fail("edit: unknown tag %d", tag)
	}
}

// options decodes the format options' fields before MaxValueSize (which
// has its own tag).
func (d *decoder) options(o *FormatOptions) {
	o.PageSplitEntries = d.int("page split entries")
	o.BlobThreshold = d.int("blob threshold")
	o.MaxKeySize = d.int("max key size")
	n := d.uvarint("codec length")
	if d.err == nil && (n > maxCodecLen || n > uint64(len(d.b)-d.off)) {
		d.fail("edit: bad codec length %d", n)
	}
	if d.err == nil {
		o.Compression = string(d.b[d.off : d.off+int(n)])
		d.off += int(n)
	}
}

// maxValueSize decodes the format options' MaxValueSize: only as part of
// the options, and zero is never encoded, so that every edit keeps
// exactly one encoding.
func (d *decoder) maxValueSize(e *Edit) {
	if e.Has&HasOptions == 0 {
		d.fail("edit: max value size without format options")
		return
	}
	if e.Options.MaxValueSize = d.int("max value size"); d.err == nil && e.Options.MaxValueSize == 0 {
		d.fail("edit: max value size 0")
	}
}

// pages decodes a counted list of (PID, address) entries.
func (d *decoder) pages(what string) []PageEntry {
	ps := make([]PageEntry, d.count(what, 2))
	for i := range ps {
		ps[i] = PageEntry{PID: d.uvarint("pid"), Addr: d.uvarint("addr")}
	}
	return ps
}

// pids decodes a counted list of PIDs.
func (d *decoder) pids(what string) []uint64 {
	ps := make([]uint64, d.count(what, 1))
	for i := range ps {
		ps[i] = d.uvarint("pid")
	}
	return ps
}

func (d *decoder) ranges(what string) []Range {
	rs := make([]Range, d.count(what, 3))
	for i := range rs {
		rs[i] = Range{Lo: d.uvarint("range lo"), Hi: d.uvarint("range hi"), File: FileID(d.uvarint("range file"))}
	}
	return rs
}

func (d *decoder) files(what string) []FileMeta {
	fs := make([]FileMeta, d.count(what, 3))
	for i := range fs {
		fs[i] = FileMeta{ID: FileID(d.uvarint("file id")), Total: d.varint("file total"), Live: d.varint("file live")}
	}
	return fs
}

func (d *decoder) ids(what string) []FileID {
	ids := make([]FileID, d.count(what, 1))
	for i := range ids {
		ids[i] = FileID(d.uvarint("file id"))
	}
	return ids
}
