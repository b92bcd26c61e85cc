package tree

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/generation"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

// RootPID is the fixed PID of the root page.
const RootPID pagetable.PID = 1

// Config sizes pages.
type Config struct {
	// SplitEntries is the number of distinct keys above which a page
	// splits (leaves and inner pages alike).
	SplitEntries int
	// ChainMax is the delta-chain length above which a leaf consolidates.
	ChainMax int
	// ReadChain is the chain length at which Evict reports a leaf read
	// since the last eviction pass as EvictLongChain, for the evictor to
	// Shorten it (0: never).
	ReadChain int
	// SplitBytes bounds a leaf's key and value bytes as well: a leaf of
	// large values splits before it reaches SplitEntries keys, so a
	// consolidation never copies much more than this (0: no byte bound).
	SplitBytes int
	// SmallSplitBytes, if positive, replaces SplitBytes while the tree is
	// marked large (SetLarge): its data far outgrows the cache, most
	// reads load their leaf from disk, and a smaller leaf is a smaller
	// read and decode per miss.
	SmallSplitBytes int
	// Carry lets a writer's consolidation leave the leaf's frames on
	// disk as they are (carryOf): the next checkpoint then writes the
	// page's new deltas, not a new base, until the on-disk chain reaches
	// its bound.
	Carry bool
}

// SetLarge says whether the data far outgrows the cache: while it does,
// leaves split and merge by SmallSplitBytes instead of SplitBytes (pages
// change size as they are next consolidated; nothing is rewritten for
// it). The engine decides after each publish from the data files' live
// bytes.
func (t *Tree) SetLarge(large bool) { t.large.Store(large) }

// Large reports what SetLarge last said.
func (t *Tree) Large() bool { return t.large.Load() }

// splitBytes is the leaf byte bound now (0: none).
func (t *Tree) splitBytes() int {
	if t.cfg.SmallSplitBytes > 0 && t.large.Load() {
		return t.cfg.SmallSplitBytes
	}
	return t.cfg.SplitBytes
}

// tooBig reports whether consolidated contents must split.
func (t *Tree) tooBig(c *node.Contents) bool {
	sb := t.splitBytes()
	return c.Keys() > t.cfg.SplitEntries || (sb > 0 && c.Bytes() > sb && c.Keys() >= 2)
}

// underfull reports whether consolidated contents should merge.
func (t *Tree) underfull(c *node.Contents) bool {
	sb := t.splitBytes()
	return c.Keys() < t.cfg.SplitEntries/4 && (sb == 0 || c.Bytes() < sb/4)
}

// Env is what the tree asks of the rest of the engine.
type Env struct {
	// Retention answers consolidation's questions about transactions
	// (node.Retention: the retention rule).
	Retention node.Retention
	// Gens is the generational pool: the cut gate, addresses, dirty sets.
	Gens *generation.Manager
	// Load reads a page's state from its newest durable frame (nil: the
	// tree has no pages on disk).
	Load func(pid pagetable.PID, addr uint64) (*node.Page, error)
	// Loaded, if set, runs after page pid was read from disk and
	// installed: the page cache makes it an eviction candidate and checks
	// its budget (cache.Cache.Loaded).
	Loaded func(pid pagetable.PID)
	// WantCompact, if set, is told of a stub leaf whose chain reached
	// 3x ChainMax: the engine runs Compact on it in the background, so
	// blind inserts never wait for the full read (nil: the writer reads
	// and consolidates at twice that length).
	WantCompact func(pid pagetable.PID)
	// Peek, if set, is the point read of key in a leaf's durable chain
	// from addr (the engine's delta.PeekFrame over the chain's frames),
	// reading only the frames chain says may hold key (nil: every frame). A
	// point read or write of a leaf not in memory that the cache does not
	// admit (Admit) uses it instead of loading the page (nil: every such
	// access loads it). With an index (chain) and low > 0, the read may
	// end at the first version of key that no newer CLR on disk masks and
	// whose txid is below low (retired: every reader sees it or a newer
	// one, and a writer's check stops at it); the result then has no
	// fences and serves key's lookups only.
	Peek func(pid pagetable.PID, addr uint64, key []byte, chain *node.DiskChain, low uint64) (Peek, error)
	// Admit decides at a point access's miss on leaf stub s (nil: a leaf
	// with nothing in memory) whether the page is loaded and cached
	// (true) or searched on disk and left there (false). Required with
	// Peek.
	Admit func(s *node.Stub) bool
}

