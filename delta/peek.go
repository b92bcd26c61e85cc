package delta

import (
	"bytes"
	"encoding/binary"
)

// Version is one version of a key as PeekFrame finds it in a frame. Value
// aliases the frame's bytes (or a decompression buffer): it is valid only
// during the callback.
type Version struct {
	TxID  uint64
	Seq   uint32
	Flags Flags
	Value []byte
}

// Fences are a leaf base's fences and sibling link, as PeekFrame reports
// them (copies), or a delta frame's key.
type Fences struct {
	// Low is the inclusive low fence; High the exclusive high one (nil:
	// plus infinity).
	Low, High []byte
	Sibling   uint64
	// Key is a delta frame's key (nil for a base): it aliases b, or is a
	// copy if the payload is compressed.
	Key []byte
}

// PeekFrame calls visit, in the order a page's Versions would, on each
// version of key in the leaf frame that b holds exactly: the delta's if it
// is key's, or a leaf base's entries for key. It is the point read of a
// page that stays on disk: nothing is decoded beyond the header and the
// entries before key's, and nothing is allocated unless the payload is
// compressed (a pooled buffer). b must have passed VerifyFrame (its CRC
// and header); PeekFrame checks every length it follows, so bad bytes
// return a *base.CorruptionError and never a panic. A blob frame or an
// inner base is a corruption error: a leaf's chain holds neither. For a
// base, it also returns the page's fences (f); for a delta, its key
// (f.Key).
func PeekFrame(b, key []byte, visit func(Version)) (h FrameHeader, f Fences, err error) {
	return PeekFrameRefs(b, key, visit, nil)
}

// RefFunc receives a blob reference PeekFrameRefs finds: the version's key
// and identity and the reference. key aliases the frame's bytes (or a
// decompression buffer): it is valid only during the call.
type RefFunc func(key []byte, txid uint64, seq uint32, r BlobRef)

// PeekFrameRefs is PeekFrame that also calls ref, if not nil, on every
// entry of the frame that references a blob, key's or not, in key order:
// what a page's durable chain must record of the frame (the GC's
// accounting). With ref the walk goes on past key's entries to the end of
// the frame, reading only entry headers.
func PeekFrameRefs(b, key []byte, visit func(Version), ref RefFunc) (h FrameHeader, f Fences, err error) {
	h, err = ParseFrameHeader(b)
	if err != nil {
		return h, f, err
	}
	if h.Len != len(b) {
		return h, f, corrupt(fhLength, "length field says %d bytes, the frame has %d", h.Len, len(b))
	}
	p := b[FrameHeaderSize:]
	if h.Codec != CodecNone {
		bp, plain, err := decompress(h.Codec, p, h.PayloadLen)
		if err != nil {
			return h, f, err
		}
		defer putScratch(bp)
		p = plain
	}
	switch h.Kind {
	case KindDelta:
		if len(p) >= entryHeader && uint64(binary.LittleEndian.Uint32(p))+uint64(binary.LittleEndian.Uint32(p[4:])) != uint64(len(p)-entryHeader) {
			return h, f, corrupt(FrameHeaderSize, "a delta payload of %d bytes that its entry does not fill", len(p))
		}
		if len(p) >= entryHeader {
			if kl := int(binary.LittleEndian.Uint32(p)); kl <= len(p)-entryHeader {
				f.Key = p[entryHeader : entryHeader+kl : entryHeader+kl]
				if h.Codec != CodecNone {
					f.Key = bytes.Clone(f.Key) // p is a pooled buffer
				}
			}
		}
		return h, f, peekEntries(p, 1, key, FrameHeaderSize, visit, ref)
	case KindBase:
		f, err = peekBase(p, b[fhFlags]&frameHasHigh != 0, key, visit, ref)
		return h, f, err
	default:
		return h, f, corrupt(fhKind, "a %s frame in a leaf's chain", h.Kind)
	}
}

