package wal

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"slices"

	"github.com/bwkv/bwkv/failpoints"
)

// Record header layout (little endian). The CRC covers every byte of the
// record except itself: the length field, the rest of the header and the
// payload, so a flipped length bit is caught as surely as a flipped payload
// bit.
const (
	offLength  = 0  // uint32: the whole record, header included
	offCRC     = 4  // uint32: CRC-32C (Castagnoli)
	offType    = 8  // uint8
	offTxID    = 9  // uint64
	offSeq     = 17 // uint32
	offPrevLSN = 21 // uint64
	headerSize = 29

	// minRecordSize is a header plus the flags byte that every payload has.
	minRecordSize = headerSize + 1
)

// MaxRecordBytes is the largest encoded record the length field can
// describe. A record must also fit in one segment (Options.SegmentBytes).
const MaxRecordBytes = math.MaxUint32

// Payload flags.
const (
	flagHasOld    = 1 << 0
	flagTombstone = 1 << 1
	flagDeferred  = 1 << 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Decode errors. The first three are what a torn or partly persisted write
// looks like; the others mean a record whose checksum is valid but whose
// contents this version cannot parse (a bug or a newer format), which the
// reader never treats as a torn tail.
var (
	errShort    = errors.New("short record")
	errLength   = errors.New("bad record length")
	errChecksum = errors.New("checksum mismatch")
	errType     = errors.New("unknown record type")
	errFlags    = errors.New("bad flags for record type")
	errVarint   = errors.New("bad varint")
	errField    = errors.New("field overruns record")
	errTrailing = errors.New("trailing bytes after payload")
)

// torn reports whether a decode error is one a torn write can produce.
func torn(err error) bool {
	return err == errShort || err == errLength || err == errChecksum
}

// checksum computes the CRC of an encoded record (rec[:length]), starting
// from seed: 0 for a log whose records are not bound to their position,
// else the record's lsnSeed.
func checksum(rec []byte, seed uint32) uint32 {
	c := crc32.Update(seed, castagnoli, rec[offLength:offCRC])
	return crc32.Update(c, castagnoli, rec[offType:])
}

// lsnSeed is the CRC-32C of lsn's eight little-endian bytes: the CRC of a
// record bound to its position (Options.BindLSN) covers its LSN first, so
// the record reads as valid only at the LSN it was written at. A stale
// record left in a reused segment file sits at another LSN and fails its
// check like any torn write. O(1).
//
// The eight bytes go through the CRC table one by one rather than through
// crc32.Update, which computes the same value: a slice of a local array
// passed there escapes, and the seed cost a heap allocation per record.
// TestLSNSeed holds the two equal.
func lsnSeed(lsn LSN) uint32 {
	crc, v := ^uint32(0), uint64(lsn)
	for range 8 {
		crc = castagnoli[byte(crc)^byte(v)] ^ crc>>8
		v >>= 8
	}
	return ^crc
}

// seedAt returns the CRC seed of the record at lsn: lsnSeed(lsn) if bind,
// else 0.
func seedAt(lsn LSN, bind bool) uint32 {
	if bind && !failpoints.Skip(failpoints.MutWALUnboundRecords) {
		return lsnSeed(lsn)
	}
	return 0
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func fieldLen(b []byte) int { return uvarintLen(uint64(len(b))) + len(b) }

// EncodedSize returns the number of bytes AppendEncode adds for r.
func EncodedSize(r *Record) int {
	n := minRecordSize
	if r.Type.hasKey() {
		n += fieldLen(r.Key)
	}
	switch r.Type {
	case Put:
		n += fieldLen(r.Value)
	case Update:
		n += fieldLen(r.Value)
		if !r.OldDeferred {
			n += fieldLen(r.OldValue)
		}
	case Delete:
		if r.HasOld && !r.OldDeferred {
			n += fieldLen(r.OldValue)
		}
	case CLR:
		if !r.Tombstone {
			n += fieldLen(r.Value)
		}
		n += uvarintLen(uint64(r.UndoNext))
	case Image:
		n += fieldLen(r.Value) + uvarintLen(uint64(r.Of))
	}
	return n
}

// AppendEncode appends the encoding of r to dst and returns the extended
// slice. Only the fields r.Type uses are encoded (see Record). r.Type must
// be valid and EncodedSize(r) at most MaxRecordBytes, or the result will not
// decode; Writer.Append checks both.
func AppendEncode(dst []byte, r *Record) []byte {
	return appendEncode(dst, r, EncodedSize(r), 0)
}

// AppendEncodeAt is AppendEncode for a log whose records are bound to their
// LSN (Options.BindLSN): the record reads back only with DecodeAt(b, lsn).
func AppendEncodeAt(dst []byte, r *Record, lsn LSN) []byte {
	return appendEncode(dst, r, EncodedSize(r), lsnSeed(lsn))
}

// appendEncode is AppendEncode with the size and the CRC seed already
// computed.
func appendEncode(dst []byte, r *Record, size int, seed uint32) []byte {
	start := len(dst)
	dst = slices.Grow(dst, size)
	flags := encodeFlags(r)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0, byte(r.Type)) // length and CRC patched below
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.TxID))
	dst = binary.LittleEndian.AppendUint32(dst, r.Seq)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(r.PrevLSN))
	dst = append(dst, flags)
	if r.Type.hasKey() {
		dst = appendField(dst, r.Key)
	}
	switch r.Type {
	case Put:
		dst = appendField(dst, r.Value)
	case Update:
		dst = appendField(dst, r.Value)
		if !r.OldDeferred {
			dst = appendField(dst, r.OldValue)
		}
	case Delete:
		if flags == flagHasOld {
			dst = appendField(dst, r.OldValue)
		}
	case CLR:
		if !r.Tombstone {
			dst = appendField(dst, r.Value)
		}
		dst = binary.AppendUvarint(dst, uint64(r.UndoNext))
	case Image:
		dst = appendField(dst, r.Value)
		dst = binary.AppendUvarint(dst, uint64(r.Of))
	}
	rec := dst[start:]
	binary.LittleEndian.PutUint32(rec[offLength:], uint32(len(rec)))
	binary.LittleEndian.PutUint32(rec[offCRC:], checksum(rec, seed))
	return dst
}

