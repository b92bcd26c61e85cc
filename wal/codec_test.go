package wal_test

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/bwkv/bwkv/wal"
)

// sameRecord compares records field by field; nil and empty slices are
// equal (the encoding does not tell them apart).
func sameRecord(a, b *wal.Record) bool {
	return a.Type == b.Type && a.TxID == b.TxID && a.Seq == b.Seq && a.PrevLSN == b.PrevLSN &&
		bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Value, b.Value) && bytes.Equal(a.OldValue, b.OldValue) &&
		a.HasOld == b.HasOld && a.Tombstone == b.Tombstone && a.UndoNext == b.UndoNext &&
		a.OldDeferred == b.OldDeferred && a.Of == b.Of
}

func fmtRecord(r *wal.Record) string {
	return fmt.Sprintf("%v tx=%d seq=%d prev=%d key=%q(%d) val=(%d) old=(%d) hasOld=%v deferred=%v tomb=%v undo=%d of=%d",
		r.Type, r.TxID, r.Seq, r.PrevLSN, trim(r.Key), len(r.Key), len(r.Value), len(r.OldValue), r.HasOld, r.OldDeferred, r.Tombstone, r.UndoNext, r.Of)
}

func trim(b []byte) []byte {
	if len(b) > 16 {
		return b[:16]
	}
	return b
}

// codecCases covers every type, empty and large fields and both flags.
// want is the decoded form when it differs from the input (fields the type
// does not carry are dropped; Update always has an old value).
var codecCases = []struct {
	name string
	in   wal.Record
	want *wal.Record
}{
	{name: "begin", in: wal.Record{Type: wal.Begin, TxID: 7}},
	{name: "commit", in: wal.Record{Type: wal.Commit, TxID: 7, Seq: 3, PrevLSN: 1234}},
	{name: "end", in: wal.Record{Type: wal.End, TxID: math.MaxUint64, Seq: math.MaxUint32, PrevLSN: math.MaxUint64}},
	{name: "put", in: wal.Record{Type: wal.Put, TxID: 1, Seq: 1, Key: []byte("k"), Value: []byte("v")}},
	{name: "put empty value", in: wal.Record{Type: wal.Put, TxID: 1, Key: []byte("k")}},
	{name: "put empty key", in: wal.Record{Type: wal.Put, TxID: 1, Value: []byte("v")}},
	{name: "put large", in: wal.Record{Type: wal.Put, TxID: 2, Key: bytes.Repeat([]byte("k"), 300), Value: bytes.Repeat([]byte{0xab}, 1<<20)}},
	{name: "put drops old value",
		in:   wal.Record{Type: wal.Put, TxID: 1, Key: []byte("k"), Value: []byte("v"), OldValue: []byte("x"), HasOld: true, Tombstone: true, UndoNext: 9},
		want: &wal.Record{Type: wal.Put, TxID: 1, Key: []byte("k"), Value: []byte("v")}},
	{name: "update", in: wal.Record{Type: wal.Update, TxID: 3, Seq: 2, PrevLSN: 99, Key: []byte("key"), Value: []byte("new"), OldValue: []byte("old"), HasOld: true}},
	{name: "update empty values", in: wal.Record{Type: wal.Update, TxID: 3, Key: []byte("key"), HasOld: true}},
	{name: "update large old", in: wal.Record{Type: wal.Update, TxID: 3, Key: []byte("key"), Value: []byte("n"), OldValue: bytes.Repeat([]byte{1}, 100_000), HasOld: true}},
	{name: "update implies old",
		in:   wal.Record{Type: wal.Update, TxID: 3, Key: []byte("key"), Value: []byte("new"), OldValue: []byte("old")},
		want: &wal.Record{Type: wal.Update, TxID: 3, Key: []byte("key"), Value: []byte("new"), OldValue: []byte("old"), HasOld: true}},
	{name: "delete", in: wal.Record{Type: wal.Delete, TxID: 4, Key: []byte("key"), OldValue: []byte("old"), HasOld: true}},
	{name: "delete empty old", in: wal.Record{Type: wal.Delete, TxID: 4, Key: []byte("key"), HasOld: true}},
	{name: "delete missing key", in: wal.Record{Type: wal.Delete, TxID: 4, Key: []byte("key")}},
	{name: "delete missing drops old",
		in:   wal.Record{Type: wal.Delete, TxID: 4, Key: []byte("key"), OldValue: []byte("x"), Value: []byte("y")},
		want: &wal.Record{Type: wal.Delete, TxID: 4, Key: []byte("key")}},
	{name: "clr value", in: wal.Record{Type: wal.CLR, TxID: 5, Seq: 4, PrevLSN: 500, Key: []byte("key"), Value: []byte("old"), UndoNext: 300}},
	{name: "clr empty value", in: wal.Record{Type: wal.CLR, TxID: 5, Key: []byte("key"), UndoNext: 0}},
	{name: "clr tombstone", in: wal.Record{Type: wal.CLR, TxID: 5, Key: []byte("key"), Tombstone: true, UndoNext: math.MaxUint64}},
	{name: "update deferred", in: wal.Record{Type: wal.Update, TxID: 3, Seq: 2, PrevLSN: 99, Key: []byte("key"), Value: []byte("new"), OldDeferred: true}},
	{name: "update deferred drops old",
		in:   wal.Record{Type: wal.Update, TxID: 3, Key: []byte("key"), Value: []byte("new"), OldValue: []byte("old"), HasOld: true, OldDeferred: true},
		want: &wal.Record{Type: wal.Update, TxID: 3, Key: []byte("key"), Value: []byte("new"), OldDeferred: true}},
	{name: "delete deferred", in: wal.Record{Type: wal.Delete, TxID: 4, Key: []byte("key"), OldDeferred: true}},
	{name: "delete deferred drops old",
		in:   wal.Record{Type: wal.Delete, TxID: 4, Key: []byte("key"), OldValue: []byte("old"), HasOld: true, OldDeferred: true},
		want: &wal.Record{Type: wal.Delete, TxID: 4, Key: []byte("key"), OldDeferred: true}},
	{name: "image", in: wal.Record{Type: wal.Image, TxID: 6, Key: []byte("key"), Value: []byte("old"), Of: 12345}},
	{name: "image empty old", in: wal.Record{Type: wal.Image, TxID: 6, Key: []byte("key"), Of: math.MaxUint64}},
	{name: "image drops chain and flags",
		in:   wal.Record{Type: wal.Image, TxID: 6, Key: []byte("k"), Value: []byte("o"), OldValue: []byte("x"), HasOld: true, OldDeferred: true, Tombstone: true, UndoNext: 3, Of: 7},
		want: &wal.Record{Type: wal.Image, TxID: 6, Key: []byte("k"), Value: []byte("o"), Of: 7}},
	{name: "clr tombstone drops value",
		in:   wal.Record{Type: wal.CLR, TxID: 5, Key: []byte("key"), Value: []byte("v"), Tombstone: true, UndoNext: 1},
		want: &wal.Record{Type: wal.CLR, TxID: 5, Key: []byte("key"), Tombstone: true, UndoNext: 1}},
}

