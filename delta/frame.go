package delta

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"github.com/bwkv/bwkv/internal/base"
)

// On-disk frames (docs/formats.md). A frame is one delta or one base page plus its
// identity, encoded little endian as a fixed header and a payload:
//
//	off  size  field
//	0    1     magic       frameMagic
//	1    1     kind        KindDelta, KindBase or KindBlob
//	2    1     flags       bit 0: the payload is compressed, bit 1: the base
//	                       has a high fence
//	3    1     codec       the payload's Codec if compressed, else 0
//	4    4     length      the whole frame, header included
//	8    4     crc         CRC-32C (Castagnoli) of every other byte of the frame
//	12   4     payloadLen  the payload's uncompressed length (length-48 for
//	                       a plain frame; at most maxRatio times the stored
//	                       bytes for a compressed one)
//	16   8     addr        logical address, never 0
//	24   8     pid         page ID
//	32   8     lsn         LSN of the record that produced the frame
//	40   8     link        addr of the next-older frame of the page (0: none), < addr
//	48         payload
//
// A delta's payload is one slab entry (appendEntry): key length
// u32, value length u32, txid u64, seq u32, flags u8, key, value; an entry
// with the Blob flag holds a 16-byte BlobRef as its value (blob.go). A
// blob's payload is the value itself (a blob frame has link 0 and is never
// compressed). A base's payload is
//
//	0    8     sibling     right sibling PID (0: none)
//	8    4     keys        distinct keys (Base.Keys)
//	12   4     count       entries (Base.Len)
//	16   4     lowLen
//	20   4     highLen     0 unless the has-high flag is set
//	24   1     level
//	25         low fence, high fence, then count entries back to back
//
// A compressed frame stores the codec's encoding of that payload; the CRC
// covers the compressed bytes, so damage is caught before any decoder
// sees them, and a decoder error on bytes that pass it is corruption too.
//
// The decoder validates the entries where they lie, then copies them into
// the in-memory layout of base.go (fields, keys and values apart).
// The CRC covers the length field, so a damaged length cannot frame a
// plausible record; every other field is validated after the CRC, so a
// decoded plain frame re-encodes to the same bytes.
const (
	fhMagic      = 0
	fhKind       = 1
	fhFlags      = 2
	fhCodec      = 3
	fhLength     = 4
	fhCRC        = 8
	fhPayloadLen = 12
	fhAddr       = 16
	fhPID        = 24
	fhLSN        = 32
	fhLink       = 40

	// FrameHeaderSize is the size of a frame's fixed header; no frame is
	// shorter.
	FrameHeaderSize = 48

	// MaxFrameBytes is the largest encoded frame the length field can
	// describe.
	MaxFrameBytes = math.MaxUint32

	frameMagic = 0xB7

	// Frame flags.
	frameCompressed = 1 << 0
	frameHasHigh    = 1 << 1
	frameFlagsKnown = frameCompressed | frameHasHigh

	// basePayloadFixed is the fixed part of a base payload.
	basePayloadFixed = 25

	// flagsKnown are the version flags this code reads.
	flagsKnown = Tombstone | CLR | Blob
)

// FrameKind says what a frame holds.
type FrameKind uint8

// The frame kinds.
const (
	// KindDelta is a frame holding one delta.
	KindDelta FrameKind = 1
	// KindBase is a frame holding one base page.
	KindBase FrameKind = 2
	// KindBlob is a frame holding one value stored outside its page.
	KindBlob FrameKind = 3
)

