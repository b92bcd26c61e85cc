package delta

import "encoding/binary"

// FrameHeader is the identity and size of an encoded frame, read from its
// fixed header without decoding the payload.
type FrameHeader struct {
	Kind FrameKind
	// Len is the length of the whole frame, header included.
	Len int
	// CRC is the stored checksum (ParseFrameHeader does not verify it).
	CRC uint32
	// Codec is the payload's compression (CodecNone: a plain frame), and
	// PayloadLen the payload's uncompressed length.
	Codec      Codec
	PayloadLen int

	Addr, PID, LSN, Link uint64
}

// ParseFrameHeader validates the fixed header at the start of b and returns
// it. It reads only the first FrameHeaderSize bytes: it verifies neither the
// CRC nor the payload (DecodeFrame does both), so it suits a scan that
// wants identities and lengths. Errors are *base.CorruptionError (base.ErrCorruption).
func ParseFrameHeader(b []byte) (FrameHeader, error) {
	if len(b) < FrameHeaderSize {
		return FrameHeader{}, corrupt(len(b), "%d bytes, shorter than the %d-byte frame header", len(b), FrameHeaderSize)
	}
	if b[fhMagic] != frameMagic {
		return FrameHeader{}, corrupt(fhMagic, "bad magic %#02x", b[fhMagic])
	}
	h := FrameHeader{
		Kind: FrameKind(b[fhKind]),
		Len:  int(binary.LittleEndian.Uint32(b[fhLength:])),
		CRC:  binary.LittleEndian.Uint32(b[fhCRC:]),
		Addr: binary.LittleEndian.Uint64(b[fhAddr:]),
		PID:  binary.LittleEndian.Uint64(b[fhPID:]),
		LSN:  binary.LittleEndian.Uint64(b[fhLSN:]),
		Link: binary.LittleEndian.Uint64(b[fhLink:]),

		PayloadLen: int(binary.LittleEndian.Uint32(b[fhPayloadLen:])),
	}
	flags := b[fhFlags]
	compressed := flags&frameCompressed != 0
	if compressed {
		h.Codec = Codec(b[fhCodec])
	}
	switch {
	case h.Kind != KindDelta && h.Kind != KindBase && h.Kind != KindBlob:
		return FrameHeader{}, corrupt(fhKind, "unknown frame kind %d", b[fhKind])
	case flags&^frameFlagsKnown != 0:
		return FrameHeader{}, corrupt(fhFlags, "unknown frame flags %#02x", flags)
	case flags&frameHasHigh != 0 && h.Kind != KindBase:
		return FrameHeader{}, corrupt(fhFlags, "has-high flag on a %s frame", h.Kind)
	case !compressed && b[fhCodec] != 0:
		return FrameHeader{}, corrupt(fhCodec, "codec byte is %#02x in a plain frame", b[fhCodec])
	case compressed && h.Codec != CodecS2 && h.Codec != CodecZstd:
		return FrameHeader{}, corrupt(fhCodec, "unknown codec %d", b[fhCodec])
	case h.Len < FrameHeaderSize:
		return FrameHeader{}, corrupt(fhLength, "frame length %d is shorter than the header", h.Len)
	case !compressed && h.PayloadLen != h.Len-FrameHeaderSize:
		return FrameHeader{}, corrupt(fhPayloadLen, "payload length %d in a frame of %d bytes", h.PayloadLen, h.Len)
	case compressed && (h.Len == FrameHeaderSize || h.PayloadLen/maxRatio > h.Len-FrameHeaderSize):
		return FrameHeader{}, corrupt(fhPayloadLen, "payload length %d compressed into %d bytes", h.PayloadLen, h.Len-FrameHeaderSize)
	case h.Addr == 0:
		return FrameHeader{}, corrupt(fhAddr, "address 0")
	case h.Link >= h.Addr:
		return FrameHeader{}, corrupt(fhLink, "frame %d links forward to %d", h.Addr, h.Link)
	case h.Kind == KindBlob && (h.Link != 0 || compressed):
		return FrameHeader{}, corrupt(fhLink, "blob frame %d with link %d, compressed %v", h.Addr, h.Link, compressed)
	}
	return h, nil
}

