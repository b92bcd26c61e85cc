package bwkv

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/gc"
	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
	"github.com/bwkv/bwkv/pool"
	"github.com/bwkv/bwkv/tree"
)

// Page reads: a page's durable chain read from the data files through the
// bounded file handles (pool.Files, files.go), retried when a GC rewrite
// moved what it followed.

// readRetries bounds the re-reads of the address map by one frame read
// that keeps finding its file retired (each retry follows a rewrite
// commit, so more than a few means a bug).
const readRetries = 8

// loadPage reads a page's frames from its newest durable frame back to its
// base (readChain) and rebuilds the state. The chain it read is the
// page's durable chain: the GC's accounting keeps it (gcLoaded).
//
// A GC rewrite may consolidate the chain while it is read: the frames
// below the consolidated base's address are then gone, so a read that
// followed an old link into them fails. A failed read that crossed such
// a rewrite (gcMoved) reads the chain again from addr, which now leads to
// the base.
func (db *DB) loadPage(pid pagetable.PID, addr uint64) (*node.Page, error) {
	var deltas []*delta.Delta
	var base *delta.Base
	var chain gc.Chain
	var epoch gc.Epoch
	for attempt := 0; ; attempt++ {
		epoch = db.gcEpoch()
		deltas, base = deltas[:0], nil
		var err error
		chain, err = db.readChain(pid, addr, func(fr *delta.Frame) {
			if fr.Base != nil {
				base = fr.Base
			} else {
				deltas = append(deltas, fr.Delta)
			}
		})
		if err == nil {
			break
		}
		if attempt >= readRetries || !db.gcMoved(epoch) {
			return nil, err
		}
	}
	db.gcLoaded(pid, chain, epoch)
	p := &node.Page{Base: base}
	for i := len(deltas) - 1; i >= 0; i-- {
		p = p.Prepend(deltas[i])
	}
	return p, nil
}

// readChain reads page pid's durable chain from head down to its base,
// calling visit (if set) on each frame, newest first, and returns the
// frames' addresses and sizes.
func (db *DB) readChain(pid pagetable.PID, head uint64, visit func(*delta.Frame)) (gc.Chain, error) {
	var chain gc.Chain
	for a := head; ; {
		fr, name, err := db.readFrame(a)
		if err != nil {
			return nil, err
		}
		if fr.PID != uint64(pid) {
			return nil, base.CorruptionErrorf(name, int64(a), "frame %d belongs to page %d, not %d", a, fr.PID, pid)
		}
		if fr.Blob != nil {
			return nil, &CorruptionError{File: name, Offset: int64(a), Reason: fmt.Sprintf("page %d's chain reaches blob frame %d", pid, a)}
		}
		db.hooks.runFrameRead(uint64(pid), a)
		ext := gc.Extent{Addr: a, Size: uint32(fr.Stored), Blobs: frameBlobs(fr)}
		chain = append(chain, ext)
		if visit != nil {
			// The page in memory holds its values: read the blobs.
			if err := fr.Materialize(func(r delta.BlobRef) ([]byte, error) { return db.readBlob(pid, r) }); err != nil {
				return nil, fmt.Errorf("bwkv: page %d frame %d in %s: %w", pid, a, name, err)
			}
			visit(fr)
		}
		if fr.Base != nil {
			return chain, nil
		}
		if fr.Link == 0 || fr.Link >= a {
			return nil, base.CorruptionErrorf(name, int64(a), "delta frame %d links to %d", a, fr.Link)
		}
		a = fr.Link
	}
}

// frameBlobs returns the blobs a decoded frame references, for its extent.
func frameBlobs(fr *delta.Frame) []gc.Blob {
	refs := fr.BlobRefs()
	if len(refs) == 0 {
		return nil
	}
	out := make([]gc.Blob, len(refs))
	for i, r := range refs {
		en := fr.EntryAt(r.Index)
		out[i] = gc.BlobOf(en.Key, en.TxID, en.Seq, r.Ref)
	}
	return out
}

// readBlob reads the value of the blob r names, which page pid references:
// one read of the blob frame (through the bounded file handles), whose
// header must name the page and whose value must match r (length and CRC,
// checked by delta.Frame.Materialize). A mismatch is a *CorruptionError.
func (db *DB) readBlob(pid pagetable.PID, r delta.BlobRef) ([]byte, error) {
	fr, name, err := db.readFrame(r.Addr)
	if err != nil {
		return nil, err
	}
	if fr.Blob == nil || fr.PID != uint64(pid) {
		return nil, &CorruptionError{File: name, Offset: int64(r.Addr), Reason: fmt.Sprintf("page %d references frame %d, a %s frame of page %d, as a blob", pid, r.Addr, fr.Kind(), fr.PID)}
	}
	db.stats.blobReads.Add(1)
	return fr.Blob, nil
}

