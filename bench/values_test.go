package bench

import (
	"bytes"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestValues: every kind gives distinct values of exactly the size asked;
// text compresses well and random does not (what --value-kind is for); an
// unknown kind is refused.
func TestValues(t *testing.T) {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	for _, size := range []int{16, 1000, 256 << 10} {
		for _, kind := range []ValueKind{ValueRandom, ValueText} {
			v, err := NewValues(kind, size, 1)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(v.vals); n < 16 || n*size > maxValueSetBytes+16*size {
				t.Fatalf("%s/%d: %d values", kind, size, n)
			}
			if bytes.Equal(v.At(0), v.At(1)) {
				t.Fatalf("%s/%d: values repeat", kind, size)
			}
			var all []byte
			for i := range 16 {
				if len(v.At(uint64(i))) != size {
					t.Fatalf("%s/%d: value of %d bytes", kind, size, len(v.At(uint64(i))))
				}
				all = append(all, v.At(uint64(i))...)
			}
			ratio := float64(len(enc.EncodeAll(all, nil))) / float64(len(all))
			t.Logf("%s/%d: zstd ratio %.2f", kind, size, ratio)
			if size >= 1000 && (kind == ValueText) != (ratio < 0.5) {
				t.Fatalf("%s/%d: zstd ratio %.2f", kind, size, ratio)
			}
		}
	}
	if _, err := NewValues("zeros", 10, 1); err == nil {
		t.Fatal("unknown kind accepted")
	}
}
