package delta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// entryBytes returns the bytes the entries take as slab entries (the
// frame layout).
func (b *Base) entryBytes() int {
	return entryHeader*len(b.ents) + len(b.keys) + len(b.vals)
}

// checkEncodable reports a base the frame format cannot describe, or whose
// decoding would be rejected for a reason that costs nothing to check here.
func (b *Base) checkEncodable() error {
	switch {
	case b.Keys < 0 || b.Keys > len(b.ents) || (b.Keys == 0) != (len(b.ents) == 0):
		return fmt.Errorf("base counts %d keys in %d entries", b.Keys, len(b.ents))
	case b.Level > 0 && len(b.ents) == 0:
		return errors.New("inner base with no children")
	}
	return nil
}

// appendPayload appends the base's frame payload (see frame.go): the
// entries one by one as slab entries, in order. An entry named in refs is
// written with the Blob flag and its reference.
func (b *Base) appendPayload(dst []byte, refs []EntryRef) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, b.Sibling)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(b.Keys))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b.ents)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b.Low)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b.High)))
	dst = append(dst, b.Level)
	dst = append(dst, b.Low...)
	dst = append(dst, b.High...)
	for i := range b.ents {
		e := b.At(i)
		if len(refs) > 0 && refs[0].Index == i {
			var ref [BlobRefSize]byte
			dst = appendEntry(dst, e.Key, AppendBlobRef(ref[:0], refs[0].Ref), e.TxID, e.Seq, e.Flags|Blob)
			refs = refs[1:]
			continue
		}
		dst = appendEntry(dst, e.Key, e.Value, e.TxID, e.Seq, e.Flags)
	}
	return dst
}

// baseFrame puts a decoded Frame and its Base in one allocation.
type baseFrame struct {
	f Frame
	b Base
}

// decodeBaseFrame decodes and validates a base payload p. The entries are
// validated in p, then their keys, values and fields are copied into the
// base's buffers (the fences into one more), so the returned Base aliases
// nothing of p; the copy is what was checked, as p is not shared.
func decodeBaseFrame(h FrameHeader, p []byte, hasHigh bool) (*Frame, error) {
	const at = FrameHeaderSize
	if len(p) < basePayloadFixed {
		return nil, corrupt(at, "base payload of %d bytes is shorter than %d", len(p), basePayloadFixed)
	}
	sibling := binary.LittleEndian.Uint64(p[0:])
	keys := binary.LittleEndian.Uint32(p[8:])
	count := binary.LittleEndian.Uint32(p[12:])
	lowLen := binary.LittleEndian.Uint32(p[16:])
	highLen := binary.LittleEndian.Uint32(p[20:])
	level := p[24]
	rest := p[basePayloadFixed:]
	switch {
	case !hasHigh && highLen != 0:
		return nil, corrupt(at+20, "high fence of %d bytes without the has-high flag", highLen)
	case uint64(lowLen)+uint64(highLen) > uint64(len(rest)):
		return nil, corrupt(at+16, "fences of %d and %d bytes overrun the %d-byte payload", lowLen, highLen, len(p))
	case uint64(count) > uint64(len(rest)-int(lowLen)-int(highLen))/entryHeader:
		return nil, corrupt(at+12, "%d entries cannot fit in %d bytes", count, len(rest)-int(lowLen)-int(highLen))
	case keys > count || (keys == 0) != (count == 0):
		return nil, corrupt(at+8, "%d keys in %d entries", keys, count)
	case level > 0 && count == 0:
		return nil, corrupt(at+12, "inner base (level %d) with no children", level)
	}
	fences := int(lowLen) + int(highLen)
	slab := rest[fences:]
	keyBytes, err := checkSlab(slab, count, keys, level, at+basePayloadFixed+fences)
	if err != nil {
		return nil, err
	}
	var bd Builder
	bd.Grow(int(count), keyBytes, len(slab)-int(count)*entryHeader-keyBytes)
	off := 0
	for range count {
		kl := binary.LittleEndian.Uint32(slab[off:])
		vl := binary.LittleEndian.Uint32(slab[off+4:])
		ks := off + entryHeader
		bd.Add(slab[ks:ks+int(kl)], slab[ks+int(kl):ks+int(kl)+int(vl)],
			binary.LittleEndian.Uint64(slab[off+8:]), binary.LittleEndian.Uint32(slab[off+16:]), Flags(slab[off+20]))
		off = ks + int(kl) + int(vl)
	}
	bf := &baseFrame{}
	bf.b = Base{
		ents:    bd.ents,
		keys:    bd.keys,
		vals:    bd.vals,
		Sibling: sibling,
		Level:   level,
		Keys:    int(keys),
		Addr:    h.Addr,
	}
	bf.b.setFences(rest[:lowLen], rest[lowLen:fences], hasHigh)
	bf.b.summarize()
	bf.f = Frame{Addr: h.Addr, PID: h.PID, LSN: h.LSN, Link: h.Link, Base: &bf.b}
	return &bf.f, nil
}

// checkSlab validates a base payload's count entries (slab, at offset
// slabAt in the frame): each fits, has known flags, a well-formed blob
// reference or child value, and sorts after the previous one; together
// they fill the slab and hold keys distinct keys. It returns their key
// bytes.
func checkSlab(slab []byte, count, keys uint32, level uint8, slabAt int) (keyBytes int, err error) {
	var prev []byte
	distinct := uint32(0)
	off := 0
	for i := uint32(0); i < count; i++ {
		if len(slab)-off < entryHeader {
			return 0, corrupt(slabAt+off, "entry %d: header overruns the slab", i)
		}
		kl := binary.LittleEndian.Uint32(slab[off:])
		vl := binary.LittleEndian.Uint32(slab[off+4:])
		if uint64(kl)+uint64(vl) > uint64(len(slab)-off-entryHeader) {
			return 0, corrupt(slabAt+off, "entry %d: key of %d and value of %d bytes overrun the slab", i, kl, vl)
		}
		if fl := slab[off+20]; Flags(fl)&^flagsKnown != 0 {
			return 0, corrupt(slabAt+off+20, "entry %d: unknown version flags %#02x", i, fl)
		}
		if fl := Flags(slab[off+20]); fl&Blob != 0 && (level > 0 || vl != BlobRefSize || fl&Tombstone != 0) {
			return 0, corrupt(slabAt+off, "entry %d: blob reference of %d bytes (flags %#02x, level %d)", i, vl, uint8(fl), level)
		}
		if level > 0 && vl != 8 {
			return 0, corrupt(slabAt+off+4, "inner entry %d: child value of %d bytes, not 8", i, vl)
		}
		ks := off + entryHeader
		key := slab[ks : ks+int(kl)]
		switch c := bytes.Compare(prev, key); {
		case i == 0 || c < 0:
			distinct++
		case c > 0:
			return 0, corrupt(slabAt+off, "entry %d: key sorts before entry %d's", i, i-1)
		}
		prev = key
		keyBytes += int(kl)
		off = ks + int(kl) + int(vl)
	}
	if off != len(slab) {
		return 0, corrupt(slabAt+off, "%d bytes after the last entry", len(slab)-off)
	}
	if distinct != keys {
		return 0, corrupt(FrameHeaderSize+8, "base counts %d keys, its entries hold %d", keys, distinct)
	}
	return keyBytes, nil
}