func TestCodecRoundTrip(t *testing.T) {
	for _, tc := range codecCases {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if want == nil {
				want = &tc.in
			}
			prefix := []byte("prefix")
			buf := wal.AppendEncode(append([]byte(nil), prefix...), &tc.in)
			if !bytes.Equal(buf[:len(prefix)], prefix) {
				t.Fatalf("AppendEncode overwrote dst")
			}
			enc := buf[len(prefix):]
			if got := wal.EncodedSize(&tc.in); got != len(enc) {
				t.Fatalf("EncodedSize = %d, encoding has %d bytes", got, len(enc))
			}
			// Trailing bytes after the record are not part of it.
			got, n, err := wal.Decode(append(enc[:len(enc):len(enc)], 0xff, 0xee))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if n != len(enc) {
				t.Fatalf("Decode n = %d, want %d", n, len(enc))
			}
			if !sameRecord(&got, want) {
				t.Fatalf("Decode = %s\nwant     %s", fmtRecord(&got), fmtRecord(want))
			}
			// The encoding is canonical: re-encoding reproduces it.
			if re := wal.AppendEncode(nil, &got); !bytes.Equal(re, enc) {
				t.Fatalf("re-encoding differs")
			}
		})
	}
}

func TestDecodeRejectsDamage(t *testing.T) {
	for _, tc := range codecCases {
		if len(tc.in.Value) > 1000 || len(tc.in.OldValue) > 1000 {
			continue // the byte-by-byte sweeps below are quadratic
		}
		t.Run(tc.name, func(t *testing.T) {
			enc := wal.AppendEncode(nil, &tc.in)
			for i := range len(enc) {
				if _, _, err := wal.Decode(enc[:i]); err == nil {
					t.Fatalf("Decode of %d of %d bytes succeeded", i, len(enc))
				}
			}
			for bit := range len(enc) * 8 {
				b := bytes.Clone(enc)
				b[bit/8] ^= 1 << (bit % 8)
				if _, _, err := wal.Decode(b); err == nil {
					t.Fatalf("Decode with bit %d flipped succeeded", bit)
				}
			}
			if _, _, err := wal.Decode(make([]byte, len(enc))); err == nil {
				t.Fatalf("Decode of zeroes succeeded")
			}
		})
	}
}