// DecodeFrame decodes the frame that b holds exactly (no trailing bytes).
// It verifies the CRC, decompresses a compressed payload (into a pooled
// buffer: the only allocation is the returned record), then every field: lengths, flags, and for a base the
// entry layout, key order (non-decreasing), the distinct-key count and the
// 8-byte child values of an inner page, so the returned *Base is safe for
// every Base method. Bad bytes return a *base.CorruptionError;
// DecodeFrame never panics on any input.
//
// The returned records own their memory: nothing aliases b, which the
// caller may reuse at once. DecodeFrame is safe for concurrent use.
func DecodeFrame(b []byte) (*Frame, error) {
	if len(b) < FrameHeaderSize {
		return nil, corrupt(len(b), "%d bytes, shorter than the %d-byte frame header", len(b), FrameHeaderSize)
	}
	if b[fhMagic] != frameMagic {
		return nil, corrupt(fhMagic, "bad magic %#02x", b[fhMagic])
	}
	if n := binary.LittleEndian.Uint32(b[fhLength:]); uint64(n) != uint64(len(b)) {
		return nil, corrupt(fhLength, "length field says %d bytes, the frame has %d", n, len(b))
	}
	// The CRC first, so that a damaged byte anywhere reads as what it most
	// likely is rather than as whichever field check it happens to fail.
	if stored, got := binary.LittleEndian.Uint32(b[fhCRC:]), frameChecksum(b); stored != got {
		return nil, corrupt(fhCRC, "checksum mismatch: stored %08x, computed %08x", stored, got)
	}
	h, err := ParseFrameHeader(b)
	if err != nil {
		return nil, err
	}
	p := b[FrameHeaderSize:]
	if h.Codec != CodecNone {
		bp, plain, err := decompress(h.Codec, p, h.PayloadLen)
		if err != nil {
			return nil, err
		}
		defer putScratch(bp)
		p = plain
	}
	var fr *Frame
	switch h.Kind {
	case KindDelta:
		fr, err = decodeDeltaFrame(h, p)
	case KindBlob:
		fr = decodeBlobFrame(h, p)
	default:
		fr, err = decodeBaseFrame(h, p, b[fhFlags]&frameHasHigh != 0)
	}
	if err != nil {
		return nil, err
	}
	fr.Stored = len(b)
	return fr, nil
}

// deltaFrame puts a decoded Frame and its Delta in one allocation.
type deltaFrame struct {
	f Frame
	d Delta
}

// decodeDeltaFrame decodes a delta payload p (one slab-layout entry).
func decodeDeltaFrame(h FrameHeader, p []byte) (*Frame, error) {
	const at = FrameHeaderSize
	if len(p) < entryHeader {
		return nil, corrupt(at, "delta payload of %d bytes is shorter than %d", len(p), entryHeader)
	}
	kl := binary.LittleEndian.Uint32(p[0:])
	vl := binary.LittleEndian.Uint32(p[4:])
	if uint64(kl)+uint64(vl) != uint64(len(p)-entryHeader) {
		return nil, corrupt(at, "key of %d and value of %d bytes in a %d-byte payload", kl, vl, len(p))
	}
	flags := Flags(p[20])
	if flags&^flagsKnown != 0 {
		return nil, corrupt(at+20, "unknown version flags %#02x", uint8(flags))
	}
	if flags&Blob != 0 && (vl != BlobRefSize || flags&Tombstone != 0) {
		return nil, corrupt(at+4, "blob reference of %d bytes (flags %#02x)", vl, uint8(flags))
	}
	buf := make([]byte, len(p)-entryHeader)
	copy(buf, p[entryHeader:])
	df := &deltaFrame{}
	df.d = Delta{
		Key:   buf[:kl:kl],
		Value: buf[kl:],
		TxID:  binary.LittleEndian.Uint64(p[8:]),
		Seq:   binary.LittleEndian.Uint32(p[16:]),
		Flags: flags,
		Addr:  h.Addr,
		LSN:   h.LSN,
	}
	df.f = Frame{Addr: h.Addr, PID: h.PID, LSN: h.LSN, Link: h.Link, Delta: &df.d}
	return &df.f, nil
}

// VerifyFrame checks the frame that b holds exactly, as DecodeFrame does
// before it decodes: the length field, the CRC and the fixed header. It
// does not decompress or parse the payload, so it suits a copy of the
// frame's bytes (a frame is immutable: valid bytes stay a valid frame).
// Errors are *base.CorruptionError (base.ErrCorruption).
func VerifyFrame(b []byte) (FrameHeader, error) {
	if len(b) < FrameHeaderSize {
		return FrameHeader{}, corrupt(len(b), "%d bytes, shorter than the %d-byte frame header", len(b), FrameHeaderSize)
	}
	if n := binary.LittleEndian.Uint32(b[fhLength:]); uint64(n) != uint64(len(b)) {
		return FrameHeader{}, corrupt(fhLength, "length field says %d bytes, the frame has %d", n, len(b))
	}
	if stored, got := binary.LittleEndian.Uint32(b[fhCRC:]), frameChecksum(b); stored != got {
		return FrameHeader{}, corrupt(fhCRC, "checksum mismatch: stored %08x, computed %08x", stored, got)
	}
	return ParseFrameHeader(b)
}
