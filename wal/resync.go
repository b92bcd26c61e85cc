package wal

import "encoding/binary"

// Telling a torn tail from damage
//
// A power loss can leave the last segment ending in a partly written
// record, followed by nothing (or by the zeroes of a preallocated file):
// the writer appends sequentially, so nothing it wrote later can be on
// disk while an earlier byte of the same segment is not... unless the
// earlier byte was damaged after it was written. So after a bad record the
// reader scans forward, byte by byte, for a record of this log; finding
// one means the bad record is damage in the middle of the log, and the
// commits after it would be dropped silently if the log ended there.
//
// The scan must not mistake other bytes (the rest of the damaged record,
// a torn write's garbage) for a record. A candidate at LSN l counts only if
//
//   - its length is plausible and fits the segment, its type and flags are
//     defined, its txid is not zero and its prevLSN is below l (a record
//     names an older record of its transaction; a begin names none);
//   - its CRC-32C matches (with BindLSN, at l: a stale record of a reused
//     segment file, written at another LSN, does not) and its payload
//     decodes strictly (canonical varints, no trailing bytes);
//   - it is confirmed: it ends exactly at the end of the segment, or where
//     only zeroes follow, or where another record passing the first two
//     tests starts.
//
// For random bytes the prevLSN test alone passes with odds of about
// l/2^64, and a confirmed candidate needs two independent CRC matches
// (2^-64) or a CRC match plus a length landing exactly on the end
// (2^-64). Bytes that are themselves well-formed records of some log, such
// as a user value holding a copy of log records, can still be taken for
// one; that errs on the side of reporting damage, and
// WALRecoveryTruncateDamaged is the way out.

// resyncCandidate reports whether a record of this log plausibly starts at
// off (LSN lsn), and its length.
func (w *window) resyncCandidate(off int64, lsn LSN) (int64, bool, error) {
	if w.size-off < minRecordSize {
		return 0, false, nil
	}
	hdr, err := w.bytes(off, minRecordSize)
	if err != nil {
		return 0, false, err
	}
	n := int64(binary.LittleEndian.Uint32(hdr[offLength:]))
	prev := LSN(binary.LittleEndian.Uint64(hdr[offPrevLSN:]))
	typ := Type(hdr[offType])
	if n < minRecordSize || n > w.size-off || !typ.Valid() ||
		binary.LittleEndian.Uint64(hdr[offTxID:]) == 0 || prev >= lsn || typ == Begin && prev != 0 ||
		hdr[headerSize] > flagTombstone {
		return 0, false, nil
	}
	b, err := w.bytes(off, int(n))
	if err != nil {
		return 0, false, err
	}
	if _, _, err := decode(b, seedAt(lsn, w.bind)); err != nil {
		return 0, false, nil
	}
	return n, true, nil
}

// resync scans the segment (first LSN seg) after the bad record at off for
// a confirmed record of this log (see above) and returns its offset.
func (w *window) resync(off int64, seg LSN) (int64, bool, error) {
	for o := off + 1; o+minRecordSize <= w.size; o++ {
		n, ok, err := w.resyncCandidate(o, seg+LSN(o))
		if err != nil {
			return 0, false, err
		}
		if !ok {
			continue
		}
		next := o + n
		if next == w.size {
			return o, true, nil
		}
		zero, err := w.zeroFrom(next)
		if err != nil {
			return 0, false, err
		}
		if zero {
			return o, true, nil
		}
		if _, ok, err := w.resyncCandidate(next, seg+LSN(next)); err != nil {
			return 0, false, err
		} else if ok {
			return o, true, nil
		}
	}
	return 0, false, nil
}

// zeroFrom reports whether every byte of the segment from off on is zero.
func (w *window) zeroFrom(off int64) (bool, error) {
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
