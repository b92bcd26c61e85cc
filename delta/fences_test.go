package delta

import (
	"bytes"
	"strings"
	"testing"
)

// TestBaseFencesInline: fences and the search prefix are kept inside the
// Base when they fit and on the heap when they do not; either way a base
// built and one decoded from its frame hold the same fences, answer the
// same searches, and share no bytes with what they were built from.
func TestBaseFencesInline(t *testing.T) {
	for _, c := range []struct {
		name      string
		low, high []byte
		keyLen    int
	}{
		{"short", []byte("k010"), []byte("k020"), 4},
		{"no-high", []byte(""), nil, 8},
		{"empty-high", []byte("a"), []byte{}, 8},
		{"long", []byte(strings.Repeat("L", 70) + "1"), []byte(strings.Repeat("L", 70) + "9"), 90},
		{"huge-prefix", []byte(strings.Repeat("p", 200)), nil, 230},
	} {
		t.Run(c.name, func(t *testing.T) {
			low, high := bytes.Clone(c.low), bytes.Clone(c.high)
			var bd Builder
			var keys [][]byte
			for i := range 10 {
				k := append(bytes.Clone(low), bytes.Repeat([]byte{'x'}, max(0, c.keyLen-len(low)-1))...)
				k = append(k, byte('0'+i))
				keys = append(keys, k)
				bd.Add(k, []byte{byte(i)}, uint64(i+1), 0, 0)
			}
			b := bd.Finish(low, high, 7, 0)
			b.Addr = 9
			for i := range low {
				low[i] = '!' // the base keeps its own copy
			}
			f, err := DecodeFrame(AppendFrame(nil, &Frame{Addr: 9, PID: 3, Base: b}))
			if err != nil {
				t.Fatal(err)
			}
			for _, got := range []*Base{b, f.Base} {
				if !bytes.Equal(got.Low, c.low) || !bytes.Equal(got.High, c.high) || (got.High == nil) != (c.high == nil) {
					t.Fatalf("fences %q %q, want %q %q", got.Low, got.High, c.low, c.high)
				}
				for i, k := range keys {
					if got.Search(k) != i || !got.KeyEqual(i, k) {
						t.Fatalf("Search(%q) = %d, want %d", k, got.Search(k), i)
					}
				}
				if n := got.Bytes(); n < len(c.low)+len(c.high) {
					t.Fatalf("Bytes %d below the fences' %d", n, len(c.low)+len(c.high))
				}
			}
		})
	}
}
