package delta_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/internal/base"
)

// TestBlobFrames: a blob frame round-trips; a base and a delta whose large
// values are written as blob references decode to records holding the
// references, and Materialize brings back records equal to the originals,
// checking each value against its reference.
func TestBlobFrames(t *testing.T) {
	big := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, 300+i) }
	blobs := map[uint64][]byte{}
	ref := func(addr uint64, v []byte) delta.BlobRef {
		blobs[addr] = v
		return delta.BlobRef{Addr: addr, Len: uint32(len(v)), CRC: delta.ValueCRC(v)}
	}
	fetch := func(r delta.BlobRef) ([]byte, error) {
		v, ok := blobs[r.Addr]
		if !ok {
			return nil, errors.New("no such blob")
		}
		return v, nil
	}

	// A blob frame.
	bf := &delta.Frame{Addr: 1 << 63, PID: 9, Blob: big(0)}
	enc := delta.AppendFrame(nil, bf)
	if len(enc) != bf.Size() {
		t.Fatalf("blob frame: %d bytes, Size %d", len(enc), bf.Size())
	}
	got, err := delta.DecodeFrame(enc)
	if err != nil || got.Kind() != delta.KindBlob || !bytes.Equal(got.Blob, bf.Blob) || got.PID != 9 {
		t.Fatalf("blob frame decoded to %+v, %v", got, err)
	}
	// Compression never applies to blob frames.
	c, err := delta.NewCompressor(delta.CodecS2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if enc2 := c.AppendFrame(nil, &delta.Frame{Addr: 1 << 63, PID: 9, Blob: make([]byte, 4096)}); len(enc2) != 48+4096 {
		t.Fatalf("blob frame compressed to %d bytes", len(enc2))
	}

	// A base with two of its values as references.
	var bd delta.Builder
	for i := range 4 {
		v := []byte("small")
		if i%2 == 1 {
			v = big(i)
		}
		bd.Add(fmt.Appendf(nil, "k%d", i), v, uint64(10+i), 1, 0)
	}
	pageBase := bd.Finish(nil, nil, 0, 0)
	pageBase.Addr = 40
	f := &delta.Frame{Addr: 40, PID: 9, Base: pageBase, Refs: []delta.EntryRef{
		{Index: 1, Ref: ref(1<<63|1, big(1))}, {Index: 3, Ref: ref(1<<63|2, big(3))},
	}}
	enc = delta.AppendFrame(nil, f)
	if len(enc) != f.Size() {
		t.Fatalf("base frame: %d bytes, Size %d", len(enc), f.Size())
	}
	dec, err := delta.DecodeFrame(enc)
	if err != nil {
		t.Fatal(err)
	}
	if refs := dec.BlobRefs(); len(refs) != 2 || refs[0] != f.Refs[0] || refs[1] != f.Refs[1] {
		t.Fatalf("BlobRefs = %v, want %v", refs, f.Refs)
	}
	if dec.Base.FlagsAt(1)&delta.Blob == 0 {
		t.Fatal("referenced entry lacks the Blob flag")
	}
	if err := dec.Materialize(fetch); err != nil {
		t.Fatal(err)
	}
	for i := range pageBase.Len() {
		w, g := pageBase.At(i), dec.Base.At(i)
		if !bytes.Equal(w.Key, g.Key) || !bytes.Equal(w.Value, g.Value) || w.Flags != g.Flags || w.TxID != g.TxID {
			t.Fatalf("entry %d: got %+v, want %+v", i, g, w)
		}
	}
	// A materialized frame re-encodes to the same bytes.
	if re := delta.AppendFrame(nil, dec); !bytes.Equal(re, enc) {
		t.Fatal("materialized frame re-encodes differently")
	}

	// A delta.
	d := delta.New([]byte("key"), big(5), 77, 2, delta.CLR)
	df := &delta.Frame{Addr: 41, PID: 9, Link: 40, Delta: d, Refs: []delta.EntryRef{{Index: 0, Ref: ref(1<<63|3, big(5))}}}
	enc = delta.AppendFrame(nil, df)
	dec, err = delta.DecodeFrame(enc)
	if err != nil {
		t.Fatal(err)
	}
	if err := dec.Materialize(fetch); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(dec.Delta.Value, d.Value) || dec.Delta.Flags != delta.CLR || dec.Delta.Addr != 41 {
		t.Fatalf("delta materialized to %+v", dec.Delta)
	}

	// A blob that does not match its reference is corruption.
	dec, _ = delta.DecodeFrame(enc)
	blobs[1<<63|3] = append(bytes.Clone(big(5)[:len(big(5))-1]), 'x')
	var ce *base.CorruptionError
	if err := dec.Materialize(fetch); !errors.As(err, &ce) {
		t.Fatalf("Materialize of a damaged blob = %v, want *CorruptionError", err)
	}

	// Invalid references are refused by Check.
	bad := &delta.Frame{Addr: 41, PID: 9, Delta: d, Refs: []delta.EntryRef{{Index: 0, Ref: delta.BlobRef{Addr: 5, Len: 3}}}}
	if bad.Check() == nil {
		t.Fatal("Check accepted a reference whose length differs from the value")
	}
}
