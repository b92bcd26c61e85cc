package delta

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/bwkv/bwkv/internal/base"
)

// entryHeader is the fixed part of a slab entry:
// key length u32, value length u32, txid u64, seq u32, flags u8.
const entryHeader = 21

// Base is an immutable consolidated page. Leaf entries are versions; inner
// entries map a separator key to a child PID (8-byte little-endian value).
//
// In memory the entries are laid out for searching and scanning: their
// fixed fields sit in one contiguous array (ents), the keys back to back in
// one buffer and the values in another, so walking keys or checking
// versions touches consecutive memory instead of a cache line beside each
// value. The frame format stores them as slab entries (appendPayload).
type Base struct {
	// The fields a descent and a point search read come first, then the
	// inline room their bytes usually live in: a visit touches the
	// Base's first four cache lines, adjacent ones.

	// Low is the inclusive low fence (empty: minus infinity); High the
	// exclusive high fence (nil: plus infinity).
	Low, High []byte

	// Search index, built with the base: the entries' keys share their
	// first len(prefix) bytes (the first and last key's common prefix),
	// and pfx[2i], pfx[2i+1] hold the 16 bytes of key i after that prefix
	// as two big-endian words, zero padded. A search compares these
	// contiguous pairs first and reads whole keys only among equal pairs.
	// Two words, not one: keys built as "<bucket>_<id>" share their first
	// 8 bytes after an inner page's prefix with every key of their bucket,
	// and one word left the search comparing whole keys there.
	prefix []byte // a copy
	pfx    []uint64
	// kids holds an inner page's child PIDs (its entries' values), so a
	// descent reads one word after its search instead of an entry and
	// its value.
	kids []uint64
	ents []ent
	// Level is 0 for leaves.
	Level uint8
	used  uint8 // bytes of inl taken
	// Simple reports one version per key and no CLR; with MaxTxID (the
	// highest txid of any entry) it lets a scan skip per-entry visibility
	// checks when every txid is retired.
	Simple bool
	// Tombstones reports whether any entry is a tombstone: a forward scan
	// over a base without one reads no entry's flags.
	Tombstones bool

	// inl holds the fences and the search prefix when they fit: a descent
	// compares a key with Low and the prefix on every page it visits, and
	// bytes inside the Base cost no cache miss of their own.
	inl [baseInline]byte

	keys []byte
	vals []byte
	// Sibling is the right sibling's PID (0: none).
	Sibling uint64
	// Keys counts distinct keys.
	Keys int
	// Addr is the base's logical address as a frame (set before it is
	// published; 0 for pages built outside the generational pool).
	Addr    uint64
	MaxTxID uint64

	// carry is set on a carried base (SetCarry); nil on every other base.
	carry *Carry
}

// Carry describes a carried base: a leaf's consolidation that is never
// written as a base frame. On disk the page stays the chain it was: the
// base's address is that of the newest delta it absorbed, and the
// checkpointer writes the absorbed deltas that were not durable yet
// (Pending) as delta frames, linked down to the durable frame below them
// (Link). A reader of the base's address on disk reads that chain, whose
// contents are the base's.
type Carry struct {
	// Link is the address of the durable frame below the oldest Pending
	// delta when the base was built.
	Link uint64
	// Depth and Bytes are the delta frames of the on-disk chain the base
	// stands for, above that chain's newest written base, and their
	// bytes: what bounds the chain (tree.Tree's carryOf).
	Depth, Bytes int32
	// Index and Rest index those Depth delta frames, the top one first,
	// each with its key's hash (node.ChainHash), and Rest is the address
	// of the written base below them; Rest 0: no index. When the leaf is
	// evicted its stub takes the index (node.NewStub), so a point read
	// on disk reads the frames that may hold its key and the base, not
	// every frame of the chain. Read-only.
	Index []ChainFrame
	Rest  uint64
	// pending: the absorbed deltas that were not durable when the base
	// was built, newest first (the first at the base's address). The
	// checkpointer writes those above its published address; once none
	// is left, Clear drops them (a carried base then holds nothing but
	// its bytes and its index).
	pending atomic.Pointer[[]*Delta]
}

