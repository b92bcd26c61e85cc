package manifest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/bwkv/bwkv/internal/base"
)

// Record framing: a 4-byte little-endian payload length, a 4-byte
// little-endian CRC-32C (Castagnoli) of the length bytes and the payload,
// then the payload (an encoded Edit). Covering the length by the CRC means a
// damaged length is caught like damaged payload.
const (
	headerSize = 8
	// maxPayload bounds one record. A snapshot of millions of pages fits
	// comfortably; a larger length field is damage.
	maxPayload = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendFrame appends one framed record holding payload to dst.
func appendFrame(dst, payload []byte) []byte {
	var h [headerSize]byte
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(payload)))
	crc := crc32.Update(crc32.Checksum(h[0:4], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(h[4:8], crc)
	dst = append(dst, h[:]...)
	return append(dst, payload...)
}

// frameAt returns the payload and total size of the record starting at off,
// and whether it is a complete record with a matching CRC. A zero length
// is never valid, so a zero-filled tail is not a stream of empty records.
func frameAt(data []byte, off int) (payload []byte, size int, ok bool) {
	if len(data)-off < headerSize {
		return nil, 0, false
	}
	n := int(binary.LittleEndian.Uint32(data[off : off+4]))
	if n == 0 || n > maxPayload || n > len(data)-off-headerSize {
		return nil, 0, false
	}
	payload = data[off+headerSize : off+headerSize+n]
	crc := crc32.Update(crc32.Checksum(data[off:off+4], castagnoli), castagnoli, payload)
	if crc != binary.LittleEndian.Uint32(data[off+4:off+8]) {
		return nil, 0, false
	}
	return payload, headerSize + n, true
}

// nextValidFrame returns the first offset at or after from where a valid
// record starts, or -1. It tries every byte offset, so a damaged length
// field cannot hide the valid records behind it. It costs O(tail) plus the
// CRC of every candidate whose length fits; it runs only after a bad
// record, whose tail is normally one torn record.
func nextValidFrame(data []byte, from int) int {
	for p := from; p+headerSize < len(data); p++ {
		if _, _, ok := frameAt(data, p); ok {
			return p
		}
	}
	return -1
}

// replayInfo describes a replayed manifest file.
type replayInfo struct {
	records  int   // valid records applied
	validEnd int64 // end of the last valid record: where the next one goes
	snapSize int64 // frame size of the first record (the file's snapshot)
	torn     int64 // bytes of a torn last record after validEnd
}

// replay applies every record of a manifest file's contents to a new State.
//
// The first record that is not a complete frame with a matching CRC ends
// the log if nothing valid follows it: that is a torn last record, written
// by an append that a crash interrupted before its fsync returned, so its
// commit was never acknowledged. A bad record followed by a valid one
// cannot come from a crash (each commit fsyncs before the next is written)
// and is corruption, as is a valid frame that does not decode or apply.
func replay(data []byte, file string) (*State, replayInfo, error) {
	st := NewState()
	var info replayInfo
	off := 0
	for off < len(data) {
		payload, size, ok := frameAt(data, off)
		if !ok {
			if p := nextValidFrame(data, off+1); p >= 0 {
				return nil, info, &base.CorruptionError{File: file, Offset: int64(off),
					Reason: fmt.Sprintf("record %d is damaged but a valid record follows at offset %d", info.records, p)}
			}
			info.torn = int64(len(data) - off)
			break
		}
		e, err := DecodeEdit(payload)
		if err == nil {
			err = st.Apply(e)
		}
		if err != nil {
			return nil, info, locate(err, file, int64(off), info.records)
		}
		if info.records == 0 {
			info.snapSize = int64(size)
		}
		info.records++
		off += size
	}
	info.validEnd = int64(off)
	return st, info, nil
}

// locate places an error from decoding or applying the record at off.
// Decode errors carry their offset within the payload.
func locate(err error, file string, off int64, record int) error {
	var ce *base.CorruptionError
	if errors.As(err, &ce) {
		at := off
		if ce.Offset >= 0 {
			at = off + headerSize + ce.Offset
		}
		return &base.CorruptionError{File: file, Offset: at, Reason: fmt.Sprintf("record %d: %s", record, ce.Reason)}
	}
	return fmt.Errorf("manifest: %s record %d at offset %d: %w", file, record, off, err)
}

// countFrames returns the number of valid records at the start of data.
func countFrames(data []byte) int {
	n := 0
	for off := 0; ; n++ {
		_, size, ok := frameAt(data, off)
		if !ok {
			return n
		}
		off += size
	}
}