// readFrame reads the frame at address a from the data file the manifest
// maps it to, and returns it with the file's name. If a GC rewrite
// retired that file in between (the handle is refused, or the file is
// already unlinked), it re-reads the map, which then names the rewrite's
// output, and retries.
func (db *DB) readFrame(a uint64) (*delta.Frame, string, error) {
	for attempt := 0; ; attempt++ {
		id, ok := db.man.FileOf(a)
		if !ok {
			return nil, "", base.CorruptionErrorf(db.dir, int64(a), "no data file holds address %d", a)
		}
		h, err := db.files.Acquire(uint64(id))
		if err == nil {
			fr, err := h.File().ReadFrame(a)
			name := h.File().Name()
			db.files.Release(h)
			return fr, name, err
		}
		if attempt < readRetries && (errors.Is(err, pool.ErrRetired) || errors.Is(err, fs.ErrNotExist)) {
			if now, ok := db.man.FileOf(a); ok && now != id {
				continue
			}
		}
		return nil, "", err
	}
}

// peekPage is the point read of key in page pid's durable chain from addr
// down to its base, without rebuilding the page (tree.Env.Peek): each
// frame's raw bytes are read into a pooled buffer, checked (CRC, table,
// page) and searched for key (delta.PeekFrame). It returns key's versions,
// newest first, as a base of that one key (blob values read) with the
// page's fences, which the tree puts under the stub's in-memory chain.
// With an index of the chain (chain), only the indexed delta frames whose
// key hash is key's are read, then the chain from chain.Rest; without
// one, every frame is read and the result indexes the chain. Retried like
// loadPage when a GC rewrite moved what it followed; an indexed read that
// fails (a GC rewrite consolidated the chain at a frame the index skipped
// and the frames below are gone) is read again from addr unindexed. It
// records nothing for the GC: the page stays on disk.
func (db *DB) peekPage(pid pagetable.PID, addr uint64, key []byte, chain *node.DiskChain, low uint64) (tree.Peek, error) {
	bp := peekBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) > maxPeekBuf {
			*bp = nil
		}
		peekBufs.Put(bp)
	}()
	if chain != nil && chain.Indexed() {
		pk, _, err := db.peekChain(pid, chain.Rest, key, bp, chain.Frames, false, low)
		if err == nil || db.hooks.peekNoReread.Load() {
			return pk, err
		}
		db.stats.peekRereads.Add(1)
	}
	for attempt := 0; ; attempt++ {
		epoch := db.gcEpoch()
		pk, chain, err := db.peekChain(pid, addr, key, bp, nil, true, 0)
		if err == nil {
			// The peek read the whole durable chain, as a load does, and
			// the page stays in memory as a stub (or is there already):
			// the GC's accounting keeps the chain, so the page's next
			// checkpoint does not read it again (gc.Ledger.Chain).
			db.gcLoaded(pid, chain, epoch)
			return pk, nil
		}
		if attempt >= readRetries || !db.gcMoved(epoch) {
			return pk, err
		}
	}
}

