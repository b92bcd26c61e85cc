package delta

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Codec names the compression of a frame's payload. A compressed frame
// stores its codec in the header byte after the flags, so every frame
// describes itself: a file (or a directory) may mix codecs, and a reader
// needs no option to read any of them.
type Codec uint8

// The codecs.
const (
	// CodecNone stores payloads as they are.
	CodecNone Codec = 0
	// CodecS2 is klauspost/compress's S2 block format: fast, modest ratio.
	CodecS2 Codec = 1
	// CodecZstd is a Zstandard frame (no checksum: the frame CRC covers
	// the compressed bytes).
	CodecZstd Codec = 2
)

// String implements fmt.Stringer.
func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecS2:
		return "s2"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("Codec(%d)", uint8(c))
}

const (
	// minCompress: payloads shorter than this are never compressed (a
	// small delta gains nothing and pays the codec's fixed cost).
	minCompress = 64
	// maxRatio bounds payloadLen against the compressed bytes of a frame.
	// The writer never produces a frame over it (it stores such a payload
	// plain), so the reader can reject a payload length that would make
	// it allocate far more than the frame could legitimately hold.
	maxRatio = 1 << 10
	// maxScratch bounds the scratch buffers a Compressor or the read pool
	// keeps between uses, so one huge page does not pin its buffer.
	maxScratch = 4 << 20
)

// Compressor encodes frames with one codec. It holds scratch buffers, so
// it is not safe for concurrent use: each writer owns one. The zstd
// encoders it uses are shared per level (their EncodeAll is safe for
// concurrent use and pools its own state).
type Compressor struct {
	codec Codec
	zenc  *zstd.Encoder
	plain []byte // the uncompressed payload
	out   []byte // the compressed payload
}

// NewCompressor returns a Compressor for codec. zstdLevel (1-22, 0 for
// the default 3) applies to CodecZstd and is mapped to the nearest level
// the encoder implements. CodecNone returns a Compressor that writes
// plain frames.
func NewCompressor(codec Codec, zstdLevel int) (*Compressor, error) {
	c := &Compressor{codec: codec}
	switch codec {
	case CodecNone, CodecS2:
	case CodecZstd:
		if zstdLevel == 0 {
			zstdLevel = 3
		}
		if zstdLevel < 1 || zstdLevel > 22 {
			return nil, fmt.Errorf("delta: zstd level %d outside 1-22", zstdLevel)
		}
		enc, err := zstdEncoder(zstd.EncoderLevelFromZstd(zstdLevel))
		if err != nil {
			return nil, err
		}
		c.zenc = enc
	default:
		return nil, fmt.Errorf("delta: unknown codec %d", uint8(codec))
	}
	return c, nil
}

// Codec returns the compressor's codec.
func (c *Compressor) Codec() Codec { return c.codec }

// zstdEncoders holds one shared encoder per level: building one costs
// allocations and tables a per-file writer should not repeat.
var zstdEncoders sync.Map // zstd.EncoderLevel -> *zstd.Encoder

func zstdEncoder(level zstd.EncoderLevel) (*zstd.Encoder, error) {
	if e, ok := zstdEncoders.Load(level); ok {
		return e.(*zstd.Encoder), nil
	}
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(level),
		zstd.WithEncoderCRC(false),
		zstd.WithZeroFrames(true),
		zstd.WithLowerEncoderMem(true),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)))
	if err != nil {
		return nil, fmt.Errorf("delta: zstd encoder: %w", err)
	}
	e, _ := zstdEncoders.LoadOrStore(level, enc)
	return e.(*zstd.Encoder), nil
}

// zstdDecoder is shared by every read: DecodeAll is safe for concurrent
// use. The cap limit makes DecodeAll stop at the capacity of the buffer it
// is given (the frame's payload length), whatever the compressed bytes
// claim.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil,
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)),
		zstd.WithDecoderLowmem(true))
})

// compress compresses c.plain into c.out and reports whether storing the
// result pays: it saves at least 1/16 of the payload and stays within
// maxRatio.
func (c *Compressor) compress() bool {
	switch c.codec {
	case CodecS2:
		c.out = s2.Encode(c.out[:cap(c.out)], c.plain)
	case CodecZstd:
		c.out = c.zenc.EncodeAll(c.plain, c.out[:0])
	default:
		return false
	}
	n, m := len(c.plain), len(c.out)
	return m > 0 && m <= n-n/16 && n/maxRatio <= m
}

// trim drops scratch buffers a huge frame grew.
func (c *Compressor) trim() {
	if cap(c.plain) > maxScratch {
		c.plain = nil
	}
	if cap(c.out) > maxScratch {
		c.out = nil
	}
}

// readScratch pools the buffers compressed payloads are decompressed
// into: the payload decoders copy what they keep.
var readScratch = sync.Pool{New: func() any { return new([]byte) }}

// decompress decodes a compressed payload p of codec into a pooled buffer
// and returns the buffer and the n decoded bytes in it. The caller returns
// the buffer with putScratch once done with the bytes.
func decompress(codec Codec, p []byte, n int) (*[]byte, []byte, error) {
	bp := readScratch.Get().(*[]byte)
	if cap(*bp) < n {
		*bp = make([]byte, n)
	}
	dst := (*bp)[:n:n]
	var out []byte
	var err error
	switch codec {
	case CodecS2:
		var dl int
		if dl, err = s2.DecodedLen(p); err == nil && dl != n {
			err = fmt.Errorf("decodes to %d bytes, the header says %d", dl, n)
		}
		if err == nil {
			out, err = s2.Decode(dst, p)
		}
	case CodecZstd:
		var d *zstd.Decoder
		if d, err = zstdDecoder(); err == nil {
			out, err = d.DecodeAll(p, dst[:0])
		}
	default:
		err = fmt.Errorf("unknown codec %d", uint8(codec))
	}
	if err == nil && len(out) != n {
		err = fmt.Errorf("decodes to %d bytes, the header says %d", len(out), n)
	}
	if err == nil && n > 0 && &out[0] != &dst[0] {
		// A decoder that grew its own buffer despite the limits: keep
		// the result correct, whatever it cost.
		copy(dst, out)
	}
	if err != nil {
		putScratch(bp)
		return nil, nil, corrupt(FrameHeaderSize, "%s payload: %v", codec, err)
	}
	// The buffer keeps its whole capacity for the next, larger, page.
	return bp, dst, nil
}

func putScratch(bp *[]byte) {
	if cap(*bp) > maxScratch {
		*bp = nil
	}
	readScratch.Put(bp)
}