// String implements fmt.Stringer.
func (k FrameKind) String() string {
	switch k {
	case KindDelta:
		return "delta"
	case KindBase:
		return "base"
	case KindBlob:
		return "blob"
	}
	return fmt.Sprintf("FrameKind(%d)", uint8(k))
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// corrupt reports frame bytes that fail validation: a *base.CorruptionError
// with no File (the frame is decoded from a buffer) and an Offset inside
// the frame; package pool names the file and shifts the offset.
func corrupt(off int, format string, args ...any) error {
	return base.CorruptionErrorf("", int64(off), format, args...)
}

// Frame is one delta or one base page with its frame identity (docs/formats.md).
// Exactly one of Delta, Base and Blob is set.
//
// AppendFrame encodes the identity from the Frame's fields, not from
// Delta.Addr or Delta.LSN. DecodeFrame returns records that own their
// memory (nothing aliases the input) and sets Delta.Addr and Delta.LSN from
// the frame; Delta.Gen and Delta.Next are left zero, as they are not
// stored.
type Frame struct {
	// Addr is the frame's logical address (never 0).
	Addr uint64
	// PID is the page the frame belongs to.
	PID uint64
	// LSN is the LSN of the log record that produced the frame.
	LSN uint64
	// Link is the address of the next-older frame of the same page (0:
	// none). Addresses are drawn in order under the page lock, so
	// Link < Addr.
	Link uint64

	Delta *Delta
	Base  *Base
	// Blob is the value a blob frame holds.
	Blob []byte
	// Refs, by ascending Index, are the entries of the record that are
	// stored as references to blob frames (the Blob flag and a BlobRef
	// instead of the value). The checkpointer sets them before encoding;
	// Materialize sets them on a decoded frame.
	Refs []EntryRef

	// Plain asks a Compressor to store the frame uncompressed: the
	// checkpointer sets it on the frames of a hot page, which the next
	// write supersedes soon (checkpoint.Heat). Not encoded.
	Plain bool

	// Stored is the encoded frame's length as read (compressed or not),
	// set by DecodeFrame; AppendFrame ignores it. Space accounting uses
	// it, as Size is the plain encoding's length.
	Stored int
}

// Kind returns the kind of record f holds, or 0 if it holds none or both.
func (f *Frame) Kind() FrameKind {
	switch {
	case f.Delta != nil && f.Base == nil && f.Blob == nil:
		return KindDelta
	case f.Base != nil && f.Delta == nil && f.Blob == nil:
		return KindBase
	case f.Blob != nil && f.Delta == nil && f.Base == nil:
		return KindBlob
	}
	return 0
}

// Size returns the number of bytes AppendFrame adds for f (the plain
// encoding), or 0 if f holds no record or both kinds.
func (f *Frame) Size() int {
	switch f.Kind() {
	case KindDelta:
		return FrameHeaderSize + entryHeader + len(f.Delta.Key) + len(f.Delta.Value) - f.refsSaved()
	case KindBase:
		return FrameHeaderSize + basePayloadFixed + len(f.Base.Low) + len(f.Base.High) + f.Base.entryBytes() - f.refsSaved()
	case KindBlob:
		return FrameHeaderSize + len(f.Blob)
	}
	return 0
}

// Check reports why f cannot be encoded: it must hold exactly one record,
// have a non-zero Addr and a Link below it and fit in MaxFrameBytes; a
// delta may carry only the known flags; a base's Keys must be consistent
// with its entry count, and an inner base must have a child. Check costs
// one pass over a base's offsets and no key comparison, so it does not
// check entry order (Builder's contract); DecodeFrame does, and rejects a
// base built against that contract.
func (f *Frame) Check() error {
	_, err := f.check()
	return err
}

// check is Check returning the encoded size as well.
func (f *Frame) check() (int, error) {
	if f.Kind() == 0 {
		what := "no record"
		if f.Delta != nil || f.Base != nil || f.Blob != nil {
			what = "more than one record"
		}
		return 0, fmt.Errorf("delta: frame %d holds %s", f.Addr, what)
	}
	if f.Addr == 0 {
		return 0, fmt.Errorf("delta: frame of page %d has address 0", f.PID)
	}
	if f.Link >= f.Addr {
		return 0, fmt.Errorf("delta: frame %d links forward to %d", f.Addr, f.Link)
	}
	if d := f.Delta; d != nil && d.Flags&^flagsKnown != 0 {
		return 0, fmt.Errorf("delta: frame %d: unknown version flags %#x", f.Addr, uint8(d.Flags))
	}
	if f.Blob != nil && f.Link != 0 {
		return 0, fmt.Errorf("delta: blob frame %d links to %d", f.Addr, f.Link)
	}
	if err := f.checkRefs(); err != nil {
		return 0, err
	}
	if b := f.Base; b != nil {
		if err := b.checkEncodable(); err != nil {
			return 0, fmt.Errorf("delta: frame %d: %w", f.Addr, err)
		}
	}
	size := f.Size()
	if int64(size) > MaxFrameBytes {
		return 0, fmt.Errorf("delta: frame %d of %d bytes exceeds MaxFrameBytes", f.Addr, size)
	}
	return size, nil
}

// AppendFrame appends the plain (uncompressed) encoding of f to dst and
// returns the extended slice. f must pass Check: a frame that does not is
// a broken in-memory invariant of the caller, and AppendFrame panics
// naming it.
func AppendFrame(dst []byte, f *Frame) []byte { return mustAppend(appendFrame(dst, f, nil)) }

// AppendFrame appends the encoding of f to dst, compressed with c's codec
// when that pays (a payload of at least 64 bytes that shrinks by 1/16 or
// more) unless f.Plain, else plain, and returns the extended slice. f must pass Check,
// as for the package-level AppendFrame.
func (c *Compressor) AppendFrame(dst []byte, f *Frame) []byte {
	return mustAppend(appendFrame(dst, f, c))
}

// AppendChecked is AppendFrame for a frame not known to pass Check: it
// returns Check's error, with dst as it was, instead of panicking. The
// frame is checked once, not once by the caller and again here. A nil c
// appends plain frames.
func (c *Compressor) AppendChecked(dst []byte, f *Frame) ([]byte, error) {
	return appendFrame(dst, f, c)
}

func mustAppend(dst []byte, err error) []byte {
	if err != nil {
		panic("delta: AppendFrame of an invalid frame: " + err.Error())
	}
	return dst
}

func appendFrame(dst []byte, f *Frame, c *Compressor) ([]byte, error) {
	size, err := f.check()
	if err != nil {
		return dst, err
	}
	var flags byte
	if f.Base != nil && f.Base.High != nil {
		flags = frameHasHigh
	}
	start := len(dst)
	if c != nil && c.codec != CodecNone && f.Blob == nil && !f.Plain && size-FrameHeaderSize >= minCompress {
		c.plain = appendPayload(c.plain[:0], f)
		if c.compress() {
			dst = slices.Grow(dst, FrameHeaderSize+len(c.out))
			dst = appendHeader(dst, f, flags|frameCompressed, c.codec, FrameHeaderSize+len(c.out), len(c.plain))
			dst = append(dst, c.out...)
			c.trim()
			binary.LittleEndian.PutUint32(dst[start+fhCRC:], frameChecksum(dst[start:]))
			return dst, nil
		}
		c.trim()
	}
	dst = slices.Grow(dst, size)
	dst = appendHeader(dst, f, flags, CodecNone, size, size-FrameHeaderSize)
	dst = appendPayload(dst, f)
	binary.LittleEndian.PutUint32(dst[start+fhCRC:], frameChecksum(dst[start:]))
	return dst, nil
}

// appendHeader appends a frame header with a zero CRC.
func appendHeader(dst []byte, f *Frame, flags byte, codec Codec, length, payloadLen int) []byte {
	var h [FrameHeaderSize]byte
	h[fhMagic] = frameMagic
	h[fhKind] = byte(f.Kind())
	h[fhFlags] = flags
	h[fhCodec] = byte(codec)
	binary.LittleEndian.PutUint32(h[fhLength:], uint32(length))
	binary.LittleEndian.PutUint32(h[fhPayloadLen:], uint32(payloadLen))
	binary.LittleEndian.PutUint64(h[fhAddr:], f.Addr)
	binary.LittleEndian.PutUint64(h[fhPID:], f.PID)
	binary.LittleEndian.PutUint64(h[fhLSN:], f.LSN)
	binary.LittleEndian.PutUint64(h[fhLink:], f.Link)
	return append(dst, h[:]...)
}

// appendPayload appends f's plain payload.
func appendPayload(dst []byte, f *Frame) []byte {
	if d := f.Delta; d != nil {
		if len(f.Refs) > 0 {
			return appendEntry(dst, d.Key, AppendBlobRef(nil, f.Refs[0].Ref), d.TxID, d.Seq, d.Flags|Blob)
		}
		return appendEntry(dst, d.Key, d.Value, d.TxID, d.Seq, d.Flags)
	}
	if f.Blob != nil {
		return append(dst, f.Blob...)
	}
	return f.Base.appendPayload(dst, f.Refs)
}

// appendEntry appends one entry in the slab layout.
func appendEntry(dst, key, value []byte, txid uint64, seq uint32, flags Flags) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(key)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(value)))
	dst = binary.LittleEndian.AppendUint64(dst, txid)
	dst = binary.LittleEndian.AppendUint32(dst, seq)
	dst = append(dst, byte(flags))
	dst = append(dst, key...)
	return append(dst, value...)
}

// frameChecksum computes the CRC of an encoded frame: every byte but the
// CRC field. frame must hold at least a header.
func frameChecksum(frame []byte) uint32 {
	c := crc32.Update(0, castagnoli, frame[:fhCRC])
	return crc32.Update(c, castagnoli, frame[fhCRC+4:])
}
