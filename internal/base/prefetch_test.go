package base

import (
	"testing"
	"unsafe"
)

func TestPrefetchSpan(t *testing.T) {
	for _, c := range []struct {
		p    uintptr
		n    int
		want int
	}{
		{0x1000, 1, 1},
		{0x1000, 64, 1},
		{0x1000, 65, 2},
		{0x103f, 1, 1},  // the last byte of a line
		{0x103f, 2, 2},  // straddles two lines
		{0x1010, 64, 2}, // unaligned: one line's worth over two lines
		{0x1000, 32 * 64, maxPrefetchLines},
		{0x1000, 1 << 20, maxPrefetchLines}, // capped
	} {
		if got := prefetchSpan(c.p, c.n); got != c.want {
			t.Errorf("prefetchSpan(%#x, %d) = %d, want %d", c.p, c.n, got, c.want)
		}
	}
}

// TestPrefetchLeavesMemory runs the hint over nil, empty, unaligned and
// over-long ranges: it must return and change no byte.
func TestPrefetchLeavesMemory(t *testing.T) {
	buf := make([]byte, 4096)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	Prefetch(nil, 100)
	Prefetch(unsafe.Pointer(&buf[0]), 0)
	Prefetch(unsafe.Pointer(&buf[0]), -1)
	Prefetch(unsafe.Pointer(&buf[3]), 100)
	Prefetch(unsafe.Pointer(&buf[0]), len(buf))
	prefetchLines(unsafe.Pointer(&buf[0]), 0)
	for i := range buf {
		if buf[i] != byte(i*7) {
			t.Fatalf("byte %d changed", i)
		}
	}
}