// peekChain is one attempt of peekPage: first the frames of index whose
// hash is key's (newest first; one that is a base ends the read: a GC
// rewrite consolidated the chain there), then the chain from head to its
// base. With build (and no index), the result indexes the frames it read
// from head, and chain is the page's durable chain as readChain returns
// it. Without build and with low > 0, the read ends after the frame that holds
// key's first version (newest first) that no CLR read before it masks and
// whose txid is below low (tree.Env.Peek): the versions under it serve no
// reader or writer. A delta frame holds one version, so a key updated
// since its page's base was written is then read in one frame, not two;
// the result has no fences.
func (db *DB) peekChain(pid pagetable.PID, head uint64, key []byte, bp *[]byte, index []node.ChainFrame, build bool, low uint64) (_ tree.Peek, chain gc.Chain, _ error) {
	if build {
		low = 0 // the whole chain is read: the stub needs its fences and index
	}
	var bd delta.Builder
	var pk tree.Peek
	var blobErr error
	// settled: a version that ends the read was found (low); clrs are the
	// txids of the CLRs of key read so far.
	settled := false
	var clrs []uint64
	// ref records a frame's blob references in its extent (build only).
	var ref delta.RefFunc
	if build {
		ref = func(k []byte, txid uint64, seq uint32, r delta.BlobRef) {
			e := &chain[len(chain)-1]
			e.Blobs = append(e.Blobs, gc.BlobOf(k, txid, seq, r))
		}
	}
	visit := func(v delta.Version) {
		switch {
		case low == 0 || settled:
		case v.Flags&delta.CLR != 0:
			clrs = append(clrs, v.TxID)
		case v.TxID < low && !slices.Contains(clrs, v.TxID):
			settled = true
		}
		if v.Flags&delta.Blob != 0 && blobErr == nil {
			var val []byte
			if val, blobErr = db.peekBlob(pid, v.Value); blobErr == nil {
				bd.Add(key, val, v.TxID, v.Seq, v.Flags&^delta.Blob)
			}
			return
		}
		bd.Add(key, v.Value, v.TxID, v.Seq, v.Flags)
	}
	// frame reads the frame at a, checks it belongs to pid and searches it
	// for key (into bd).
	frame := func(a uint64) (h delta.FrameHeader, f delta.Fences, name string, err error) {
		raw, h, name, err := db.readRaw((*bp)[:0], a)
		*bp = raw[:0]
		if err != nil {
			return h, f, name, err
		}
		pk.Bytes += len(raw)
		pk.Frames++
		if h.PID != uint64(pid) {
			return h, f, name, base.CorruptionErrorf(name, int64(a), "frame %d belongs to page %d, not %d", a, h.PID, pid)
		}
		if build {
			chain = append(chain, gc.Extent{Addr: a, Size: uint32(len(raw))})
		}
		_, f, err = delta.PeekFrameRefs(raw, key, visit, ref)
		if err != nil {
			var ce *base.CorruptionError
			if errors.As(err, &ce) {
				// At the frame's address, as readChain reports a chain's
				// frames (the file offset is the pool's to know).
				return h, f, name, base.CorruptionErrorf(name, int64(a), "frame %d, at byte %d of it: %s", a, ce.Offset, ce.Reason)
			}
			return h, f, name, fmt.Errorf("bwkv: page %d frame %d in %s: %w", pid, a, name, err)
		}
		if blobErr != nil {
			return h, f, name, fmt.Errorf("bwkv: page %d frame %d in %s: %w", pid, a, name, blobErr)
		}
		return h, f, name, nil
	}
	if len(index) > 0 {
		hash := node.ChainHash(key)
		for _, c := range index {
			if c.Hash != hash || db.hooks.peekSkipIndexed.Load() {
				continue
			}
			h, f, _, err := frame(c.Addr)
			if err != nil {
				return pk, nil, err
			}
			if h.Kind == delta.KindBase {
				pk.Disk = bd.Finish(f.Low, f.High, f.Sibling, 0)
				return pk, nil, nil
			}
			if settled {
				pk.Disk = bd.Finish(nil, nil, 0, 0)
				return pk, nil, nil
			}
		}
	}
	for a := head; ; {
		h, f, name, err := frame(a)
		if err != nil {
			return pk, nil, err
		}
		if h.Kind == delta.KindBase {
			pk.Disk = bd.Finish(f.Low, f.High, f.Sibling, 0)
			if build {
				pk.Chain.Rest = a
			}
			return pk, chain, nil
		}
		if build {
			pk.Chain.Frames = append(pk.Chain.Frames, node.ChainFrame{Addr: a, Hash: node.ChainHash(f.Key)})
		}
		if settled {
			pk.Disk = bd.Finish(nil, nil, 0, 0)
			return pk, nil, nil
		}
		if h.Link == 0 || h.Link >= a {
			return pk, nil, base.CorruptionErrorf(name, int64(a), "delta frame %d links to %d", a, h.Link)
		}
		a = h.Link
	}
}

// peekBlob reads the value a blob reference names and checks it against
// the reference, as a full load's delta.Frame.Materialize does.
func (db *DB) peekBlob(pid pagetable.PID, ref []byte) ([]byte, error) {
	r, ok := delta.ParseBlobRef(ref)
	if !ok {
		return nil, base.CorruptionErrorf("", -1, "a blob reference of %d bytes", len(ref))
	}
	v, err := db.readBlob(pid, r)
	if err != nil {
		return nil, err
	}
	if len(v) != int(r.Len) || delta.ValueCRC(v) != r.CRC {
		return nil, base.CorruptionErrorf("", -1, "blob %d does not match its reference (length %d, want %d, or checksum)", r.Addr, len(v), r.Len)
	}
	return v, nil
}

// maxPeekBuf bounds the read buffers peekPage keeps for reuse.
const maxPeekBuf = 1 << 20

// peekBufs holds peekPage's frame buffers (one per concurrent peek).
var peekBufs = sync.Pool{New: func() any { return new([]byte) }}

// readRaw appends the checked raw bytes of the frame at a to dst, retried
// as readFrame is when a GC rewrite retired its file.
func (db *DB) readRaw(dst []byte, a uint64) ([]byte, delta.FrameHeader, string, error) {
	for attempt := 0; ; attempt++ {
		id, ok := db.man.FileOf(a)
		if !ok {
			return dst, delta.FrameHeader{}, "", base.CorruptionErrorf(db.dir, int64(a), "no data file holds address %d", a)
		}
		h, err := db.files.Acquire(uint64(id))
		if err == nil {
			raw, fh, err := h.File().ReadRaw(dst, a)
			name := h.File().Name()
			db.files.Release(h)
			return raw, fh, name, err
		}
		if attempt < readRetries && (errors.Is(err, pool.ErrRetired) || errors.Is(err, fs.ErrNotExist)) {
			if now, ok := db.man.FileOf(a); ok && now != id {
				continue
			}
		}
		return dst, delta.FrameHeader{}, "", err
	}
}
