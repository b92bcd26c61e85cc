package delta

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Blob files (docs/formats.md): a value of BlobThreshold bytes or more is
// written once, by the checkpointer, as a frame of its own (KindBlob), and
// the entry that holds it in a delta or base frame stores a BlobRef instead
// of the value, with the Blob version flag. Blob references exist only in
// encoded frames: a page in memory holds its values (Frame.Materialize
// resolves the references of a frame read from disk).

// BlobRefSize is the size of an encoded BlobRef: addr u64, len u32, crc u32.
const BlobRefSize = 16

// BlobRef names the blob frame holding a value. The blob frame belongs to
// the page of the frame that references it (its header's pid).
type BlobRef struct {
	// Addr is the blob frame's logical address.
	Addr uint64
	// Len is the value's length and CRC its CRC-32C (ValueCRC).
	Len uint32
	CRC uint32
}

// FrameBytes returns the encoded size of the blob frame r names (blob
// frames are stored plain).
func (r BlobRef) FrameBytes() int { return FrameHeaderSize + int(r.Len) }

// AppendBlobRef appends r's encoding to dst.
func AppendBlobRef(dst []byte, r BlobRef) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, r.Addr)
	dst = binary.LittleEndian.AppendUint32(dst, r.Len)
	return binary.LittleEndian.AppendUint32(dst, r.CRC)
}

// ParseBlobRef decodes an entry value that holds a BlobRef.
func ParseBlobRef(v []byte) (BlobRef, bool) {
	if len(v) != BlobRefSize {
		return BlobRef{}, false
	}
	r := BlobRef{
		Addr: binary.LittleEndian.Uint64(v),
		Len:  binary.LittleEndian.Uint32(v[8:]),
		CRC:  binary.LittleEndian.Uint32(v[12:]),
	}
	return r, r.Addr != 0
}

// ValueCRC returns the CRC-32C (Castagnoli) of a value, as a BlobRef
// records it.
func ValueCRC(v []byte) uint32 { return crc32.Checksum(v, castagnoli) }

// EntryRef says that entry Index of a frame's record (0 for a delta) is
// stored as a reference to a blob.
type EntryRef struct {
	Index int
	Ref   BlobRef
}

// EntryAt returns entry i of f's record (a delta's only entry is 0).
func (f *Frame) EntryAt(i int) Entry {
	if d := f.Delta; d != nil {
		return Entry{Key: d.Key, Value: d.Value, TxID: d.TxID, Seq: d.Seq, Flags: d.Flags}
	}
	return f.Base.At(i)
}

// entries returns the number of entries of f's record.
func (f *Frame) entries() int {
	switch {
	case f.Delta != nil:
		return 1
	case f.Base != nil:
		return f.Base.Len()
	}
	return 0
}

// refsSaved returns how many bytes f.Refs take off the plain encoding.
func (f *Frame) refsSaved() int {
	n := 0
	for _, r := range f.Refs {
		n += int(r.Ref.Len) - BlobRefSize
	}
	return n
}

// checkRefs reports Refs that AppendFrame cannot write: out of order or
// range, on a tombstone, an inner page or a blob frame, or whose length
// differs from the entry's value.
func (f *Frame) checkRefs() error {
	if len(f.Refs) == 0 {
		return nil
	}
	if f.Blob != nil || (f.Base != nil && f.Base.Level > 0) {
		return fmt.Errorf("delta: frame %d: blob references in a %s frame", f.Addr, f.Kind())
	}
	n := f.entries()
	prev := -1
	for _, r := range f.Refs {
		if r.Index <= prev || r.Index >= n {
			return fmt.Errorf("delta: frame %d: blob reference to entry %d of %d (after %d)", f.Addr, r.Index, n, prev)
		}
		prev = r.Index
		e := f.EntryAt(r.Index)
		switch {
		case e.Flags&(Tombstone|Blob) != 0:
			return fmt.Errorf("delta: frame %d: blob reference on entry %d with flags %#x", f.Addr, r.Index, uint8(e.Flags))
		case int(r.Ref.Len) != len(e.Value):
			return fmt.Errorf("delta: frame %d: blob reference of %d bytes for a value of %d", f.Addr, r.Ref.Len, len(e.Value))
		case r.Ref.Addr == 0:
			return fmt.Errorf("delta: frame %d: blob reference to address 0", f.Addr)
		}
	}
	return nil
}

// BlobRefs returns the blob references a decoded frame's entries hold
// (before Materialize; afterwards Refs lists them).
func (f *Frame) BlobRefs() []EntryRef {
	if f.Refs != nil {
		return f.Refs
	}
	var out []EntryRef
	for i := range f.entries() {
		e := f.EntryAt(i)
		if e.Flags&Blob == 0 {
			continue
		}
		if r, ok := ParseBlobRef(e.Value); ok {
			out = append(out, EntryRef{Index: i, Ref: r})
		}
	}
	return out
}

// Materialize replaces the blob references of a decoded frame by the
// values fetch returns, checking each value's length and CRC against its
// reference, so that the frame's record holds its values like a page in
// memory. f.Refs then lists the references, for the space accounting. A
// mismatch is a *CorruptionError; an error of fetch is returned as it is.
// A frame without references is left as it is.
func (f *Frame) Materialize(fetch func(BlobRef) ([]byte, error)) error {
	refs := f.BlobRefs()
	if len(refs) == 0 || f.Refs != nil {
		return nil
	}
	vals := make([][]byte, len(refs))
	for i, r := range refs {
		v, err := fetch(r.Ref)
		if err != nil {
			return err
		}
		if len(v) != int(r.Ref.Len) || ValueCRC(v) != r.Ref.CRC {
			return corrupt(0, "frame %d: blob %d does not match its reference (length %d, want %d, or checksum)", f.Addr, r.Ref.Addr, len(v), r.Ref.Len)
		}
		vals[i] = v
	}
	if d := f.Delta; d != nil {
		nd := New(d.Key, vals[0], d.TxID, d.Seq, d.Flags&^Blob)
		nd.Addr, nd.LSN = d.Addr, d.LSN
		f.Delta = nd
		f.Refs = refs
		return nil
	}
	b := f.Base
	var bd Builder
	kb, vb := len(b.keys), len(b.vals)
	for _, v := range vals {
		vb += len(v)
	}
	bd.Grow(b.Len(), kb, vb)
	j := 0
	for i := range b.Len() {
		e := b.At(i)
		if j < len(refs) && refs[j].Index == i {
			bd.Add(e.Key, vals[j], e.TxID, e.Seq, e.Flags&^Blob)
			j++
			continue
		}
		bd.Add(e.Key, e.Value, e.TxID, e.Seq, e.Flags)
	}
	nb := bd.Finish(b.Low, b.High, b.Sibling, b.Level)
	nb.Addr = b.Addr
	f.Base = nb
	f.Refs = refs
	return nil
}

// decodeBlobFrame decodes a blob payload: the value itself.
func decodeBlobFrame(h FrameHeader, p []byte) *Frame {
	v := make([]byte, len(p))
	copy(v, p)
	return &Frame{Addr: h.Addr, PID: h.PID, LSN: h.LSN, Link: h.Link, Blob: v}
}
