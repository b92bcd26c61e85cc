package delta_test

import (
	"bytes"
	"testing"

	"github.com/bwkv/bwkv/delta"
)

// FuzzDecodeFrame feeds arbitrary bytes to DecodeFrame twice: as they are
// (the CRC and framing checks) and re-framed with a valid length and CRC,
// so the fuzzer reaches the payload parsers and the decompressors. A plain
// frame that decodes must re-encode to the same bytes; a compressed one
// must re-encode (plain) to a frame that decodes to the same record; both
// must survive every read method. Seeds include compressed frames of each
// codec (testdata/fuzz holds more, run by go test).
func FuzzDecodeFrame(f *testing.F) {
	for _, tc := range frameCases() {
		if tc.f.Size() > 8192 {
			continue
		}
		f.Add(delta.AppendFrame(nil, tc.f))
	}
	for _, c := range codecs {
		cp, err := delta.NewCompressor(c, 0)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(cp.AppendFrame(nil, baseFrame(20, 0, textBase(20))))
		f.Add(cp.AppendFrame(nil, deltaFrame(21, 0, delta.New([]byte("k"), bytes.Repeat([]byte("abc"), 50), 1, 1, 0))))
	}
	f.Add([]byte{})
	f.Add(make([]byte, delta.FrameHeaderSize))
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(b []byte) {
			// The point read of a frame that passes the CRC never panics,
			// and on a frame that decodes it finds what the decoding holds.
			_, _, _ = delta.PeekFrame(b, []byte("k"), func(delta.Version) {})
			fr, err := delta.DecodeFrame(b)
			if err != nil {
				return
			}
			if fr.Blob == nil && (fr.Base == nil || fr.Base.Level == 0) {
				for _, k := range probeKeys(fr) {
					if d := peekDiff(b, fr, k); d != "" {
						t.Fatal(d)
					}
				}
			}
			if fr.Stored != len(b) {
				t.Fatalf("Stored %d of a %d-byte frame", fr.Stored, len(b))
			}
			if err := fr.Check(); err != nil {
				t.Fatalf("decoded frame fails Check: %v", err)
			}
			re := delta.AppendFrame(nil, fr)
			if h, _ := delta.ParseFrameHeader(b); h.Codec != delta.CodecNone {
				again, err := delta.DecodeFrame(re)
				if err != nil {
					t.Fatalf("plain re-encoding of a compressed frame: %v", err)
				}
				if d := equalFrames(fr, again); d != "" {
					t.Fatalf("plain re-encoding of a compressed frame: %s", d)
				}
			} else if !bytes.Equal(re, b) {
				t.Fatalf("re-encoding differs:\n got %x\nwant %x", re, b)
			}
			exercise(t, fr)
		}
		check(data)
		check(reframe(data))
	})
}
