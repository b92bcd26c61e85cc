package delta_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/bwkv/bwkv/delta"
)

func benchDelta() *delta.Frame {
	return deltaFrame(42, 41, delta.New([]byte("user:0000012345"), bytes.Repeat([]byte("v"), 100), 77, 3, 0))
}

func bench128() *delta.Frame {
	var bd delta.Builder
	for i := range 128 {
		bd.Add(fmt.Appendf(nil, "user:%010d", i), bytes.Repeat([]byte("v"), 100), uint64(i), 1, 0)
	}
	return baseFrame(42, 41, bd.Finish(nil, nil, 0, 0))
}

func benchEncode(b *testing.B, f *delta.Frame) {
	buf := delta.AppendFrame(nil, f)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = delta.AppendFrame(buf[:0], f)
	}
}

func benchDecode(b *testing.B, f *delta.Frame) {
	buf := delta.AppendFrame(nil, f)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := delta.DecodeFrame(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFrameEncodeDelta(b *testing.B)   { benchEncode(b, benchDelta()) }
func BenchmarkFrameDecodeDelta(b *testing.B)   { benchDecode(b, benchDelta()) }
func BenchmarkFrameEncodeBase128(b *testing.B) { benchEncode(b, bench128()) }
func BenchmarkFrameDecodeBase128(b *testing.B) { benchDecode(b, bench128()) }
