package delta_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/internal/base"
)

// wantPeek is what a point read of key in f must find: the decoded
// frame's versions of key, in order.
func wantPeek(f *delta.Frame, key []byte) []delta.Version {
	var out []delta.Version
	if d := f.Delta; d != nil {
		if bytes.Equal(d.Key, key) {
			out = append(out, delta.Version{TxID: d.TxID, Seq: d.Seq, Flags: d.Flags, Value: d.Value})
		}
		return out
	}
	for i := range f.Base.Len() {
		if e := f.Base.At(i); bytes.Equal(e.Key, key) {
			out = append(out, delta.Version{TxID: e.TxID, Seq: e.Seq, Flags: e.Flags, Value: e.Value})
		}
	}
	return out
}

// peekDiff runs PeekFrame for key on the encoded frame b and compares
// with the decoded frame f ("" if equal).
func peekDiff(b []byte, f *delta.Frame, key []byte) string {
	var got []delta.Version
	_, fences, err := delta.PeekFrame(b, key, func(v delta.Version) {
		v.Value = bytes.Clone(v.Value) // valid only during the callback
		got = append(got, v)
	})
	if err != nil {
		return fmt.Sprintf("PeekFrame(%q): %v", key, err)
	}
	if fb := f.Base; fb != nil && (!bytes.Equal(fences.Low, fb.Low) || (fences.High == nil) != (fb.High == nil) ||
		!bytes.Equal(fences.High, fb.High) || fences.Sibling != fb.Sibling) {
		return fmt.Sprintf("PeekFrame fences [%q, %q) -> %d, want [%q, %q) -> %d", fences.Low, fences.High, fences.Sibling, fb.Low, fb.High, fb.Sibling)
	}
	want := wantPeek(f, key)
	if len(got) != len(want) {
		return fmt.Sprintf("PeekFrame(%q): %d versions, want %d", key, len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.TxID != w.TxID || g.Seq != w.Seq || g.Flags != w.Flags || !bytes.Equal(g.Value, w.Value) {
			return fmt.Sprintf("PeekFrame(%q) version %d: %d.%d/%d %q, want %d.%d/%d %q",
				key, i, g.TxID, g.Seq, g.Flags, g.Value, w.TxID, w.Seq, w.Flags, w.Value)
		}
	}
	return ""
}

// probeKeys are the frame's keys and keys around each of them.
func probeKeys(f *delta.Frame) [][]byte {
	keys := [][]byte{nil, {}, []byte("zzzz")}
	add := func(k []byte) {
		keys = append(keys, k, append(bytes.Clone(k), 0), k[:len(k)/2])
	}
	if f.Delta != nil {
		add(f.Delta.Key)
		return keys
	}
	for i := range f.Base.Len() {
		add(f.Base.KeyAt(i))
	}
	return keys
}

// TestPeekFrame: for every leaf frame case, plain and compressed with
// each codec, the point read of any key (present, absent, between two)
// finds exactly the versions the decoded frame holds for it, in order.
func TestPeekFrame(t *testing.T) {
	encoders := map[string]func(*delta.Frame) []byte{"plain": func(f *delta.Frame) []byte { return delta.AppendFrame(nil, f) }}
	for _, c := range codecs {
		cp := compressor(t, c)
		encoders[c.String()] = func(f *delta.Frame) []byte { return cp.AppendFrame(nil, f) }
	}
	cases := frameCases()
	cases = append(cases, frameCase{"text", baseFrame(30, 0, textBase(50))})
	n := 0
	for _, tc := range cases {
		if tc.f.Base != nil && tc.f.Base.Level > 0 {
			continue
		}
		for name, enc := range encoders {
			b := enc(tc.f)
			for _, k := range probeKeys(tc.f) {
				if d := peekDiff(b, tc.f, k); d != "" {
					t.Fatalf("%s, %s: %s", tc.name, name, d)
				}
				n++
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d probes", n)
	}
}

// TestPeekFrameRejects: an inner base, a blob frame and damage behind a
// recomputed CRC are corruption errors, never a panic or a wrong answer.
func TestPeekFrameRejects(t *testing.T) {
	var bd delta.Builder
	bd.AddChild(nil, 2)
	bd.AddChild([]byte("m"), 3)
	inner := delta.AppendFrame(nil, baseFrame(40, 0, bd.Finish(nil, nil, 0, 1)))
	if _, _, err := delta.PeekFrame(inner, []byte("m"), func(delta.Version) {}); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("inner base: %v, want a corruption error", err)
	}
	leaf := delta.AppendFrame(nil, baseFrame(41, 0, textBase(20)))
	key := []byte("user:00000019")
	// Every single-byte change in the payload, CRC recomputed: an error or
	// (a value or version byte changed) an answer; never a panic.
	for i := delta.FrameHeaderSize; i < len(leaf); i++ {
		bad := bytes.Clone(leaf)
		bad[i] ^= 0xff
		bad = reframe(bad)
		_, _, _ = delta.PeekFrame(bad, key, func(delta.Version) {})
	}
	// A length that runs past the payload.
	bad := bytes.Clone(leaf)
	bad[delta.FrameHeaderSize+25+3] = 0x7f // entry 0's key length, high byte
	if _, _, err := delta.PeekFrame(reframe(bad), key, func(delta.Version) {}); !errors.Is(err, base.ErrCorruption) {
		t.Fatalf("overrunning key length: %v, want a corruption error", err)
	}
}

// TestPeekFrameRefs: with a ref callback, a peek reports every blob
// reference of the frame, in entry order, whichever key it looks for (a
// key before, at, between or after the referencing entries), as DecodeFrame
// and BlobRefs find them, compressed or not; and it still visits exactly
// key's versions.
func TestPeekFrameRefs(t *testing.T) {
	ref := func(addr uint64, n int) delta.BlobRef {
		return delta.BlobRef{Addr: addr, Len: uint32(n), CRC: uint32(addr * 7)}
	}
	var bd delta.Builder
	for i := range 12 {
		vers := 1
		if i == 5 {
			vers = 3 // k05 has three versions
		}
		for v := range vers {
			bd.Add(fmt.Appendf(nil, "k%02d", i), bytes.Repeat([]byte{'a' + byte(i)}, 100), uint64(90-v), uint32(v), 0)
		}
	}
	b := bd.Finish([]byte("k"), []byte("l"), 3, 0)
	var refs []delta.EntryRef
	for i := range b.Len() {
		if i%3 != 1 {
			refs = append(refs, delta.EntryRef{Index: i, Ref: ref(1<<63|uint64(i), 100)})
		}
	}
	frames := map[string]*delta.Frame{
		"base":          {Addr: 50, PID: 9, Base: b, Refs: refs},
		"base, no refs": {Addr: 51, PID: 9, Base: b},
		"delta":         {Addr: 52, PID: 9, Link: 50, Delta: delta.New([]byte("k05"), bytes.Repeat([]byte{'x'}, 7000), 99, 1, 0), Refs: []delta.EntryRef{{Index: 0, Ref: ref(1<<63|99, 7000)}}},
		"delta, no ref": {Addr: 53, PID: 9, Link: 50, Delta: delta.New([]byte("k05"), []byte("v"), 99, 1, 0)},
	}
	encoders := map[string]func(*delta.Frame) []byte{"plain": func(f *delta.Frame) []byte { return delta.AppendFrame(nil, f) }}
	for _, c := range codecs {
		cp := compressor(t, c)
		encoders[c.String()] = func(f *delta.Frame) []byte { return cp.AppendFrame(nil, f) }
	}
	type seen struct {
		key  string
		txid uint64
		seq  uint32
		ref  delta.BlobRef
	}
	probes := [][]byte{[]byte("a"), []byte("k00"), []byte("k05"), []byte("k055"), []byte("k11"), []byte("z")}
	for fname, f := range frames {
		for ename, enc := range encoders {
			raw := enc(f)
			dec, err := delta.DecodeFrame(raw)
			if err != nil {
				t.Fatal(err)
			}
			var want []seen
			for _, r := range dec.BlobRefs() {
				e := dec.EntryAt(r.Index)
				want = append(want, seen{string(e.Key), e.TxID, e.Seq, r.Ref})
			}
			if fname == "base" && len(want) != len(refs) || fname == "delta" && len(want) != 1 {
				t.Fatalf("%s: the decoded frame has %d references", fname, len(want))
			}
			for _, key := range probes {
				var got []seen
				var vers []delta.Version
				_, _, err := delta.PeekFrameRefs(raw, key, func(v delta.Version) {
					v.Value = bytes.Clone(v.Value)
					vers = append(vers, v)
				}, func(k []byte, txid uint64, seq uint32, r delta.BlobRef) {
					got = append(got, seen{string(k), txid, seq, r})
				})
				if err != nil {
					t.Fatalf("%s, %s, %q: %v", fname, ename, key, err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s, %s, %q: references %v, want %v", fname, ename, key, got, want)
				}
				if w := wantPeek(dec, key); !slices.EqualFunc(vers, w, func(a, b delta.Version) bool {
					return a.TxID == b.TxID && a.Seq == b.Seq && a.Flags == b.Flags && bytes.Equal(a.Value, b.Value)
				}) {
					t.Fatalf("%s, %s, %q: versions %v, want %v", fname, ename, key, vers, w)
				}
			}
		}
	}
}
