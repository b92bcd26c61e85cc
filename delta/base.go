package delta

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// entryHeader is the fixed part of a slab entry:
// key length u32, value length u32, txid u64, seq u32, flags u8.
const entryHeader = 21

// Base is an immutable consolidated page. Leaf entries are versions; inner
// entries map a separator key to a child PID (8-byte little-endian value).
type Base struct {
	slab []byte
	offs []uint32

	// Low is the inclusive low fence (empty: minus infinity); High the
	// exclusive high fence (nil: plus infinity).
	Low, High []byte
	// Sibling is the right sibling's PID (0: none).
	Sibling uint64
	// Level is 0 for leaves.
	Level uint8
	// Keys counts distinct keys.
	Keys int
	// Addr is the base's logical address as a frame (set before it is
	// published; 0 for pages built outside the generational pool).
	Addr uint64
	// MaxTxID is the highest txid of any entry; Simple reports one version
	// per key and no CLR. Together they let a scan skip per-entry
	// visibility checks when every txid is retired.
	MaxTxID uint64
	Simple  bool
	// Tombstones reports whether any entry is a tombstone: a forward scan
	// over a base without one reads no entry's flags.
	Tombstones bool

	// Search index, built with the base: the entries' keys share their
	// first cpl bytes (the first and last key's common prefix), and pfx[i]
	// holds the 8 bytes of key i after that prefix, big endian and zero
	// padded. A search compares these contiguous words first and touches
	// entry headers only among equal words, instead of a cache miss per
	// probe into the slab, where keys sit between values.
	prefix []byte // the first cpl bytes of the first key (a copy)
	cpl    int
	pfx    []uint64
}

// summarize computes MaxTxID and Simple (at build and decode time).
func (b *Base) summarize() {
	b.Simple = b.Keys == len(b.offs)
	b.MaxTxID = 0
	b.Tombstones = false
	for i := range b.offs {
		h := b.slab[b.offs[i]:]
		if t := binary.LittleEndian.Uint64(h[8:]); t > b.MaxTxID {
			b.MaxTxID = t
		}
		if Flags(h[20])&CLR != 0 {
			b.Simple = false
		}
		if Flags(h[20])&Tombstone != 0 {
			b.Tombstones = true
		}
	}
	b.pfx, b.prefix, b.cpl = nil, nil, 0
	if n := len(b.offs); n > 0 {
		first, last := b.KeyAt(0), b.KeyAt(n-1)
		cpl := 0
		for cpl < len(first) && cpl < len(last) && first[cpl] == last[cpl] {
			cpl++
		}
		b.cpl = cpl
		b.prefix = bytes.Clone(first[:cpl])
		b.pfx = make([]uint64, n)
		for i := range b.pfx {
			b.pfx[i] = word(b.KeyAt(i)[cpl:])
		}
	}
}

// word returns the first 8 bytes of b as a big-endian number, zero padded.
// For keys a and b with a common prefix, word(a[p:]) < word(b[p:]) implies
// a < b (and > implies >); equal words decide nothing.
func word(b []byte) uint64 {
	if len(b) >= 8 {
		return binary.BigEndian.Uint64(b)
	}
	var w uint64
	for i, c := range b {
		w |= uint64(c) << (56 - 8*i)
	}
	return w
}

