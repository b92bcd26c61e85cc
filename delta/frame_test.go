package delta_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/internal/base"
)

type frameCase struct {
	name string
	f    *delta.Frame
}

func deltaFrame(addr, link uint64, d *delta.Delta) *delta.Frame {
	return &delta.Frame{Addr: addr, PID: 7, LSN: 1000 + addr, Link: link, Delta: d}
}

func baseFrame(addr, link uint64, b *delta.Base) *delta.Frame {
	return &delta.Frame{Addr: addr, PID: 9, LSN: 2000 + addr, Link: link, Base: b}
}

// leafBase builds a leaf of n keys, key i carrying i%3+1 versions (the
// middle one a tombstone, the last of three a CLR).
func leafBase(n int, low, high []byte, sibling uint64) *delta.Base {
	var bd delta.Builder
	for i := range n {
		key := fmt.Appendf(nil, "key%06d", i)
		vers := i%3 + 1
		for v := range vers {
			var flags delta.Flags
			val := fmt.Appendf(nil, "value-%d-%d", i, v)
			switch {
			case v == 1:
				flags, val = delta.Tombstone, nil
			case v == 2:
				flags = delta.CLR
			}
			bd.Add(key, val, uint64(100+vers-v), uint32(v), flags)
		}
	}
	return bd.Finish(low, high, sibling, 0)
}

// innerBase builds a level-lvl page of n children, the first separator
// empty as the tree builds them.
func innerBase(n int, lvl uint8, low, high []byte, sibling uint64) *delta.Base {
	var bd delta.Builder
	for i := range n {
		var sep []byte
		if i > 0 {
			sep = fmt.Appendf(nil, "sep%04d", i)
		}
		bd.AddChild(sep, uint64(1000+i))
	}
	return bd.Finish(low, high, sibling, lvl)
}

func frameCases() []frameCase {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	var one delta.Builder
	one.Add([]byte("only"), []byte("v"), 3, 1, 0)
	return []frameCase{
		{"put", deltaFrame(1, 0, delta.New([]byte("k"), []byte("v"), 5, 1, 0))},
		{"put empty value", deltaFrame(2, 1, delta.New([]byte("key"), nil, 5, 2, 0))},
		{"put empty key", deltaFrame(3, 2, delta.New(nil, []byte("v"), 5, 3, 0))},
		{"tombstone", deltaFrame(4, 3, delta.New([]byte("key"), nil, 6, 1, delta.Tombstone))},
		{"clr", deltaFrame(5, 4, delta.New([]byte("key"), []byte("old"), 6, 2, delta.CLR))},
		{"clr of tombstone", deltaFrame(6, 5, delta.New([]byte("key"), nil, 6, 3, delta.CLR|delta.Tombstone))},
		{"big value", deltaFrame(7, 0, delta.New([]byte("big"), big, 8, 1, 0))},
		{"max identity", &delta.Frame{Addr: math.MaxUint64, PID: math.MaxUint64, LSN: math.MaxUint64,
			Link: math.MaxUint64 - 1, Delta: delta.New([]byte{0xff}, []byte{0}, math.MaxUint64, math.MaxUint32, 0)}},
		{"empty leaf", baseFrame(10, 0, new(delta.Builder).Finish(nil, nil, 0, 0))},
		{"empty leaf with fences", baseFrame(11, 10, new(delta.Builder).Finish([]byte("a"), []byte("b"), 4, 0))},
		{"empty high fence", baseFrame(12, 0, new(delta.Builder).Finish(nil, []byte{}, 0, 0))},
		{"one entry", baseFrame(13, 0, one.Finish([]byte("o"), []byte("p"), 5, 0))},
		{"many entries", baseFrame(14, 3, leafBase(300, []byte("key"), []byte("kez"), 77))},
		{"many entries no high", baseFrame(15, 0, leafBase(128, nil, nil, 0))},
		{"big value in base", baseFrame(16, 0, func() *delta.Base {
			var bd delta.Builder
			bd.Add([]byte("a"), big, 1, 1, 0)
			bd.Add([]byte("b"), nil, 1, 2, delta.Tombstone)
			return bd.Finish(nil, nil, 0, 0)
		}())},
		{"root inner", baseFrame(17, 0, innerBase(2, 1, nil, nil, 0))},
		{"inner with fences", baseFrame(18, 17, innerBase(64, 2, []byte("sep0010"), []byte("sep0099"), 12))},
		{"inner one child", baseFrame(19, 0, innerBase(1, 255, nil, nil, 0))},
	}
}

