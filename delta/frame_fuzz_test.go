package delta_test

import (
	"bytes"
	"testing"

	"github.com/bwkv/bwkv/delta"
)

// FuzzDecodeFrame feeds arbitrary bytes to DecodeFrame twice: as they are
// (the CRC and framing checks) and re-framed with a valid length and CRC,
// so the fuzzer reaches the payload parsers. Whatever decodes must
// re-encode to the same bytes and survive every read method.
func FuzzDecodeFrame(f *testing.F) {
	for _, tc := range frameCases() {
		if tc.f.Size() > 8192 {
			continue
		}
		f.Add(delta.AppendFrame(nil, tc.f))
	}
	f.Add([]byte{})
	f.Add(make([]byte, delta.FrameHeaderSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(b []byte) {
			fr, err := delta.DecodeFrame(b)
			if err != nil {
				return
			}
			if fr.Size() != len(b) {
				t.Fatalf("Size %d of a %d-byte frame", fr.Size(), len(b))
			}
			if err := fr.Check(); err != nil {
				t.Fatalf("decoded frame fails Check: %v", err)
			}
			if re := delta.AppendFrame(nil, fr); !bytes.Equal(re, b) {
				t.Fatalf("re-encoding differs:\n got %x\nwant %x", re, b)
			}
			exercise(t, fr)
		}
		check(data)
		check(reframe(data))
	})
}