// Stats counts structure modifications.
type Stats struct {
	Consolidations, Splits, RootSplits, Merges, Restarts, Loads uint64
	// Carried counts the consolidations, among Consolidations, that made
	// a carried base (written as the page's deltas, not as a base).
	Carried uint64
	// Peeks counts point reads and writes of stub leaves answered from
	// disk without loading the page (Env.Peek).
	Peeks uint64
	// Hits counts page visits that found the page resident (sampled: an
	// estimate, see hitCounter).
	Hits uint64
	// SiblingHops counts iterator leaf crossings made by a right-sibling
	// link instead of a descent from the root (RightLeaf).
	SiblingHops uint64
}

// Tree is a B-link Bw-tree. All methods are safe for concurrent use.
type Tree struct {
	pt  *pagetable.Table[node.Page]
	cfg Config
	env Env

	consolidations, splits, rootSplits, merges, restarts, loads, peeks atomic.Uint64
	carriedN                                                           atomic.Uint64 // consolidations that made a carried base (carryOf)
	large                                                              atomic.Bool   // SetLarge
	hits                                                               hitCounter
	siblingHops                                                        hitCounter // sharded: every scan crossing a leaf adds
	// stubBytes is the memory of resident stubs (node.Stub.Own); missed
	// the bytes of pages read from disk, loaded or peeked (MissedBytes).
	stubBytes, missed atomic.Int64
	// hints are the leaves point reads ended at (hint.go).
	hints leafHints
}

// Map records in pt, before New, each page's newest durable frame (the
// manifest's page map, PID -> address): the page is read on first touch.
// Slot.Disk is the tree's to write; this is how the engine's open sets it.
func Map(pt *pagetable.Table[node.Page], pages map[uint64]uint64) {
	for pid, addr := range pages {
		pt.Slot(pagetable.PID(pid)).Disk.Store(addr)
	}
}

// New returns a tree over pt. If pt has no root, an empty root leaf is
// created (dirty in the hot generation).
func New(cfg Config, env Env, pt *pagetable.Table[node.Page]) *Tree {
	t := &Tree{pt: pt, cfg: cfg, env: env}
	t.hints.seed = maphash.MakeSeed()
	slot := pt.Slot(RootPID)
	if slot.Load() == nil && slot.Disk.Load() == 0 {
		var bd delta.Builder
		tok := env.Gens.Enter()
		t.publish(slot, RootPID, nil, t.addrPage(node.NewState(&bd, nil, nil, 0, 0)), 1)
		env.Gens.Exit(tok)
	}
	return t
}

// Stats returns the SMO counters.
func (t *Tree) Stats() Stats {
	return Stats{
		Consolidations: t.consolidations.Load(),
		Carried:        t.carriedN.Load(),
		Splits:         t.splits.Load(),
		RootSplits:     t.rootSplits.Load(),
		Merges:         t.merges.Load(),
		Restarts:       t.restarts.Load(),
		Loads:          t.loads.Load(),
		Peeks:          t.peeks.Load(),
		Hits:           t.hits.sum(),
		SiblingHops:    t.siblingHops.sum(),
	}
}

// addr gives a new base its frame address.
func (t *Tree) addr(b *delta.Base) *delta.Base {
	b.Addr = t.env.Gens.NextAddr()
	return b
}

// addrPage gives state p's base (new, not yet published) its address.
func (t *Tree) addrPage(p *node.Page) *node.Page {
	t.addr(p.Base)
	return p
}

// publish marks pid dirty and installs st. Inside the gate, under the
// page's lock (or with the PID not yet reachable).
func (t *Tree) publish(slot *pagetable.Slot[node.Page], pid pagetable.PID, old, st *node.Page, frames int) {
	size := 0
	carried := old != nil && st.Base != old.Base && st.Base.Carried()
	if frames > 0 {
		switch {
		case st.Head != nil && (old == nil || st.Base == old.Base):
			size = st.Head.Size()
		case carried:
			// A writer's carried consolidation: the base is never
			// written, the deltas it absorbed were counted when they
			// were installed, all but the writer's new one, the newest
			// frame of the state.
			if st.Head != nil {
				size = st.Head.Size()
			} else if pd := st.Base.Carry().Pending(); len(pd) > 0 {
				size = pd[0].Size()
			}
		default:
			size = st.Base.Bytes()
		}
	}
	replaced := old != nil && frames > 0 && st.Base != old.Base && !carried
	t.env.Gens.Touch(slot, pid, old, frames, size, replaced)
	t.pt.Account(slot, int64(st.Bytes()), st.Base.Level > 0)
	slot.Store(st)
}
