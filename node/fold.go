package node

import (
	"sync/atomic"

	"github.com/bwkv/bwkv/delta"
)

// Fold marks a leaf base that a consolidation built without a frame of its
// own (a folded base): on disk the page stays the chain the base folded,
// its deltas on top of the durable frame below them, and the base's Addr
// is its newest folded delta's. The base holds what that chain holds for
// every reader (the consolidation drops only versions no reader needs), so
// a read of the chain on disk and a read of the base agree, and a
// checkpoint writes the folded deltas not yet durable, each linked to the
// next older, instead of a base frame: a hot leaf's consolidations cost
// its new deltas' bytes on disk, not the whole leaf's.
//
// A fold is made only over a durable frame (the old base's address at or
// below the published one), so a checkpoint never needs another fold's
// deltas to link it, and only while the chain on disk stays within a
// bound (DiskLen); the next consolidation past it writes a base frame.
// Immutable but for Pending, which the checkpointer clears once the
// deltas are durable so that the base does not keep them in memory.
type Fold struct {
	pending atomic.Pointer[delta.Delta]
	// below is the fold under this one (the old base's) while its deltas
	// may not all be durable either.
	below atomic.Pointer[Fold]
	// Link is the address the oldest folded delta links to: the frame
	// under the fold (the old base's address), durable or, if the old
	// base is folded too, its newest folded delta.
	Link uint64
	// Chain indexes the durable chain at the base's address: the folded
	// deltas, then the chain under the old base if that was folded too.
	Chain DiskChain
	// DiskLen counts the delta frames of that chain above its base frame.
	DiskLen int
}

// Pending calls fn for each folded delta above addr not yet written
// (Written), newest first, down through the folds below, with the address
// it links to (the next older frame), and returns the newest frame the
// chain reaches at or below addr: a checkpoint with addr its published
// address writes these deltas and keeps that frame. ok is false if the
// chain could not be followed down to addr (a fold below was dropped
// while its frames were above addr: a broken invariant, which a
// checkpoint answers by writing the base as a base frame).
func (f *Fold) Pending(addr uint64, fn func(d *delta.Delta, link uint64)) (keep uint64, ok bool) {
	for f != nil {
		d := f.pending.Load()
		if d == nil {
			// Written: its deltas are durable, so its address (its
			// newest delta's) is at or below the published one.
			return f.Chain.Frames[0].Addr, f.Chain.Frames[0].Addr <= addr
		}
		for ; d != nil && d.Addr > addr; d = d.Next {
			link := f.Link
			if d.Next != nil {
				link = d.Next.Addr
			}
			fn(d, link)
		}
		if d != nil {
			return d.Addr, true
		}
		if f.Link <= addr {
			return f.Link, true
		}
		f = f.below.Load()
	}
	return 0, false
}

// Written says the folded deltas are durable (the checkpoint that wrote
// them is published): the base no longer keeps them, or the folds below,
// in memory. Safe for concurrent use; only the checkpointer calls it.
func (f *Fold) Written() {
	f.pending.Store(nil)
	f.below.Store(nil)
}

// NewFold returns the fold of p's chain (a full leaf state whose chain is
// about to be consolidated into one base), or false if p cannot fold: it
// has no chain, a delta without an address, a base that is neither
// durable (at or below published) nor folded, or the chain on disk would
// hold more than maxDisk deltas. The fold's base takes p.Head.Addr as its
// address (FoldedBase).
func NewFold(p *Page, published uint64, maxDisk int) (*Fold, bool) {
	if p.Head == nil || p.Stub != nil || p.Base.Addr == 0 || (p.Base.Addr > published && p.Fold == nil) {
		return nil, false
	}
	below, diskLen := DiskChain{Rest: p.Base.Addr}, 0
	if p.Fold != nil {
		below, diskLen = p.Fold.Chain, p.Fold.DiskLen
	}
	diskLen += p.Len
	if diskLen > min(maxDisk, maxChainIndex) {
		return nil, false
	}
	f := &Fold{Link: p.Base.Addr, DiskLen: diskLen}
	f.Chain.Frames = make([]ChainFrame, 0, p.Len+len(below.Frames))
	for d := p.Head; d != nil; d = d.Next {
		if d.Addr == 0 {
			return nil, false
		}
		f.Chain.Frames = append(f.Chain.Frames, ChainFrame{Addr: d.Addr, Hash: ChainHash(d.Key)})
	}
	f.Chain.Frames = append(f.Chain.Frames, below.Frames...)
	f.Chain.Rest = below.Rest
	f.pending.Store(p.Head)
	if p.Base.Addr > published {
		// The folded base under it may still have deltas to write.
		f.below.Store(p.Fold)
	}
	return f, true
}

// FoldedBase returns the state of base b, the consolidation of the chain f
// folds: b takes the newest folded delta's address.
func FoldedBase(b *delta.Base, f *Fold) *Page {
	b.Addr = f.Chain.Frames[0].Addr
	return &Page{Base: b, Fold: f, Size: b.Bytes() + f.Chain.bytes() + foldBytes}
}

// foldBytes is a Fold's own memory (its index counted apart).
const foldBytes = 64