func TestFrameRoundTrip(t *testing.T) {
	for _, tc := range frameCases() {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.f.Check(); err != nil {
				t.Fatalf("Check: %v", err)
			}
			prefix := []byte("prefix")
			enc := delta.AppendFrame(bytes.Clone(prefix), tc.f)
			if !bytes.HasPrefix(enc, prefix) {
				t.Fatal("AppendFrame changed dst's prefix")
			}
			enc = enc[len(prefix):]
			if len(enc) != tc.f.Size() {
				t.Fatalf("encoded %d bytes, Size says %d", len(enc), tc.f.Size())
			}
			h, err := delta.ParseFrameHeader(enc)
			if err != nil {
				t.Fatalf("ParseFrameHeader: %v", err)
			}
			if h.Len != len(enc) || h.Addr != tc.f.Addr || h.PID != tc.f.PID || h.LSN != tc.f.LSN ||
				h.Link != tc.f.Link || h.Kind != tc.f.Kind() {
				t.Fatalf("header %+v does not match frame", h)
			}
			got, err := delta.DecodeFrame(enc)
			if err != nil {
				t.Fatalf("DecodeFrame: %v", err)
			}
			if diff := equalFrames(tc.f, got); diff != "" {
				t.Fatal(diff)
			}
			exercise(t, got)
			// Nothing may alias the input: scribble over it and compare again.
			for i := range enc {
				enc[i] ^= 0x5a
			}
			if diff := equalFrames(tc.f, got); diff != "" {
				t.Fatalf("after overwriting the input: %s", diff)
			}
			for i := range enc {
				enc[i] ^= 0x5a
			}
			if re := delta.AppendFrame(nil, got); !bytes.Equal(re, enc) {
				t.Fatal("re-encoding the decoded frame gives different bytes")
			}
		})
	}
}

// TestFrameDecodedBaseUsable checks that a decoded base answers the tree's
// questions like the original.
func TestFrameDecodedBaseUsable(t *testing.T) {
	for _, b := range []*delta.Base{
		leafBase(200, nil, nil, 0),
		innerBase(50, 1, []byte("sep0000"), nil, 0),
	} {
		f, err := delta.DecodeFrame(delta.AppendFrame(nil, baseFrame(1, 0, b)))
		if err != nil {
			t.Fatal(err)
		}
		d := f.Base
		for _, k := range []string{"", "a", "key000000", "key000100", "key000100x", "sep0003", "sep0049z", "zzz"} {
			key := []byte(k)
			if b.Search(key) != d.Search(key) || b.Covers(key) != d.Covers(key) {
				t.Fatalf("Search/Covers(%q) differ", k)
			}
			if b.Level > 0 {
				i, c := b.Child(key)
				if j, e := d.Child(key); i != j || c != e {
					t.Fatalf("Child(%q) = %d,%d, want %d,%d", k, j, e, i, c)
				}
			}
		}
	}
}

// TestFrameCorruptByte flips bits in every byte of every frame (sampled for
// the big ones): each change must be reported, never panic.
func TestFrameCorruptByte(t *testing.T) {
	for _, tc := range frameCases() {
		enc := delta.AppendFrame(nil, tc.f)
		step := 1
		if len(enc) > 4096 {
			step = 997
		}
		for i := 0; i < len(enc); i += step {
			for _, mask := range []byte{0x01, 0x80, 0xff} {
				enc[i] ^= mask
				f, err := delta.DecodeFrame(enc)
				enc[i] ^= mask
				if err == nil {
					t.Fatalf("%s: byte %d ^ %#x decoded as %+v", tc.name, i, mask, f)
				}
				var ce *base.CorruptionError
				if !errors.As(err, &ce) || !errors.Is(err, base.ErrCorruption) {
					t.Fatalf("%s: byte %d: error %v is not a *CorruptionError matching ErrCorruption", tc.name, i, err)
				}
			}
		}
		for _, n := range []int{0, 1, delta.FrameHeaderSize - 1, delta.FrameHeaderSize, len(enc) - 1} {
			if _, err := delta.DecodeFrame(enc[:n]); !errors.Is(err, base.ErrCorruption) {
				t.Fatalf("%s: truncated to %d: err = %v", tc.name, n, err)
			}
		}
		if _, err := delta.DecodeFrame(append(bytes.Clone(enc), 0)); !errors.Is(err, base.ErrCorruption) {
			t.Fatalf("%s: trailing byte: err = %v", tc.name, err)
		}
	}
}

