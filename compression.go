package bwkv

import "github.com/bwkv/bwkv/delta"

// The options' side of frame compression (package delta holds the codecs
// and the per-frame format).

// compressionName is the codec's name in the manifest ("" for none, as
// databases created before compression existed stored it).
func compressionName(c Compression) string {
	if c == CompressionNone {
		return ""
	}
	return c.String()
}

// parseCompression reads a stored codec name (false: a codec this version
// does not know).
func parseCompression(name string) (Compression, bool) {
	for _, c := range []Compression{CompressionNone, CompressionS2, CompressionZstd} {
		if compressionName(c) == name {
			return c, true
		}
	}
	return 0, false
}

// codec is the frame codec of the options in effect.
func (db *DB) codec() delta.Codec {
	switch db.opts.Compression {
	case CompressionS2:
		return delta.CodecS2
	case CompressionZstd:
		return delta.CodecZstd
	}
	return delta.CodecNone
}

// newCompressor returns a frame compressor for one writer (the
// checkpointer, the GC): a Compressor is not safe for concurrent use.
func (db *DB) newCompressor() *delta.Compressor {
	c, err := delta.NewCompressor(db.codec(), db.opts.ZstdLevel)
	if err != nil {
		panic("bwkv: validated options make no frame compressor: " + err.Error())
	}
	return c
}
