package wal_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/bwkv/bwkv/wal"
)

// frame wraps body (everything after the CRC field: type, txid, seq,
// prevLSN, payload) in a valid length and CRC-32C, computed here from the
// format description rather than with the package's code: the CRC covers
// the length field and every byte after the CRC field.
func frame(body []byte) []byte { return frameSeeded(body, 0) }

// frameSeeded is frame with the CRC-32C started from seed.
func frameSeeded(body []byte, seed uint32) []byte {
	rec := make([]byte, 8+len(body))
	binary.LittleEndian.PutUint32(rec, uint32(len(rec)))
	copy(rec[8:], body)
	tab := crc32.MakeTable(crc32.Castagnoli)
	c := crc32.Update(crc32.Update(seed, tab, rec[:4]), tab, rec[8:])
	binary.LittleEndian.PutUint32(rec[4:], c)
	return rec
}

// FuzzDecode feeds arbitrary bytes to Decode twice: as they are (the
// length and CRC checks) and re-framed with a valid length and CRC, so the
// fuzzer reaches the payload parser. Whatever decodes must re-encode to the
// same bytes.
func FuzzDecode(f *testing.F) {
	for _, tc := range codecCases {
		if len(tc.in.Value) > 1000 || len(tc.in.OldValue) > 1000 {
			continue
		}
		enc := wal.AppendEncode(nil, &tc.in)
		f.Add(enc[8:])
		f.Add(enc)
	}
	f.Add([]byte{})
	f.Add(make([]byte, 40))
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(b []byte) {
			r, n, err := wal.Decode(b)
			if err != nil {
				return
			}
			if n < 30 || n > len(b) {
				t.Fatalf("Decode n = %d of %d bytes", n, len(b))
			}
			if re := wal.AppendEncode(nil, &r); !bytes.Equal(re, b[:n]) {
				t.Fatalf("re-encoding of %s differs:\n got %x\nwant %x", fmtRecord(&r), re, b[:n])
			}
			if wal.EncodedSize(&r) != n {
				t.Fatalf("EncodedSize %d != %d", wal.EncodedSize(&r), n)
			}
		}
		check(data)
		check(frame(data))
	})
}

// frameAt is frame for a log whose records are bound to their LSN (format
// 3), again from the format description: the CRC-32C of the LSN's eight
// little-endian bytes is the initial value of the record's CRC.
func frameAt(body []byte, lsn uint64) []byte {
	var l [8]byte
	binary.LittleEndian.PutUint64(l[:], lsn)
	return frameSeeded(body, crc32.Checksum(l[:], crc32.MakeTable(crc32.Castagnoli)))
}

// FuzzDecodeAt is FuzzDecode for records bound to their LSN: arbitrary
// bytes and LSNs, as they are and re-framed at the LSN; whatever decodes
// re-encodes at that LSN to the same bytes, and never decodes at the next
// LSN.
func FuzzDecodeAt(f *testing.F) {
	for i, tc := range codecCases {
		if len(tc.in.Value) > 1000 || len(tc.in.OldValue) > 1000 {
			continue
		}
		lsn := uint64(i) << 20
		enc := wal.AppendEncodeAt(nil, &tc.in, wal.LSN(lsn))
		f.Add(enc[8:], lsn)
		f.Add(enc, lsn)
	}
	f.Add([]byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, data []byte, lsn uint64) {
		check := func(b []byte) {
			r, n, err := wal.DecodeAt(b, wal.LSN(lsn))
			if err != nil {
				return
			}
			if re := wal.AppendEncodeAt(nil, &r, wal.LSN(lsn)); !bytes.Equal(re, b[:n]) {
				t.Fatalf("re-encoding of %s at %d differs:\n got %x\nwant %x", fmtRecord(&r), lsn, re, b[:n])
			}
			if _, _, err := wal.DecodeAt(b, wal.LSN(lsn+1)); err == nil {
				t.Fatalf("%s decodes at %d and %d", fmtRecord(&r), lsn, lsn+1)
			}
		}
		check(data)
		check(frameAt(data, lsn))
	})
}
