package gc

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/puzpuzpuz/xsync/v3"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/failpoints"
	"github.com/bwkv/bwkv/manifest"
)

// Extent is one durable frame: its logical address and encoded size, and
// the blob frames its entries reference.
type Extent struct {
	Addr  uint64
	Size  uint32
	Blobs []Blob
}

// Blob is a blob frame a chain frame references (docs/formats.md): its
// address and encoded size, and the identity of the value it holds (the
// version's VersionID, the value's length and CRC), by which a checkpoint
// of the same page reuses it instead of writing the value again. A blob
// frame belongs to the page whose chain references it (the checkpointer
// never shares one between pages), so it is live iff that page's durable
// chain references it.
type Blob struct {
	Addr     uint64
	Size     uint32
	Len, CRC uint32
	ID       uint64
}

// VersionID identifies a version of a key for blob reuse: a hash of the key,
// the txid and the seq. The value's length and CRC are checked as well
// before a blob is reused, so a collision cannot hand out another value.
func VersionID(key []byte, txid uint64, seq uint32) uint64 {
	h := maphash.Bytes(versionSeed, key)
	return h ^ (txid * 0x9E3779B97F4A7C15) ^ (uint64(seq) * 0xC2B2AE3D27D4EB4F)
}

// BlobOf returns the Blob of reference r, which the version (key, txid,
// seq) holds: what a chain's extent records of it.
func BlobOf(key []byte, txid uint64, seq uint32, r delta.BlobRef) Blob {
	return Blob{Addr: r.Addr, Size: uint32(r.FrameBytes()), Len: r.Len, CRC: r.CRC, ID: VersionID(key, txid, seq)}
}

// versionSeed is fixed for the process: VersionIDs live in memory only.
var versionSeed = maphash.MakeSeed()

// addrSet is a set of blob addresses, sorted ascending, each once.
type addrSet []uint64

// has reports whether addr is in the set (a binary search).
func (s addrSet) has(addr uint64) bool {
	_, ok := slices.BinarySearch(s, addr)
	return ok
}

