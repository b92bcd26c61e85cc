package delta_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/internal/base"
)

var codecs = []delta.Codec{delta.CodecS2, delta.CodecZstd}

func compressor(t testing.TB, c delta.Codec) *delta.Compressor {
	t.Helper()
	cp, err := delta.NewCompressor(c, 0)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// textBase is a leaf of JSON-like records: compressible as real data is.
func textBase(n int) *delta.Base {
	var bd delta.Builder
	for i := range n {
		bd.Add(fmt.Appendf(nil, "user:%08d", i),
			fmt.Appendf(nil, `{"id":%d,"name":"user %d","email":"user%d@example.com","active":true,"tags":["a","b"]}`, i, i, i),
			uint64(i+1), 1, 0)
	}
	return bd.Finish(nil, nil, 0, 0)
}

// TestCompressedRoundTrip encodes every frame case with each codec: what
// decodes equals what was encoded, Stored is the encoded length, and a
// compressible page is stored compressed (smaller than its plain form).
func TestCompressedRoundTrip(t *testing.T) {
	cases := append(frameCases(), frameCase{"text leaf", baseFrame(20, 0, textBase(200))},
		frameCase{"text delta", deltaFrame(21, 0, delta.New([]byte("k"), bytes.Repeat([]byte(`{"a":"bbbb"}`), 40), 1, 1, 0))})
	for _, c := range codecs {
		cp := compressor(t, c)
		for _, tc := range cases {
			t.Run(c.String()+"/"+tc.name, func(t *testing.T) {
				b := cp.AppendFrame([]byte("prefix"), tc.f)[len("prefix"):]
				got, err := delta.DecodeFrame(b)
				if err != nil {
					t.Fatal(err)
				}
				if d := equalFrames(tc.f, got); d != "" {
					t.Fatal(d)
				}
				if got.Stored != len(b) {
					t.Fatalf("Stored %d, encoded %d bytes", got.Stored, len(b))
				}
				h, err := delta.ParseFrameHeader(b)
				if err != nil {
					t.Fatal(err)
				}
				if h.PayloadLen != tc.f.Size()-delta.FrameHeaderSize {
					t.Fatalf("PayloadLen %d, plain payload %d", h.PayloadLen, tc.f.Size()-delta.FrameHeaderSize)
				}
				if h.Codec == delta.CodecNone && len(b) != tc.f.Size() {
					t.Fatalf("plain frame of %d bytes, Size %d", len(b), tc.f.Size())
				}
				if h.Codec != delta.CodecNone && (h.Codec != c || len(b) >= tc.f.Size()) {
					t.Fatalf("codec %v, %d bytes for a %d-byte plain frame", h.Codec, len(b), tc.f.Size())
				}
				if tc.name == "text leaf" || tc.name == "text delta" || tc.name == "many entries" {
					if h.Codec != c {
						t.Fatalf("compressible frame stored with codec %v, want %v", h.Codec, c)
					}
				}
				if tc.f.Size()-delta.FrameHeaderSize < 64 && h.Codec != delta.CodecNone {
					t.Fatalf("a %d-byte payload was compressed", tc.f.Size()-delta.FrameHeaderSize)
				}
			})
		}
	}
}

// TestCompressedIncompressible: random bytes do not shrink, so the frame
// is stored plain (and re-encodes to the same bytes).
func TestCompressedIncompressible(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	val := make([]byte, 4096)
	for i := range val {
		val[i] = byte(r.Uint32())
	}
	f := deltaFrame(1, 0, delta.New([]byte("k"), val, 1, 1, 0))
	for _, c := range codecs {
		b := compressor(t, c).AppendFrame(nil, f)
		if !bytes.Equal(b, delta.AppendFrame(nil, f)) {
			t.Fatalf("%v: random value not stored plain", c)
		}
	}
}

// TestCompressedCorruption flips every byte of a compressed frame, alone
// and with the CRC recomputed (so the codec's decoder sees the damage):
// each is a *CorruptionError or, past the CRC, a frame that decodes
// validly; never a panic.
func TestCompressedCorruption(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			for _, f := range []*delta.Frame{baseFrame(20, 0, textBase(40)),
				deltaFrame(21, 0, delta.New([]byte("k"), bytes.Repeat([]byte(`{"a":"b"}`), 30), 1, 1, 0))} {
				good := compressor(t, c).AppendFrame(nil, f)
				if h, _ := delta.ParseFrameHeader(good); h.Codec != c {
					t.Fatalf("frame not compressed")
				}
				decodedDamage := 0
				for i := range good {
					for _, bit := range []byte{0x01, 0x80} {
						bad := bytes.Clone(good)
						bad[i] ^= bit
						_, err := delta.DecodeFrame(bad)
						var ce *base.CorruptionError
						if !errors.As(err, &ce) || !errors.Is(err, base.ErrCorruption) {
							t.Fatalf("byte %d ^ %#x: err %v, want a CorruptionError", i, bit, err)
						}
						if i < delta.FrameHeaderSize {
							continue
						}
						// Past the CRC: the codec's decoder sees the damage.
						fr, err := delta.DecodeFrame(crcOnly(bad))
						switch {
						case err == nil:
							if fr.Check() != nil {
								t.Fatalf("byte %d: damaged frame decodes to an invalid record", i)
							}
						case errors.As(err, &ce):
							decodedDamage++
						default:
							t.Fatalf("byte %d: %v is not a CorruptionError", i, err)
						}
					}
				}
				if decodedDamage == 0 {
					t.Fatal("no damaged payload was rejected past the CRC")
				}
			}
		})
	}
}

// crcOnly returns a copy of b with only its CRC recomputed (from the
// format description), keeping the length fields: a compressed frame's
// payload length is not the stored one.
func crcOnly(b []byte) []byte {
	out := bytes.Clone(b)
	tab := crc32.MakeTable(crc32.Castagnoli)
	binary.LittleEndian.PutUint32(out[8:], crc32.Update(crc32.Update(0, tab, out[:8]), tab, out[12:]))
	return out
}