// ChainFrame is a delta frame of a page's durable chain: its address and
// its key's hash (node.ChainHash).
type ChainFrame struct {
	Addr uint64
	Hash uint32
}

// NewCarry returns the carry of a base whose unwritten absorbed deltas
// are pending (newest first), above the durable frame at link; index and
// rest index its delta frames on disk (Carry.Index; rest 0: none).
func NewCarry(link uint64, depth, diskBytes int, pending []*Delta, index []ChainFrame, rest uint64) *Carry {
	c := &Carry{Link: link, Depth: int32(depth), Bytes: int32(diskBytes)}
	if rest != 0 {
		c.Index, c.Rest = index, rest
	}
	if len(pending) > 0 {
		c.pending.Store(&pending)
	}
	return c
}

// IndexBytes is the memory of c's index, which the page state of its base
// counts (node.Page.Size), not the base's Bytes: a write reads a base's
// Bytes and nothing else of its carry.
func (c *Carry) IndexBytes() int { return 16 * cap(c.Index) }

// Pending returns the absorbed deltas that were not durable when the base
// was built, newest first; nil once cleared. Read-only.
func (c *Carry) Pending() []*Delta {
	if p := c.pending.Load(); p != nil {
		return *p
	}
	return nil
}

// Unwritten returns the pending deltas above addr, newest first, and the
// address the oldest of them links to on disk: the next older pending
// delta, or Link. One load of the pending deltas.
func (c *Carry) Unwritten(addr uint64) (ds []*Delta, link uint64) {
	pd := c.Pending()
	for i, d := range pd {
		if d.Addr <= addr {
			return pd[:i], d.Addr
		}
	}
	return pd, c.Link
}

// Clear drops the pending deltas once every one is durable (the
// checkpointer, after its publish), so a resident carried base does not
// keep values a checkpoint wrote.
func (c *Carry) Clear() { c.pending.Store(nil) }

// SetCarry makes b a carried base (Carry) at addr, the address of the
// newest delta it absorbed. Call it before b is published.
func (b *Base) SetCarry(addr uint64, c *Carry) {
	b.Addr = addr
	b.carry = c
}

// Carry returns b's carry, or nil if b is not a carried base.
func (b *Base) Carry() *Carry { return b.carry }

// Carried reports whether b is a carried base (SetCarry).
func (b *Base) Carried() bool { return b.carry != nil }

// DiskChain returns, for a carried base, the delta frames of the on-disk
// chain it stands for above that chain's newest written base, and their
// bytes; 0, 0 for any other base (its own frame is that base).
func (b *Base) DiskChain() (depth, diskBytes int) {
	if b.carry == nil {
		return 0, 0
	}
	return int(b.carry.Depth), int(b.carry.Bytes)
}

// baseInline is the room inside a Base for its fences and search prefix.
const baseInline = 96

// room returns n bytes of the base's inline room if they fit, else a new
// slice.
func (b *Base) room(n int) []byte {
	if u := int(b.used); u+n <= baseInline {
		b.used += uint8(n)
		return b.inl[u : u+n : u+n]
	}
	return make([]byte, n)
}

// setFences copies low and, with hasHigh, high into the base.
func (b *Base) setFences(low, high []byte, hasHigh bool) {
	b.Low = b.room(len(low))
	copy(b.Low, low)
	b.High = nil
	if hasHigh {
		b.High = b.room(len(high))
		copy(b.High, high)
	}
}

// ent is one entry's fixed part: where its key and value lie in the
// base's keys and vals buffers, and its version fields (32 bytes).
type ent struct {
	ko, kl, vo, vl uint32
	txid           uint64
	seq            uint32
	flags          Flags
}

// entBytes is the memory one entry's fixed part and search words take.
const entBytes = 32 + 16