// blobAddrs returns the addresses of the blobs the chains reference. A
// sorted slice, not a map: the checkpoint's and the collector's per-page
// lookups build one per page, and a map's growth cost more than the
// lookups themselves.
func blobAddrs(cs ...Chain) addrSet {
	var out addrSet
	for _, c := range cs {
		for _, e := range c {
			for _, b := range e.Blobs {
				out = append(out, b.Addr)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Blobs returns the blobs the chain references, each once, in ascending
// address order.
func (c Chain) Blobs() []Blob {
	var out []Blob
	for _, e := range c {
		out = append(out, e.Blobs...)
	}
	slices.SortFunc(out, func(a, b Blob) int { return cmp.Compare(a.Addr, b.Addr) })
	return slices.CompactFunc(out, func(a, b Blob) bool { return a.Addr == b.Addr })
}

func equalChains(a, b Chain) bool {
	return slices.EqualFunc(a, b, func(x, y Extent) bool {
		return x.Addr == y.Addr && x.Size == y.Size && slices.Equal(x.Blobs, y.Blobs)
	})
}

// Chain is a page's durable frames from its newest (the page-table head)
// to its base, following the frames' links: addresses strictly descend.
// A Chain stored in a Ledger is never modified.
type Chain []Extent

// Head returns the chain's newest address (0 for an empty chain).
func (c Chain) Head() uint64 {
	if len(c) == 0 {
		return 0
	}
	return c[0].Addr
}

// Contains reports whether the chain holds address a, in O(log n).
func (c Chain) Contains(a uint64) bool {
	_, ok := c.index(a)
	return ok
}

func (c Chain) index(a uint64) (int, bool) {
	return slices.BinarySearchFunc(c, a, func(e Extent, a uint64) int { return cmp.Compare(a, e.Addr) }) // descending order
}

// Change is one page's new durable state, as a checkpoint publishes it.
type Change struct {
	PID uint64
	// Written are the frames the checkpoint writes for the page, newest
	// first; every address is above every durable one.
	Written Chain
	// Keep is the newest already-durable frame the new state still
	// reaches (0: none, the state's base is new). The new durable chain
	// is Written followed by the old chain from Keep down.
	Keep uint64
	// Removed: the page is gone (a merge); its whole chain is junk.
	Removed bool
}

// Ledger keeps each page's durable chain, as far as it is known, and turns
// checkpoint publishes into junk accounting (docs/crash-safety.md): a frame becomes
// junk when a durable newer state of its page no longer reaches it.
//
// The chains come from two places: the checkpointer, which knows what it
// writes (Plan, Apply), and the page loader, which knows what it read
// (Loaded): a whole page's load, or a point read that left the page a stub
// and read its whole chain (a peek). The engine calls Forget when it drops
// a page from memory, so the Ledger holds chains of resident pages (full
// or stub) only. Memory:
// per resident page one map entry and its chain of 16-byte extents, at
// most the durable chain's length (below 6x DeltaChainMax for a stub that
// took blind inserts; a chain read only to check liveness is not kept).
//
// Safe for concurrent use: Loaded may race with Plan and Apply. A stored
// chain is trusted only when its head equals the page's head in the
// manifest state being planned against; otherwise the Ledger reads the
// chain from disk (Walk), so a racing or stale Loaded never skews the
// accounting.
//
// A GC rewrite that consolidates a chain keeps its head but shortens it
// (Rewritten), so a head alone no longer identifies a chain: the epoch,
// a sequence count around each such commit, tells the page loader that
// the chain it read may be stale (Loaded drops it) or that a frame it
// could not read was dropped under it (Epoch.Moved: it reads again).
type Ledger struct {
	chains *xsync.MapOf[uint64, Chain]
	// epoch is odd while a rewrite that consolidates chains commits and
	// is bumped again after (Rewritten). mu makes a Loaded's check of
	// the epoch and its store one step with respect to Rewritten.
	epoch atomic.Uint64
	mu    sync.RWMutex
	// Walk reads a page's durable chain from disk, starting at head. It
	// is called by Plan and by the collector's liveness check, never by
	// Loaded.
	walk func(pid, head uint64) (Chain, error)
	// unknown and mismatched total Plan's counts of the same names over
	// the Ledger's life (Misses).
	unknown, mismatched atomic.Uint64
	// walks counts Chain's reads from disk (Walks).
	walks atomic.Uint64
}

// NewLedger returns an empty Ledger that reads unknown chains with walk.
func NewLedger(walk func(pid, head uint64) (Chain, error)) *Ledger {
	return &Ledger{chains: xsync.NewMapOf[uint64, Chain](), walk: walk}
}

// Epoch is the Ledger's rewrite epoch, sampled by a page load before it
// reads a chain.
type Epoch uint64

// Epoch returns the current epoch.
func (l *Ledger) Epoch() Epoch { return Epoch(l.epoch.Load()) }

// Moved reports whether a rewrite that consolidates chains may have
// committed since e was sampled: a chain read since then may mix frames
// from before and after it, and a frame below a consolidated base may be
// gone. The loader then reads the chain again from its head.
func (l *Ledger) Moved(e Epoch) bool { return e%2 == 1 || l.Epoch() != e }

// Loaded records the chain the page loader read for pid, having sampled
// e before the read (the hooks from the root's loadPage and peekPage). A
// chain read across a consolidating rewrite is dropped (Moved): it may
// hold frames the rewrite dropped, under the same head. Nor does a chain
// replace one with a newer head (a page's new frames take addresses above
// all its durable ones): a read that a publish overtook, or a peek of a
// stub that read only the part of the chain under the stub's written
// deltas, would otherwise replace the current chain the publish stored.
// O(1); c must not be modified afterwards.
func (l *Ledger) Loaded(pid uint64, c Chain, e Epoch) {
	if len(c) == 0 {
		return
	}
	l.mu.RLock()
	if !l.Moved(e) {
		l.chains.Compute(pid, func(old Chain, loaded bool) (Chain, bool) {
			if loaded && old.Head() > c.Head() {
				return old, false
			}
			return c, false
		})
	}
	l.mu.RUnlock()
}

// rewriting marks the start of a rewrite commit that consolidates chains
// (the epoch turns odd). Rewritten must follow, whatever the commit's
// outcome.
func (l *Ledger) rewriting() { l.epoch.Add(1) }

// Rewritten ends what rewriting began: it records the consolidated
// chains, each replacing the stored chain of its page if that has the
// same head (a page not in memory keeps no chain), and turns the epoch
// even. chains is nil when the commit failed.
func (l *Ledger) Rewritten(chains map[uint64]Chain) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for pid, c := range chains {
		l.chains.Compute(pid, func(old Chain, loaded bool) (Chain, bool) {
			if !loaded || old.Head() != c.Head() {
				return old, !loaded
			}
			return c, false
		})
	}
	l.epoch.Add(1)
}

// Forget drops pid's chain: the engine dropped the page from memory (a
// later Plan or liveness check of it reads the chain from disk). O(1).
func (l *Ledger) Forget(pid uint64) { l.chains.Delete(pid) }

// Chain returns pid's durable chain given its head in the manifest: the
// stored one if its head matches, else the one read from disk. A chain
// read from disk is not stored: the liveness check reads pages that are
// not in memory, and storing theirs would grow the Ledger past the
// resident pages (a Plan's new chains are stored by Apply).
func (l *Ledger) Chain(pid, head uint64) (Chain, error) {
	if c, ok := l.chains.Load(pid); ok && c.Head() == head {
		return c, nil
	}
	l.walks.Add(1)
	return l.walk(pid, head)
}

// Walks returns how many chains Chain has read from disk over the
// Ledger's life: the lookups the Ledger could not answer.
func (l *Ledger) Walks() uint64 { return l.walks.Load() }

// verify checks the stored chain of pid, if its head is head, against the
// chain read from disk (Env.Verify).
func (l *Ledger) verify(pid, head uint64) error {
	c, ok := l.chains.Load(pid)
	if !ok || c.Head() != head {
		return nil
	}
	disk, err := l.walk(pid, head)
	if err != nil {
		return fmt.Errorf("gc: verify page %d: %w", pid, err)
	}
	if !equalChains(c, disk) {
		return fmt.Errorf("gc: verify page %d: ledger chain %v, disk chain %v", pid, c, disk)
	}
	return nil
}

// Stored returns the chain the Ledger holds for pid, if any (tests).
func (l *Ledger) Stored(pid uint64) (Chain, bool) { return l.chains.Load(pid) }

// Len returns the number of pages whose chain the Ledger holds.
func (l *Ledger) Len() int { return l.chains.Size() }

// Plan is the accounting of one checkpoint publish, computed before its
// manifest commit and applied to the Ledger after it.
type Plan struct {
	// FileStats are the new accounting of the files that got junk, for
	// the publish's manifest edit.
	FileStats []manifest.FileMeta
	// Junk is the number of bytes that became junk.
	Junk int64
	// Unknown counts pages whose old chain could not be read, Mismatched
	// pages whose new state keeps a durable frame their old chain does not
	// hold (a bug: the chains are wrong). The junk of either is not
	// counted and the page is forgotten (a rewrite's liveness check stays
	// exact; only the choice of victims suffers).
	Unknown, Mismatched int

	chains  map[uint64]Chain // new chains (nil: forget the page)
	removed []uint64
}

// View is the part of the durable manifest state Plan and the collector
// read: *manifest.Manifest (point lookups on the live state, no copy) or a
// *manifest.State.
type View interface {
	Page(pid uint64) (uint64, bool)
	File(id manifest.FileID) (manifest.FileMeta, bool)
	FileOf(addr uint64) (manifest.FileID, bool)
}

// Plan computes which durable frames the changes make junk, attributing
// each to its file through st's address map (st is the manifest state the
// publish commits against), and the files' new live bytes. Its cost is
// O(changes + frames made junk) lookups in st. It reads a
// chain from disk only when the Ledger does not hold the page's current
// one. Live bytes never go below zero: accounting only chooses victims,
// the collector decides liveness itself.
func (l *Ledger) Plan(changes []Change, st View) *Plan {
	p := &Plan{chains: make(map[uint64]Chain, len(changes))}
	junk := map[manifest.FileID]int64{}
	for _, ch := range changes {
		var old Chain
		known := true
		if head, ok := st.Page(ch.PID); ok {
			c, err := l.Chain(ch.PID, head)
			if err != nil {
				known = false
			}
			old = c
		}
		dead, next, ok := diff(old, ch, known)
		if !known {
			p.Unknown++
		}
		if !ok {
			p.Mismatched++
		}
		count := func(addr uint64, size uint32) {
			if failpoints.Skip(failpoints.MutJunkNotRecorded) {
				return
			}
			if id, ok := st.FileOf(addr); ok {
				junk[id] += int64(size)
				p.Junk += int64(size)
			}
		}
		for _, e := range dead {
			count(e.Addr, e.Size)
		}
		// A blob of a dead frame is junk unless the new chain still
		// references it (a new base reuses the blobs of the versions it
		// keeps).
		if deadBlobs := dead.Blobs(); len(deadBlobs) > 0 {
			live := blobAddrs(next)
			for _, b := range deadBlobs {
				if !live.has(b.Addr) {
					count(b.Addr, b.Size)
				}
			}
		}
		if ch.Removed {
			p.removed = append(p.removed, ch.PID)
		} else {
			p.chains[ch.PID] = next
		}
	}
	for id, j := range junk {
		f, ok := st.File(id)
		if !ok {
			continue
		}
		f.Live = max(0, f.Live-j)
		p.FileStats = append(p.FileStats, f)
	}
	slices.SortFunc(p.FileStats, func(a, b manifest.FileMeta) int { return cmp.Compare(a.ID, b.ID) })
	l.unknown.Add(uint64(p.Unknown))
	l.mismatched.Add(uint64(p.Mismatched))
	return p
}

// diff returns the frames of old that ch makes junk and the page's new
// chain (nil when it cannot be known). old is the page's durable chain
// (nil for a page never durable); known is false when it could not be
// read, and then nothing is called junk. ok is false when ch keeps a
// durable frame old does not hold (Plan.Mismatched).
func diff(old Chain, ch Change, known bool) (dead, next Chain, ok bool) {
	switch {
	case ch.Removed:
		if known {
			dead = old
		}
		return dead, nil, true
	case ch.Keep == 0:
		if known {
			dead = old
		}
		return dead, slices.Clone(ch.Written), true
	case !known:
		return nil, nil, true
	}
	i, ok := old.index(ch.Keep)
	if !ok {
		// The state keeps a durable frame its old chain does not hold:
		// impossible if the chains are right. Count nothing, forget the
		// page (the next publish reads its chain from disk); Plan counts
		// it, and the engine's tests require none.
		return nil, nil, false
	}
	next = make(Chain, 0, len(ch.Written)+len(old)-i)
	next = append(append(next, ch.Written...), old[i:]...)
	return old[:i], next, true
}

// Misses returns, over the Ledger's life, the pages whose old chain a Plan
// could not read (unknown) and those whose old chain did not hold the
// frame the new state keeps (mismatched): publishes whose junk went
// uncounted.
func (l *Ledger) Misses() (unknown, mismatched uint64) {
	if l == nil {
		return 0, 0
	}
	return l.unknown.Load(), l.mismatched.Load()
}

// Apply records a plan's new chains once its manifest commit is durable.
func (l *Ledger) Apply(p *Plan) {
	for pid, c := range p.chains {
		if c == nil {
			l.chains.Delete(pid)
		} else {
			l.chains.Store(pid, c)
		}
	}
	for _, pid := range p.removed {
		l.chains.Delete(pid)
	}
}