// encodeFlags returns r's payload flags byte. A deferred old value wins
// over HasOld: the record then holds no old value either way.
func encodeFlags(r *Record) byte {
	switch {
	case (r.Type == Update || r.Type == Delete) && r.OldDeferred:
		return flagDeferred
	case r.Type == Update, r.Type == Delete && r.HasOld:
		return flagHasOld
	case r.Type == CLR && r.Tombstone:
		return flagTombstone
	}
	return 0
}

func appendField(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// Decode decodes the record at the start of b and returns it with its
// encoded length n. It checks the length, the CRC and that the payload is
// exactly what the type calls for, in canonical form (so AppendEncode of a
// decoded record reproduces its bytes).
//
// The returned record's Key, Value and OldValue alias b (capped, so
// appending to them never overwrites b): copy them if b will be reused.
func Decode(b []byte) (r Record, n int, err error) { return decode(b, 0) }

// DecodeAt is Decode for a log whose records are bound to their LSN
// (Options.BindLSN): the record at the start of b must have been written
// at lsn, or its CRC does not match.
func DecodeAt(b []byte, lsn LSN) (r Record, n int, err error) { return decode(b, lsnSeed(lsn)) }

// decode is Decode with the CRC seed (seedAt).
func decode(b []byte, seed uint32) (r Record, n int, err error) {
	if len(b) < headerSize {
		return Record{}, 0, errShort
	}
	length := binary.LittleEndian.Uint32(b[offLength:])
	if length < minRecordSize {
		return Record{}, 0, errLength
	}
	if uint64(length) > uint64(len(b)) {
		return Record{}, 0, errShort
	}
	rec := b[:length]
	if binary.LittleEndian.Uint32(rec[offCRC:]) != checksum(rec, seed) {
		return Record{}, 0, errChecksum
	}
	r, err = decodePayload(rec)
	if err != nil {
		return Record{}, 0, err
	}
	return r, int(length), nil
}

// decodePayload parses a record whose length and CRC are already checked.
func decodePayload(rec []byte) (Record, error) {
	r := Record{
		Type:    Type(rec[offType]),
		TxID:    TxID(binary.LittleEndian.Uint64(rec[offTxID:])),
		Seq:     binary.LittleEndian.Uint32(rec[offSeq:]),
		PrevLSN: LSN(binary.LittleEndian.Uint64(rec[offPrevLSN:])),
	}
	if !r.Type.Valid() {
		return Record{}, errType
	}
	flags := rec[headerSize]
	p := rec[headerSize+1:]
	ok := flags == 0
	switch r.Type {
	case Update:
		ok = flags == flagHasOld || flags == flagDeferred
	case Delete:
		ok = flags == 0 || flags == flagHasOld || flags == flagDeferred
	case CLR:
		ok = flags == 0 || flags == flagTombstone
	}
	if !ok {
		return Record{}, errFlags
	}
	r.HasOld = flags&flagHasOld != 0
	r.Tombstone = flags&flagTombstone != 0
	r.OldDeferred = flags&flagDeferred != 0

	var err error
	if r.Type.hasKey() {
		if r.Key, p, err = readField(p); err != nil {
			return Record{}, err
		}
	}
	if r.Type == Put || r.Type == Update || r.Type == Image || (r.Type == CLR && !r.Tombstone) {
		if r.Value, p, err = readField(p); err != nil {
			return Record{}, err
		}
	}
	if r.HasOld {
		if r.OldValue, p, err = readField(p); err != nil {
			return Record{}, err
		}
	}
	if r.Type == CLR {
		v, k := readUvarint(p)
		if k <= 0 {
			return Record{}, errVarint
		}
		r.UndoNext, p = LSN(v), p[k:]
	}
	if r.Type == Image {
		v, k := readUvarint(p)
		if k <= 0 {
			return Record{}, errVarint
		}
		r.Of, p = LSN(v), p[k:]
	}
	if len(p) != 0 {
		return Record{}, errTrailing
	}
	return r, nil
}

// readUvarint is binary.Uvarint that also rejects overlong encodings, so
// every value has exactly one encoding.
func readUvarint(p []byte) (uint64, int) {
	v, k := binary.Uvarint(p)
	if k > 1 && p[k-1] == 0 {
		return 0, -1
	}
	return v, k
}

// readField reads a length-prefixed byte string and returns it (capped) and
// the rest of p.
func readField(p []byte) (field, rest []byte, err error) {
	l, k := readUvarint(p)
	if k <= 0 {
		return nil, nil, errVarint
	}
	p = p[k:]
	if l > uint64(len(p)) {
		return nil, nil, errField
	}
	return p[:l:l], p[l:], nil
}