// bound returns the index of the first entry whose key is >= key, or
// > key when strict.
func (b *Base) bound(key []byte, strict bool) int {
	n := len(b.offs)
	if n == 0 {
		return 0
	}
	prefix := b.prefix
	if len(key) < b.cpl || !bytes.Equal(key[:b.cpl], prefix) {
		// key lies below or above every entry.
		if bytes.Compare(key, prefix) < 0 {
			return 0
		}
		return n
	}
	w := word(key[b.cpl:])
	pfx := b.pfx
	lo, hi := 0, n
	for lo < hi { // first word >= w
		m := int(uint(lo+hi) >> 1)
		if pfx[m] < w {
			lo = m + 1
		} else {
			hi = m
		}
	}
	end := lo
	for end < n && pfx[end] == w {
		end++
	}
	hi = end
	for lo < hi { // among equal words, compare whole keys
		m := int(uint(lo+hi) >> 1)
		c := bytes.Compare(b.KeyAt(m), key)
		if c < 0 || (strict && c == 0) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Entry is one decoded slab entry. Its slices alias the base's slab, which
// is immutable.
type Entry struct {
	Key, Value []byte
	TxID       uint64
	Seq        uint32
	Flags      Flags
}

// Len returns the number of entries (versions).
func (b *Base) Len() int { return len(b.offs) }

// Bytes returns the slab size, for accounting.
func (b *Base) Bytes() int {
	return len(b.slab) + 12*len(b.offs) + len(b.prefix) + len(b.Low) + len(b.High) + 96
}

// KeyAt returns the key of entry i.
func (b *Base) KeyAt(i int) []byte {
	o := b.offs[i]
	kl := binary.LittleEndian.Uint32(b.slab[o:])
	s := o + entryHeader
	return b.slab[s : s+kl : s+kl]
}

// ValueAt returns the value of entry i.
func (b *Base) ValueAt(i int) []byte {
	o := b.offs[i]
	kl := binary.LittleEndian.Uint32(b.slab[o:])
	vl := binary.LittleEndian.Uint32(b.slab[o+4:])
	s := o + entryHeader + kl
	return b.slab[s : s+vl : s+vl]
}

// FlagsAt returns the flags of entry i.
func (b *Base) FlagsAt(i int) Flags { return Flags(b.slab[b.offs[i]+entryHeader-1]) }

// At decodes entry i.
func (b *Base) At(i int) Entry {
	o := b.offs[i]
	h := b.slab[o : o+entryHeader]
	kl := binary.LittleEndian.Uint32(h[0:])
	vl := binary.LittleEndian.Uint32(h[4:])
	s := o + entryHeader
	return Entry{
		Key:   b.slab[s : s+kl : s+kl],
		Value: b.slab[s+kl : s+kl+vl : s+kl+vl],
		TxID:  binary.LittleEndian.Uint64(h[8:]),
		Seq:   binary.LittleEndian.Uint32(h[16:]),
		Flags: Flags(h[20]),
	}
}

// Search returns the index of the first entry whose key is >= key.
func (b *Base) Search(key []byte) int { return b.bound(key, false) }

// Covers reports whether key lies in [Low, High).
func (b *Base) Covers(key []byte) bool {
	return bytes.Compare(key, b.Low) >= 0 && (b.High == nil || bytes.Compare(key, b.High) < 0)
}

// Child returns, for an inner page, the index and PID of the child whose
// range holds key: the last entry whose separator is <= key.
func (b *Base) Child(key []byte) (int, uint64) {
	i := b.bound(key, true) - 1
	if i < 0 {
		i = 0
	}
	return i, b.ChildAt(i)
}

// ChildBelow returns, for an inner page, the child whose range holds the
// keys just below key: the last entry whose separator is < key (the first
// entry if none).
func (b *Base) ChildBelow(key []byte) (int, uint64) {
	i := b.Search(key) - 1
	if i < 0 {
		i = 0
	}
	return i, b.ChildAt(i)
}

// ChildAt returns the child PID of inner entry i.
func (b *Base) ChildAt(i int) uint64 {
	e := b.At(i)
	return binary.LittleEndian.Uint64(e.Value)
}

// Builder assembles a Base. The zero value is ready to use.
type Builder struct {
	slab    []byte
	offs    []uint32
	keys    int
	lastKey []byte
}

// Add appends an entry. Entries must come in key order, versions of one key
// newest first.
func (bd *Builder) Add(key, value []byte, txid uint64, seq uint32, flags Flags) {
	if len(bd.offs) == 0 || !bytes.Equal(bd.lastKey, key) {
		bd.keys++
	}
	off := uint32(len(bd.slab))
	var h [entryHeader]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(key)))
	binary.LittleEndian.PutUint32(h[4:], uint32(len(value)))
	binary.LittleEndian.PutUint64(h[8:], txid)
	binary.LittleEndian.PutUint32(h[16:], seq)
	h[20] = byte(flags)
	bd.slab = append(bd.slab, h[:]...)
	bd.slab = append(bd.slab, key...)
	bd.slab = append(bd.slab, value...)
	bd.offs = append(bd.offs, off)
	s := off + entryHeader
	bd.lastKey = bd.slab[s : s+uint32(len(key))]
}

// Grow preallocates room for n more entries holding kvBytes of keys and
// values in all, so building a page costs one slab allocation.
func (bd *Builder) Grow(n, kvBytes int) {
	bd.slab = slices.Grow(bd.slab, n*entryHeader+kvBytes)
	bd.offs = slices.Grow(bd.offs, n)
}

// AddChild appends an inner entry mapping separator to child.
func (bd *Builder) AddChild(sep []byte, child uint64) {
	var v [8]byte
	binary.LittleEndian.PutUint64(v[:], child)
	bd.Add(sep, v[:], 0, 0, 0)
}

// Finish returns the built page. low and high are copied. The builder must
// not be used afterwards.
func (bd *Builder) Finish(low, high []byte, sibling uint64, level uint8) *Base {
	b := &Base{
		slab:    bd.slab,
		offs:    bd.offs,
		Low:     clone(low),
		Sibling: sibling,
		Level:   level,
		Keys:    bd.keys,
	}
	if high != nil {
		b.High = clone(high)
	}
	b.summarize()
	*bd = Builder{}
	return b
}

func clone(b []byte) []byte {
	c := make([]byte, len(b))
	copy(c, b)
	return c
}