// TestFrameInvalidFields builds frames whose CRC is valid but whose fields
// are not, and checks each gets its reason.
func TestFrameInvalidFields(t *testing.T) {
	le32 := func(b []byte, off int, v uint32) {
		b[off], b[off+1], b[off+2], b[off+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	le64 := func(b []byte, off int, v uint64) {
		le32(b, off, uint32(v))
		le32(b, off+4, uint32(v>>32))
	}
	put := delta.AppendFrame(nil, deltaFrame(5, 4, delta.New([]byte("key"), []byte("val"), 1, 1, 0)))
	leaf := delta.AppendFrame(nil, baseFrame(5, 0, leafBase(3, nil, []byte("z"), 0)))
	inner := delta.AppendFrame(nil, baseFrame(5, 0, innerBase(3, 1, nil, nil, 0)))
	const h = delta.FrameHeaderSize
	const slab = h + 25 + 1 // leaf: low empty, high "z"
	const e0 = 21 + 9 + 9   // first leaf entry: key000000, value-0-0
	tests := []struct {
		name   string
		src    []byte
		mutate func(b []byte) []byte
		reason string
	}{
		{"bad magic", put, func(b []byte) []byte { b[0] = 0; return b }, "magic"},
		{"unknown kind", put, func(b []byte) []byte { b[1] = 4; return b }, "kind"},
		{"unknown frame flag", put, func(b []byte) []byte { b[2] = 0x80; return b }, "flags"},
		{"compressed without a codec", put, func(b []byte) []byte { b[2] = 1; return b }, "unknown codec 0"},
		{"unknown codec", put, func(b []byte) []byte { b[2], b[3] = 1, 9; return b }, "unknown codec 9"},
		{"has-high on delta", put, func(b []byte) []byte { b[2] = 2; return b }, "has-high"},
		{"codec byte in a plain frame", put, func(b []byte) []byte { b[3] = 1; return b }, "plain frame"},
		{"address 0", put, func(b []byte) []byte { le64(b, 16, 0); le64(b, 40, 0); return b }, "address 0"},
		{"forward link", put, func(b []byte) []byte { le64(b, 40, 5); return b }, "links forward"},
		{"delta short payload", put, func(b []byte) []byte { return b[:h+20] }, "shorter"},
		{"delta key overruns", put, func(b []byte) []byte { le32(b, h, 4); return b }, "payload"},
		{"delta trailing", put, func(b []byte) []byte { return append(b, 0) }, "payload"},
		{"delta flags", put, func(b []byte) []byte { b[h+20] = 8; return b }, "version flags"},
		{"delta blob reference length", put, func(b []byte) []byte { b[h+20] = 4; return b }, "blob reference"},
		{"base short payload", leaf, func(b []byte) []byte { return b[:h+24] }, "shorter"},
		{"high without flag", leaf, func(b []byte) []byte { b[2] = 0; return b }, "has-high"},
		{"fences overrun", leaf, func(b []byte) []byte { le32(b, h+16, 1<<20); return b }, "overrun"},
		{"count too big", leaf, func(b []byte) []byte { le32(b, h+12, 1<<30); return b }, "cannot fit"},
		{"keys above count", leaf, func(b []byte) []byte { le32(b, h+8, 7); return b }, "keys in"},
		{"keys miscounted", leaf, func(b []byte) []byte { le32(b, h+8, 2); return b }, "counts 2 keys"},
		{"entry overruns", leaf, func(b []byte) []byte { le32(b, slab+4, 1<<20); return b }, "overrun"},
		{"entry flags", leaf, func(b []byte) []byte { b[slab+20] = 0x10; return b }, "version flags"},
		{"keys out of order", leaf, func(b []byte) []byte { b[slab+e0+21+8] = '9'; return b }, "sorts before"},
		{"slab trailing", leaf, func(b []byte) []byte { return append(b, 0) }, "after the last entry"},
		{"count short", leaf, func(b []byte) []byte { le32(b, h+12, 5); return b }, "after the last entry"},
		{"count long", leaf, func(b []byte) []byte { le32(b, h+12, 7); return b }, "overruns the slab"},
		{"inner child length", inner, func(b []byte) []byte { le32(b, h+25+4, 7); return b }, "not 8"},
		{"inner empty", inner, func(b []byte) []byte {
			le32(b, h+8, 0)
			le32(b, h+12, 0)
			return b[:h+25]
		}, "no children"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := reframe(tc.mutate(bytes.Clone(tc.src)))
			f, err := delta.DecodeFrame(b)
			if err == nil {
				t.Fatalf("decoded %+v", f)
			}
			var ce *base.CorruptionError
			if !errors.As(err, &ce) || !strings.Contains(ce.Reason, tc.reason) {
				t.Fatalf("err = %v, want a *CorruptionError mentioning %q", err, tc.reason)
			}
			if ce.Offset < 0 || ce.Offset > int64(len(b)) {
				t.Fatalf("offset %d outside the %d-byte frame", ce.Offset, len(b))
			}
		})
	}
}

func TestFrameCheck(t *testing.T) {
	d := delta.New([]byte("k"), nil, 1, 1, 0)
	b := leafBase(1, nil, nil, 0)
	tests := []struct {
		name string
		f    *delta.Frame
	}{
		{"no record", &delta.Frame{Addr: 1}},
		{"both records", &delta.Frame{Addr: 1, Delta: d, Base: b}},
		{"address 0", &delta.Frame{Delta: d}},
		{"link not below", &delta.Frame{Addr: 3, Link: 3, Delta: d}},
		{"unknown flags", &delta.Frame{Addr: 3, Delta: delta.New([]byte("k"), nil, 1, 1, 0x40)}},
		{"empty inner", &delta.Frame{Addr: 3, Base: new(delta.Builder).Finish(nil, nil, 0, 1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.f.Check(); err == nil {
				t.Fatal("Check accepted the frame")
			}
			defer func() {
				if recover() == nil {
					t.Fatal("AppendFrame did not panic")
				}
			}()
			delta.AppendFrame(nil, tc.f)
		})
	}
}

func TestFrameKindString(t *testing.T) {
	for k, want := range map[delta.FrameKind]string{delta.KindDelta: "delta", delta.KindBase: "base", 9: "FrameKind(9)"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q, want %q", uint8(k), k.String(), want)
		}
	}
}