// peekBase finds key's entries in a leaf base payload p.
func peekBase(p []byte, hasHigh bool, key []byte, visit func(Version), ref RefFunc) (Fences, error) {
	const at = FrameHeaderSize
	if len(p) < basePayloadFixed {
		return Fences{}, corrupt(at, "base payload of %d bytes is shorter than %d", len(p), basePayloadFixed)
	}
	count := binary.LittleEndian.Uint32(p[12:])
	lowLen := binary.LittleEndian.Uint32(p[16:])
	highLen := binary.LittleEndian.Uint32(p[20:])
	switch {
	case p[24] != 0:
		return Fences{}, corrupt(at+24, "an inner base (level %d) in a leaf's chain", p[24])
	case !hasHigh && highLen != 0:
		return Fences{}, corrupt(at+20, "high fence of %d bytes without the has-high flag", highLen)
	case uint64(lowLen)+uint64(highLen) > uint64(len(p)-basePayloadFixed):
		return Fences{}, corrupt(at+16, "fences of %d and %d bytes overrun the %d-byte payload", lowLen, highLen, len(p))
	}
	lo := basePayloadFixed + int(lowLen)
	fences := lo + int(highLen)
	f := Fences{Low: bytes.Clone(p[basePayloadFixed:lo]), Sibling: binary.LittleEndian.Uint64(p)}
	if f.Low == nil {
		f.Low = []byte{}
	}
	if hasHigh {
		f.High = append([]byte{}, p[lo:fences]...)
	}
	return f, peekEntries(p[fences:], count, key, at+fences, visit, ref)
}

// peekEntries walks up to count slab-layout entries of s (at offset sAt in
// the frame) in key order and visits key's, stopping at the first key
// after it; with ref, it walks every entry and passes ref the blob
// references. A delta payload is a slab of one entry.
func peekEntries(s []byte, count uint32, key []byte, sAt int, visit func(Version), ref RefFunc) error {
	off := 0
	past := false // a key after key's was seen (ref only)
	for i := uint32(0); i < count; i++ {
		if len(s)-off < entryHeader {
			return corrupt(sAt+off, "entry %d: header overruns the payload", i)
		}
		kl := binary.LittleEndian.Uint32(s[off:])
		vl := binary.LittleEndian.Uint32(s[off+4:])
		if uint64(kl)+uint64(vl) > uint64(len(s)-off-entryHeader) {
			return corrupt(sAt+off, "entry %d: key of %d and value of %d bytes overrun the payload", i, kl, vl)
		}
		fl := Flags(s[off+20])
		if fl&^flagsKnown != 0 {
			return corrupt(sAt+off+20, "entry %d: unknown version flags %#02x", i, uint8(fl))
		}
		if fl&Blob != 0 && (vl != BlobRefSize || fl&Tombstone != 0) {
			return corrupt(sAt+off, "entry %d: blob reference of %d bytes (flags %#02x)", i, vl, uint8(fl))
		}
		ks := off + entryHeader
		vs := ks + int(kl)
		if ref != nil && fl&Blob != 0 {
			r, _ := ParseBlobRef(s[vs : vs+int(vl)]) // its length is checked above
			ref(s[ks:vs:vs], binary.LittleEndian.Uint64(s[off+8:]), binary.LittleEndian.Uint32(s[off+16:]), r)
		}
		c := 1
		if !past {
			c = bytes.Compare(s[ks:vs], key)
		}
		if c > 0 {
			if ref == nil {
				return nil
			}
			past = true
		}
		if c == 0 {
			visit(Version{
				TxID:  binary.LittleEndian.Uint64(s[off+8:]),
				Seq:   binary.LittleEndian.Uint32(s[off+16:]),
				Flags: fl,
				Value: s[vs : vs+int(vl) : vs+int(vl)],
			})
		}
		off = vs + int(vl)
	}
	return nil
}