// summarize computes MaxTxID and Simple (at build and decode time).
func (b *Base) summarize() {
	b.Simple = b.Keys == len(b.ents)
	b.MaxTxID = 0
	b.Tombstones = false
	for i := range b.ents {
		e := &b.ents[i]
		if e.txid > b.MaxTxID {
			b.MaxTxID = e.txid
		}
		if e.flags&CLR != 0 {
			b.Simple = false
		}
		if e.flags&Tombstone != 0 {
			b.Tombstones = true
		}
	}
	b.pfx, b.prefix = nil, nil
	if n := len(b.ents); n > 0 {
		first, last := b.KeyAt(0), b.KeyAt(n-1)
		cpl := 0
		for cpl < len(first) && cpl < len(last) && first[cpl] == last[cpl] {
			cpl++
		}
		b.prefix = b.room(cpl)
		copy(b.prefix, first[:cpl])
		b.pfx = make([]uint64, 2*n)
		for i := range n {
			b.pfx[2*i], b.pfx[2*i+1] = words(b.KeyAt(i), cpl)
		}
		b.kids = nil
		if b.Level > 0 {
			b.kids = make([]uint64, n)
			for i := range b.kids {
				v := b.ValueAt(i)
				if len(v) < 8 { // not a child reference: ChildAt reads the entry
					b.kids = nil
					break
				}
				b.kids[i] = binary.LittleEndian.Uint64(v)
			}
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

// words returns the two search words of key after its first cpl bytes:
// bytes cpl..cpl+16 as two big-endian numbers, zero padded. For keys a and
// b with a common prefix of cpl bytes, a smaller pair (compared as a
// number of 128 bits) implies a < b, a larger one a > b; equal pairs
// decide nothing (a zero byte and the padding look alike).
func words(key []byte, cpl int) (uint64, uint64) {
	rest := key[cpl:]
	if len(rest) > 8 {
		return word(rest), word(rest[8:])
	}
	return word(rest), 0
}

// bound returns the index of the first entry whose key is >= key, or
// > key when strict.
func (b *Base) bound(key []byte, strict bool) int {
	n := len(b.ents)
	if n == 0 {
		return 0
	}
	prefix := b.prefix
	cpl := len(prefix)
	if len(key) < cpl || !bytes.Equal(key[:cpl], prefix) {
		// key lies below or above every entry.
		if bytes.Compare(key, prefix) < 0 {
			return 0
		}
		return n
	}
	w1, w2 := words(key, cpl)
	pfx := b.pfx[: 2*n : 2*n]
	if b.Level == 0 && n > 4 {
		// A leaf's search words span several lines, most of them not in
		// cache: ask for them all at once rather than one probe after
		// another. (Inner pages are read by every descent and stay
		// cached.)
		base.Prefetch(unsafe.Pointer(&pfx[0]), 16*n)
	}
	lo, hi := 0, n
	for lo < hi { // first pair >= (w1, w2)
		m := int(uint(lo+hi) >> 1)
		// The pair is below (w1, w2) iff subtracting it borrows: no
		// branch on the words, which a search mispredicts half the time.
		_, c := bits.Sub64(pfx[2*m+1], w2, 0)
		_, c = bits.Sub64(pfx[2*m], w1, c)
		if c != 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	end := lo
	for end < n && pfx[2*end] == w1 && pfx[2*end+1] == w2 {
		end++
	}
	hi = end
	for lo < hi { // among equal pairs, compare whole keys
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

// KeyEqual reports whether entry i's key is key. The lengths and the
// search words decide most answers; the key's bytes are read only past the
// 16 after the base's common prefix, and only when everything before
// agrees (a point read then touches the entry's fields, its search words
// and its value, and a key's tail only on a hit).
func (b *Base) KeyEqual(i int, key []byte) bool {
	e := &b.ents[i]
	if int(e.kl) != len(key) {
		return false
	}
	// Every entry starts with the prefix, so key (as long as the entry) is
	// at least that long.
	cpl := len(b.prefix)
	if string(key[:cpl]) != string(b.prefix) {
		return false
	}
	// Equal lengths pad alike: the words decide the 16 bytes after the
	// prefix; only a longer key's tail is read.
	if w1, w2 := words(key, cpl); b.pfx[2*i] != w1 || b.pfx[2*i+1] != w2 {
		return false
	}
	if len(key)-cpl <= 16 {
		return true
	}
	return string(b.keys[e.ko+uint32(cpl)+16:e.ko+e.kl]) == string(key[cpl+16:])
}

// Entry is one decoded entry. Its slices alias the base's buffers, which
// are immutable.
type Entry struct {
	Key, Value []byte
	TxID       uint64
	Seq        uint32
	Flags      Flags
}

// Len returns the number of entries (versions).
func (b *Base) Len() int { return len(b.ents) }

// Bytes returns the memory the base holds, for accounting.
func (b *Base) Bytes() int {
	n := len(b.keys) + len(b.vals) + entBytes*len(b.ents) + 8*len(b.kids) + 96 + baseInline
	if f := len(b.prefix) + len(b.Low) + len(b.High); f > int(b.used) {
		n += f - int(b.used) // fences or prefix that did not fit inline
	}
	return n
}

// KeyAt returns the key of entry i.
func (b *Base) KeyAt(i int) []byte {
	e := &b.ents[i]
	return b.keys[e.ko : e.ko+e.kl : e.ko+e.kl]
}

// ValueAt returns the value of entry i.
func (b *Base) ValueAt(i int) []byte {
	e := &b.ents[i]
	return b.vals[e.vo : e.vo+e.vl : e.vo+e.vl]
}

// FlagsAt returns the flags of entry i.
func (b *Base) FlagsAt(i int) Flags { return b.ents[i].flags }

// TxIDAt returns the txid of entry i.
func (b *Base) TxIDAt(i int) uint64 { return b.ents[i].txid }

// At decodes entry i.
func (b *Base) At(i int) Entry {
	e := &b.ents[i]
	return Entry{
		Key:   b.keys[e.ko : e.ko+e.kl : e.ko+e.kl],
		Value: b.vals[e.vo : e.vo+e.vl : e.vo+e.vl],
		TxID:  e.txid,
		Seq:   e.seq,
		Flags: e.flags,
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
	if b.kids != nil {
		return b.kids[i]
	}
	e := b.At(i)
	return binary.LittleEndian.Uint64(e.Value)
}

// Builder assembles a Base. The zero value is ready to use.
type Builder struct {
	ents       []ent
	keys, vals []byte
	nkeys      int
	lastKey    []byte
}

// Add appends an entry. Entries must come in key order, versions of one key
// newest first.
func (bd *Builder) Add(key, value []byte, txid uint64, seq uint32, flags Flags) {
	if len(bd.ents) == 0 || !bytes.Equal(bd.lastKey, key) {
		bd.nkeys++
	}
	ko, vo := uint32(len(bd.keys)), uint32(len(bd.vals))
	bd.keys = append(bd.keys, key...)
	bd.vals = append(bd.vals, value...)
	bd.ents = append(bd.ents, ent{ko: ko, kl: uint32(len(key)), vo: vo, vl: uint32(len(value)), txid: txid, seq: seq, flags: flags})
	bd.lastKey = bd.keys[ko:len(bd.keys):len(bd.keys)]
}

// Grow preallocates room for n more entries holding keyBytes of keys and
// valBytes of values in all, so building a page costs one allocation per
// buffer.
func (bd *Builder) Grow(n, keyBytes, valBytes int) {
	bd.keys = slices.Grow(bd.keys, keyBytes)
	bd.vals = slices.Grow(bd.vals, valBytes)
	bd.ents = slices.Grow(bd.ents, n)
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
	b := new(Base)
	bd.FinishInto(b, low, high, sibling, level)
	return b
}

// FinishInto builds the page into b, memory the caller allocated (a page
// state's, say, so the two share an allocation); b's previous contents
// are overwritten. low and high are copied. The builder must not be used
// afterwards.
func (bd *Builder) FinishInto(b *Base, low, high []byte, sibling uint64, level uint8) {
	*b = Base{
		ents:    bd.ents,
		keys:    bd.keys,
		vals:    bd.vals,
		Sibling: sibling,
		Level:   level,
		Keys:    bd.nkeys,
	}
	b.setFences(low, high, high != nil)
	b.summarize()
	*bd = Builder{}
}