func TestDecodeAliasesCapped(t *testing.T) {
	in := wal.Record{Type: wal.Update, Key: []byte("key"), Value: []byte("new"), OldValue: []byte("old"), HasOld: true}
	enc := wal.AppendEncode(nil, &in)
	before := bytes.Clone(enc)
	r, _, err := wal.Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(r.Key, "XXXXXXXX"...)
	_ = append(r.Value, "XXXXXXXX"...)
	if !bytes.Equal(enc, before) {
		t.Fatalf("appending to a decoded field overwrote the buffer")
	}
}

func TestTypeString(t *testing.T) {
	for typ, want := range map[wal.Type]string{wal.Begin: "begin", wal.CLR: "clr", wal.End: "end", 0: "type(0)", 99: "type(99)"} {
		if got := typ.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", uint8(typ), got, want)
		}
	}
}

// TestCodecBoundToLSN: a record encoded at an LSN (format 3) decodes at
// that LSN only, and never as an unbound record, nor the reverse.
func TestCodecBoundToLSN(t *testing.T) {
	rng := newRand(t)
	for i := range 200 {
		r := genRecord(rng, i)
		lsn := wal.LSN(rng.Uint64N(1 << 40))
		b := wal.AppendEncodeAt(nil, &r, lsn)
		got, n, err := wal.DecodeAt(b, lsn)
		if err != nil || n != len(b) || !sameRecord(&got, &r) {
			t.Fatalf("record %d at %d: decoded %s, %d, %v", i, lsn, fmtRecord(&got), n, err)
		}
		for _, other := range []wal.LSN{lsn + 1, lsn - 1, lsn + wal.DefaultSegmentBytes, lsn ^ 1<<33} {
			if _, _, err := wal.DecodeAt(b, other); err == nil {
				t.Fatalf("record %d written at %d decodes at %d", i, lsn, other)
			}
		}
		if _, _, err := wal.Decode(b); err == nil {
			t.Fatalf("record %d bound to %d decodes unbound", i, lsn)
		}
		if _, _, err := wal.DecodeAt(wal.AppendEncode(nil, &r), lsn); err == nil {
			t.Fatalf("unbound record %d decodes bound at %d", i, lsn)
		}
	}
}

// TestDecodeRejectsFlagMix: a well-framed record whose flags do not fit
// its type is refused, the deferred-old-value bit (2) included: an update
// has exactly one of bits 0 and 2, a delete at most one, and no other type
// carries bit 2 (an image carries no flag at all).
func TestDecodeRejectsFlagMix(t *testing.T) {
	body := func(typ wal.Type, flags byte, fields ...[]byte) []byte {
		b := make([]byte, 21, 64)
		b[0] = byte(typ)
		b = append(b, flags)
		for _, f := range fields {
			b = append(b, byte(len(f)))
			b = append(b, f...)
		}
		return b
	}
	k, v := []byte("k"), []byte("v")
	ok := []struct {
		name string
		b    []byte
	}{
		{"update deferred", body(wal.Update, 4, k, v)},
		{"delete deferred", body(wal.Delete, 4, k)},
		{"image", append(body(wal.Image, 0, k, v), 9)},
	}
	for _, c := range ok {
		r, _, err := wal.Decode(frame(c.b))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.name != "image" && !r.OldDeferred {
			t.Fatalf("%s: decoded without OldDeferred: %s", c.name, fmtRecord(&r))
		}
	}
	bad := []struct {
		name string
		b    []byte
	}{
		{"update with both", body(wal.Update, 5, k, v, v)},
		{"update with neither", body(wal.Update, 0, k, v)},
		{"delete with both", body(wal.Delete, 5, k, v)},
		{"put deferred", body(wal.Put, 4, k, v)},
		{"clr deferred", append(body(wal.CLR, 4, k, v), 1)},
		{"image with a flag", append(body(wal.Image, 1, k, v), 9)},
		{"image without its write", body(wal.Image, 0, k, v)},
		{"commit deferred", body(wal.Commit, 4)},
	}
	for _, c := range bad {
		if r, _, err := wal.Decode(frame(c.b)); err == nil {
			t.Fatalf("%s decoded: %s", c.name, fmtRecord(&r))
		}
	}
}
