package delta_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/bwkv/bwkv/delta"
)

// reframe returns a copy of b with the length, payload length and CRC
// fields recomputed from the format description (not with the package's
// code), so a test or the fuzzer can reach the checks behind the CRC. b
// shorter than a header is returned unchanged.
func reframe(b []byte) []byte {
	out := bytes.Clone(b)
	if len(out) < delta.FrameHeaderSize {
		return out
	}
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)))
	binary.LittleEndian.PutUint32(out[12:], uint32(len(out)-delta.FrameHeaderSize))
	tab := crc32.MakeTable(crc32.Castagnoli)
	c := crc32.Update(crc32.Update(0, tab, out[:8]), tab, out[12:])
	binary.LittleEndian.PutUint32(out[8:], c)
	return out
}

// equalFrames reports how got differs from want ("" if equal): identity,
// and the record compared field by field through its public methods.
func equalFrames(want, got *delta.Frame) string {
	if want.Addr != got.Addr || want.PID != got.PID || want.LSN != got.LSN || want.Link != got.Link {
		return fmt.Sprintf("identity %d/%d/%d/%d, want %d/%d/%d/%d",
			got.Addr, got.PID, got.LSN, got.Link, want.Addr, want.PID, want.LSN, want.Link)
	}
	if (want.Delta == nil) != (got.Delta == nil) || (want.Base == nil) != (got.Base == nil) {
		return "record kind differs"
	}
	if w, g := want.Delta, got.Delta; w != nil {
		switch {
		case !bytes.Equal(w.Key, g.Key) || !bytes.Equal(w.Value, g.Value):
			return fmt.Sprintf("delta %q=%q, want %q=%q", g.Key, g.Value, w.Key, w.Value)
		case w.TxID != g.TxID || w.Seq != g.Seq || w.Flags != g.Flags:
			return fmt.Sprintf("delta version %d.%d/%d, want %d.%d/%d", g.TxID, g.Seq, g.Flags, w.TxID, w.Seq, w.Flags)
		case g.Addr != got.Addr || g.LSN != got.LSN:
			return fmt.Sprintf("delta Addr/LSN %d/%d, want the frame's %d/%d", g.Addr, g.LSN, got.Addr, got.LSN)
		}
		return ""
	}
	return equalBases(want.Base, got.Base)
}

func equalBases(w, g *delta.Base) string {
	switch {
	case !bytes.Equal(w.Low, g.Low) || (w.High == nil) != (g.High == nil) || !bytes.Equal(w.High, g.High):
		return fmt.Sprintf("fences [%q, %q), want [%q, %q)", g.Low, g.High, w.Low, w.High)
	case w.Sibling != g.Sibling || w.Level != g.Level || w.Keys != g.Keys || w.Len() != g.Len():
		return fmt.Sprintf("sibling/level/keys/len %d/%d/%d/%d, want %d/%d/%d/%d",
			g.Sibling, g.Level, g.Keys, g.Len(), w.Sibling, w.Level, w.Keys, w.Len())
	}
	for i := range w.Len() {
		if we, ge := w.At(i), g.At(i); !bytes.Equal(we.Key, ge.Key) || !bytes.Equal(we.Value, ge.Value) ||
			we.TxID != ge.TxID || we.Seq != ge.Seq || we.Flags != ge.Flags {
			return fmt.Sprintf("entry %d = %+v, want %+v", i, ge, we)
		}
	}
	return ""
}

// exercise calls every read method of a decoded record, as the tree would,
// so that a decoder accepting a base the methods cannot handle shows up as
// a panic in the fuzzer.
func exercise(t testing.TB, f *delta.Frame) {
	t.Helper()
	if d := f.Delta; d != nil {
		_ = d.Size()
		return
	}
	b := f.Base
	_ = b.Bytes()
	for i := range b.Len() {
		e := b.At(i)
		if !bytes.Equal(e.Key, b.KeyAt(i)) {
			t.Fatalf("At(%d).Key %q != KeyAt %q", i, e.Key, b.KeyAt(i))
		}
		if j := b.Search(e.Key); j > i {
			t.Fatalf("Search(KeyAt(%d)) = %d", i, j)
		}
		b.Covers(e.Key)
		if b.Level > 0 {
			b.Child(e.Key)
			b.ChildBelow(e.Key)
			b.ChildAt(i)
		}
	}
	b.Search(nil)
	b.Search([]byte{0xff, 0xff})
	b.Covers(nil)
	if b.Level > 0 {
		b.Child(nil)
		b.Child([]byte{0xff})
		b.ChildBelow(nil)
	}
}
