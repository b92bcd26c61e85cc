package delta

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// entrySize returns the slab bytes of the entry at offset o.
func (b *Base) entrySize(o uint32) int {
	kl := binary.LittleEndian.Uint32(b.slab[o:])
	vl := binary.LittleEndian.Uint32(b.slab[o+4:])
	return entryHeader + int(kl) + int(vl)
}

// entryBytes returns the bytes the entries take when stored back to back.
func (b *Base) entryBytes() int {
	n := 0
	for _, o := range b.offs {
		n += b.entrySize(o)
	}
	return n
}

// checkEncodable reports a base the frame format cannot describe, or whose
// decoding would be rejected for a reason that costs nothing to check here.
func (b *Base) checkEncodable() error {
	switch {
	case b.Keys < 0 || b.Keys > len(b.offs) || (b.Keys == 0) != (len(b.offs) == 0):
		return fmt.Errorf("base counts %d keys in %d entries", b.Keys, len(b.offs))
	case b.Level > 0 && len(b.offs) == 0:
		return errors.New("inner base with no children")
	}
	return nil
}

// appendPayload appends the base's frame payload (see frame.go). Entries
// are copied one by one in offset-array order, so the stored slab is the
// canonical back-to-back layout whatever the in-memory slab holds.
// An entry named in refs is written with the Blob flag and its reference.
func (b *Base) appendPayload(dst []byte, refs []EntryRef) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, b.Sibling)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(b.Keys))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b.offs)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b.Low)))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b.High)))
	dst = append(dst, b.Level)
	dst = append(dst, b.Low...)
	dst = append(dst, b.High...)
	for i, o := range b.offs {
		if len(refs) > 0 && refs[0].Index == i {
			e := b.At(i)
			var ref [BlobRefSize]byte
			dst = appendEntry(dst, e.Key, AppendBlobRef(ref[:0], refs[0].Ref), e.TxID, e.Seq, e.Flags|Blob)
			refs = refs[1:]
			continue
		}
		dst = append(dst, b.slab[o:int(o)+b.entrySize(o)]...)
	}
	return dst
}

// baseFrame puts a decoded Frame and its Base in one allocation.
type baseFrame struct {
	f Frame
	b Base
}

// decodeBaseFrame decodes and validates a base payload p. The fences and
// entries are copied into one new buffer and validated there, so the
// returned Base is exactly what was checked and aliases nothing of p.
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
	buf := make([]byte, len(rest))
	copy(buf, rest)
	fences := int(lowLen) + int(highLen)
	slab := buf[fences:]
	slabAt := at + basePayloadFixed + fences // the slab's offset in the frame
	offs := make([]uint32, count)
	var prev []byte
	distinct := uint32(0)
	off := 0
	for i := range offs {
		if len(slab)-off < entryHeader {
			return nil, corrupt(slabAt+off, "entry %d: header overruns the slab", i)
		}
		kl := binary.LittleEndian.Uint32(slab[off:])
		vl := binary.LittleEndian.Uint32(slab[off+4:])
		if uint64(kl)+uint64(vl) > uint64(len(slab)-off-entryHeader) {
			return nil, corrupt(slabAt+off, "entry %d: key of %d and value of %d bytes overrun the slab", i, kl, vl)
		}
		if fl := slab[off+20]; Flags(fl)&^flagsKnown != 0 {
			return nil, corrupt(slabAt+off+20, "entry %d: unknown version flags %#02x", i, fl)
		}
		if fl := Flags(slab[off+20]); fl&Blob != 0 && (level > 0 || vl != BlobRefSize || fl&Tombstone != 0) {
			return nil, corrupt(slabAt+off, "entry %d: blob reference of %d bytes (flags %#02x, level %d)", i, vl, uint8(fl), level)
		}
		if level > 0 && vl != 8 {
			return nil, corrupt(slabAt+off+4, "inner entry %d: child value of %d bytes, not 8", i, vl)
		}
		ks := off + entryHeader
		key := slab[ks : ks+int(kl)]
		switch c := bytes.Compare(prev, key); {
		case i == 0 || c < 0:
			distinct++
		case c > 0:
			return nil, corrupt(slabAt+off, "entry %d: key sorts before entry %d's", i, i-1)
		}
		prev = key
		offs[i] = uint32(off)
		off = ks + int(kl) + int(vl)
	}
	if off != len(slab) {
		return nil, corrupt(slabAt+off, "%d bytes after the last entry", len(slab)-off)
	}
	if distinct != keys {
		return nil, corrupt(at+8, "base counts %d keys, its entries hold %d", keys, distinct)
	}
	bf := &baseFrame{}
	bf.b = Base{
		slab:    slab,
		offs:    offs,
		Low:     buf[:lowLen:lowLen],
		Sibling: sibling,
		Level:   level,
		Keys:    int(keys),
		Addr:    h.Addr,
	}
	if hasHigh {
		bf.b.High = buf[lowLen:fences:fences]
	}
	bf.b.summarize()
	bf.f = Frame{Addr: h.Addr, PID: h.PID, LSN: h.LSN, Link: h.Link, Base: &bf.b}
	return &bf.f, nil
}
