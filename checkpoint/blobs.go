package checkpoint

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/gc"
	"github.com/bwkv/bwkv/manifest"
)

// blobs chooses, for one checkpoint, which entries of the frames it writes
// go out as blob references (docs/formats.md), and which of those reuse a
// blob already durable.
//
// A leaf entry whose value has Env.BlobThreshold bytes or more (not a
// tombstone) is written as a reference. If the page's durable chain (from
// the Ledger) already references a blob holding that same version (same
// gc.VersionID, value length and CRC), the frame references it again:
// consolidating a page and checkpointing the new base writes no value
// twice. Otherwise the checkpoint writes a new blob frame, owned by the
// page (its header's pid), at BlobAddr(file, i). A blob is never shared
// between pages: a split or merge that moves a version to another page
// writes it again there, so a blob is live iff its own page's chain
// references it (package gc).
type blobs struct {
	e         *Env
	threshold int
	pending   []pendingBlob
	bytes     int64
	reused    int64
	scratch   []gc.Blob // durable's result, reused page to page
}

// pendingBlob is a new blob: the frame and the index in its Refs of the
// reference to fill once the file id is known.
type pendingBlob struct {
	fr    *delta.Frame
	ref   int
	value []byte
}

func newBlobs(e *Env) *blobs { return &blobs{e: e, threshold: e.BlobThreshold} }

// page sets the Refs of the frames one page writes.
func (b *blobs) page(pid uint64, frames []*delta.Frame) {
	if b.threshold <= 0 {
		return
	}
	var durable []gc.Blob // by VersionID, read at the first large value
	loaded := false
	for _, fr := range frames {
		if fr.Base != nil && fr.Base.Level > 0 {
			continue
		}
		n := 1
		if fr.Base != nil {
			n = fr.Base.Len()
		}
		for i := range n {
			en := fr.EntryAt(i)
			if en.Flags&delta.Tombstone != 0 || len(en.Value) < b.threshold {
				continue
			}
			if !loaded {
				durable, loaded = b.durable(pid), true
			}
			id := gc.VersionID(en.Key, en.TxID, en.Seq)
			crc := delta.ValueCRC(en.Value)
			ref := delta.BlobRef{Len: uint32(len(en.Value)), CRC: crc}
			ref.Addr = reuse(durable, id, ref.Len, crc)
			if ref.Addr == 0 && len(b.pending) >= manifest.MaxBlobsPerFile {
				continue // this checkpoint's blob addresses are used up: inline
			}
			fr.Refs = append(fr.Refs, delta.EntryRef{Index: i, Ref: ref})
			if ref.Addr != 0 {
				b.reused++
				continue
			}
			b.pending = append(b.pending, pendingBlob{fr: fr, ref: len(fr.Refs) - 1, value: en.Value})
		}
	}
}

// durable returns the blobs page pid's durable chain references, sorted
// by VersionID when there are more than blobScan (nil if the page has
// none or its chain cannot be read: then every value is written again,
// which is only wasteful). The slice is the checkpoint's scratch, valid
// until the next call.
func (b *blobs) durable(pid uint64) []gc.Blob {
	if b.e.Ledger == nil {
		return nil
	}
	head, ok := b.e.Manifest.Page(pid)
	if !ok {
		return nil
	}
	chain, err := b.e.Ledger.Chain(pid, head)
	if err != nil {
		return nil
	}
	out := b.scratch[:0]
	for _, e := range chain {
		out = append(out, e.Blobs...) // a blob two frames share may repeat: harmless
	}
	if len(out) > blobScan {
		slices.SortFunc(out, func(x, y gc.Blob) int { return cmp.Compare(x.ID, y.ID) })
	}
	b.scratch = out
	return out
}

// blobScan is the most durable blobs reuse scans linearly: a page's chain
// usually references a few dozen, and scanning them for each value costs
// less than sorting them. Past it the list is sorted by VersionID
// (durable) and searched.
const blobScan = 64

// reuse returns the address of the blob in durable (as durable returns
// it) that holds version id with a value of length n and CRC crc, or 0.
func reuse(durable []gc.Blob, id uint64, n, crc uint32) uint64 {
	j := 0
	if len(durable) > blobScan {
		j, _ = slices.BinarySearchFunc(durable, id, func(bl gc.Blob, id uint64) int { return cmp.Compare(bl.ID, id) })
	}
	for ; j < len(durable); j++ {
		old := &durable[j]
		if old.ID == id && old.Len == n && old.CRC == crc {
			return old.Addr
		}
		if len(durable) > blobScan && old.ID != id {
			break
		}
	}
	return 0
}

// place gives the new blobs their addresses in file id's block and returns
// their frames, in ascending address order. (page keeps them within
// MaxBlobsPerFile: past it, values stay in their frames.)
func (b *blobs) place(id manifest.FileID) ([]*delta.Frame, error) {
	if len(b.pending) > manifest.MaxBlobsPerFile || uint64(id) >= 1<<39 {
		return nil, fmt.Errorf("checkpoint: %d blobs for file %d exceed the blob address space", len(b.pending), id)
	}
	out := make([]*delta.Frame, len(b.pending))
	b.bytes = 0
	for i, p := range b.pending {
		addr := manifest.BlobAddr(id, uint64(i))
		p.fr.Refs[p.ref].Ref.Addr = addr
		out[i] = &delta.Frame{Addr: addr, PID: p.fr.PID, Blob: p.value}
		b.bytes += int64(out[i].Size())
	}
	return out, nil
}

// blobsOf returns the blobs a frame references, for its extent.
func blobsOf(fr *delta.Frame) []gc.Blob {
	if len(fr.Refs) == 0 {
		return nil
	}
	out := make([]gc.Blob, len(fr.Refs))
	for i, r := range fr.Refs {
		en := fr.EntryAt(r.Index)
		out[i] = gc.BlobOf(en.Key, en.TxID, en.Seq, r.Ref)
	}
	return out
}
