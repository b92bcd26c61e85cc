package tree

import (
	"bytes"
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
	// SplitBytes bounds a leaf's key and value bytes as well: a leaf of
	// large values splits before it reaches SplitEntries keys, so a
	// consolidation never copies much more than this (0: no byte bound).
	SplitBytes int
}

// tooBig reports whether consolidated contents must split.
func (t *Tree) tooBig(c *node.Contents) bool {
	return c.Keys() > t.cfg.SplitEntries || (t.cfg.SplitBytes > 0 && c.Bytes() > t.cfg.SplitBytes && c.Keys() >= 2)
}

// underfull reports whether consolidated contents should merge.
func (t *Tree) underfull(c *node.Contents) bool {
	return c.Keys() < t.cfg.SplitEntries/4 && (t.cfg.SplitBytes == 0 || c.Bytes() < t.cfg.SplitBytes/4)
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
	// Loaded, if set, runs after a page read from disk was installed
	// (the engine checks its cache budget).
	Loaded func()
	// WantCompact, if set, is told of a stub leaf whose chain reached
	// 3x ChainMax: the engine runs Compact on it in the background, so
	// blind inserts never wait for the full read (nil: the writer reads
	// and consolidates at twice that length).
	WantCompact func(pid pagetable.PID)
}

// Stats counts structure modifications.
type Stats struct {
	Consolidations, Splits, RootSplits, Merges, Restarts, Loads uint64
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

	consolidations, splits, rootSplits, merges, restarts, loads atomic.Uint64
	hits                                                        hitCounter
	siblingHops                                                 hitCounter // sharded: every scan crossing a leaf adds
	// stubBytes is the memory of resident stubs (node.Stub.Own).
	stubBytes atomic.Int64
}

// New returns a tree over pt. If pt has no root, an empty root leaf is
// created (dirty in the hot generation).
func New(cfg Config, env Env, pt *pagetable.Table[node.Page]) *Tree {
	t := &Tree{pt: pt, cfg: cfg, env: env}
	slot := pt.Slot(RootPID)
	if slot.Load() == nil && slot.Disk.Load() == 0 {
		var bd delta.Builder
		tok := env.Gens.Enter()
		t.publish(slot, RootPID, nil, &node.Page{Base: t.addr(bd.Finish(nil, nil, 0, 0))}, 1)
		env.Gens.Exit(tok)
	}
	return t
}

// Stats returns the SMO counters.
func (t *Tree) Stats() Stats {
	return Stats{
		Consolidations: t.consolidations.Load(),
		Splits:         t.splits.Load(),
		RootSplits:     t.rootSplits.Load(),
		Merges:         t.merges.Load(),
		Restarts:       t.restarts.Load(),
		Loads:          t.loads.Load(),
		Hits:           t.hits.sum(),
		SiblingHops:    t.siblingHops.sum(),
	}
}

// addr gives a new base its frame address.
func (t *Tree) addr(b *delta.Base) *delta.Base {
	b.Addr = t.env.Gens.NextAddr()
	return b
}

// publish marks pid dirty and installs st. Inside the gate, under the
// page's lock (or with the PID not yet reachable).
func (t *Tree) publish(slot *pagetable.Slot[node.Page], pid pagetable.PID, old, st *node.Page, frames int) {
	size := 0
	if frames > 0 {
		if st.Head != nil && (old == nil || st.Base == old.Base) {
			size = st.Head.Size()
		} else {
			size = st.Base.Bytes()
		}
	}
	t.env.Gens.Touch(slot, pid, old, frames, size)
	t.pt.Account(slot, int64(st.Bytes()), st.Base.Level > 0)
	slot.Store(st)
}

// load returns pid's state, reading it from disk on first touch. nil
// means the PID is unmapped.
func (t *Tree) load(pid pagetable.PID) (*node.Page, error) {
	slot := t.pt.Lookup(pid)
	if slot == nil {
		return nil, nil
	}
	if p := slot.Load(); p != nil {
		slot.Touched()
		t.hits.add()
		return p, nil
	}
	return t.loadSlow(slot, pid)
}

// loadSlow reads an unloaded page. The read runs without locks; the
// install takes the page lock and succeeds only if the slot still names
// the address read: a page evicted again meanwhile (a newer address) is
// read again, never installed stale.
func (t *Tree) loadSlow(slot *pagetable.Slot[node.Page], pid pagetable.PID) (*node.Page, error) {
	for {
		addr := slot.Disk.Load()
		if p := slot.Load(); p != nil {
			return p, nil
		}
		if addr == 0 || t.env.Load == nil {
			return nil, nil
		}
		p, err := t.env.Load(pid, addr)
		if err != nil {
			if slot.Load() != nil || slot.Disk.Load() != addr {
				// The page moved on while we read: its old frames may
				// be junk the data-file GC already reclaimed. Retry.
				continue
			}
			return nil, err
		}
		slot.Mu.Lock()
		cur := slot.Load()
		if cur == nil && slot.Disk.Load() == addr {
			t.install(slot, pid, p)
			return p, nil
		}
		slot.Mu.Unlock()
		if cur != nil {
			return cur, nil
		}
	}
}

// Evicted is the outcome of Evict.
type Evicted int

// Evict outcomes.
const (
	// EvictStubbed: the leaf's entries were dropped; a stub (fences, key
	// filter, durable head) stays and takes blind inserts.
	EvictStubbed Evicted = iota
	// EvictDropped: a stub with nothing in memory was dropped; the slot
	// names its durable head.
	EvictDropped
	// EvictReferenced: read since the last pass; the bit is cleared and
	// the page stays (a second chance).
	EvictReferenced
	// EvictSkipped: not evictable now (dirty, an inner page, the root,
	// removed or unloaded); it becomes a candidate again when its dirty
	// generation is published or it is loaded.
	EvictSkipped
)

// Compact consolidates pid if it is a leaf with a long chain: a stub is
// read in full first (without locks), then the consolidation (and any
// split it causes) is one atomic unit in the cut gate, as in a write.
// For the engine's background worker; a page that changed meanwhile is
// re-examined, and one that no longer needs it is left alone.
func (t *Tree) Compact(pid pagetable.PID) error {
	return t.compact(pid, t.stubChainMax(), t.cfg.ChainMax)
}

// Squash consolidates leaf pid if its chain holds any delta, in memory or
// on disk, as Compact does. For the engine's idle settler: a durable chain
// of deltas above a base stores versions the base may repeat, and the
// next checkpoint of the consolidated page turns the whole old chain into
// junk the data-file GC reclaims.
func (t *Tree) Squash(pid pagetable.PID) error { return t.compact(pid, 1, 0) }

// compact consolidates leaf pid when a stub's chain (memory and disk)
// reaches stubMin, or a full page's chain is longer than fullMax.
func (t *Tree) compact(pid pagetable.PID, stubMin, fullMax int) error {
	for tries := 0; tries < 4; tries++ {
		p, err := t.load(pid)
		if err != nil || p == nil || p.Removed || p.Base.Level != 0 {
			return err
		}
		if p.Stub != nil {
			if p.Len+p.Stub.DiskLen < stubMin {
				return nil
			}
			f, err := t.fullOnce(pid, p)
			if err != nil {
				return err
			}
			if f == nil {
				continue
			}
		}
		sp, done := t.compactFull(pid, fullMax)
		if sp != nil {
			_ = t.post(sp)
		}
		if done {
			return nil
		}
	}
	return nil
}

// compactFull consolidates pid's full state if its chain is longer than
// maxLen. done is false if the slot held a stub again (evicted meanwhile).
func (t *Tree) compactFull(pid pagetable.PID, maxLen int) (*split, bool) {
	tok := t.env.Gens.Enter()
	defer t.env.Gens.Exit(tok)
	slot := t.pt.Slot(pid)
	slot.Mu.Lock()
	defer slot.Mu.Unlock()
	p := slot.Load()
	if p == nil || p.Removed || p.Base.Level != 0 {
		return nil, true
	}
	if p.Stub != nil {
		return nil, false
	}
	if p.Len <= maxLen {
		return nil, true
	}
	np, sp, _ := t.consolidate(pid, p)
	t.publish(slot, pid, p, np, 1)
	return sp, true
}

// stubChainMax is the chain length (in memory and on disk) at which a
// stub leaf is handed to the background compaction (WantCompact); at twice
// it the next writer reads it in full and consolidates it itself.
func (t *Tree) stubChainMax() int { return 3 * t.cfg.ChainMax }

// Evict shrinks pid's state if every frame of it is durable: a leaf
// becomes a stub (node.Stub), a stub with no chain in memory is dropped,
// and the next touch reloads what it needs from the data files (INV-M1:
// the old state's memory is not reused; readers holding it keep reading
// it). Only leaves are evicted. Takes the page lock; no frame is produced,
// so it needs no cut gate. O(page).
func (t *Tree) Evict(pid pagetable.PID, dropStubs bool) Evicted {
	if pid == RootPID {
		return EvictSkipped
	}
	slot := t.pt.Lookup(pid)
	if slot == nil {
		return EvictSkipped
	}
	slot.Mu.Lock()
	defer slot.Mu.Unlock()
	p := slot.Load()
	if p == nil || p.Removed || p.Base.Level != 0 || !t.env.Gens.Clean(slot) {
		return EvictSkipped
	}
	head := p.Base.Addr
	if p.Head != nil {
		head = p.Head.Addr
	}
	if head == 0 || head > t.env.Gens.Published() {
		return EvictSkipped
	}
	if slot.Ref.Load() != 0 {
		slot.Ref.Store(0)
		return EvictReferenced
	}
	if p.Stub != nil && p.Head == nil {
		if !dropStubs {
			return EvictSkipped
		}
		slot.Disk.Store(head)
		t.pt.Account(slot, 0, false)
		slot.Store(nil)
		t.stubBytes.Add(-int64(p.Bytes()))
		return EvictDropped
	}
	st := node.NewStub(p, head)
	if p.Stub != nil {
		t.stubBytes.Add(-int64(p.Stub.Own))
	}
	t.stubBytes.Add(int64(st.Stub.Own))
	t.pt.Account(slot, int64(st.Bytes()), false)
	slot.Store(st)
	return EvictStubbed
}

// StubBytes returns the memory held by stubs themselves (their chains not
// included).
func (t *Tree) StubBytes() int64 { return t.stubBytes.Load() }

// find descends from the root to the page at level that covers key.
func (t *Tree) find(key []byte, level uint8) (pagetable.PID, *node.Page, error) {
	return t.findHint(key, level, nil)
}

// findHint is find that also reports, through hint (if not nil), the
// first half split it crossed: a move right from a page reached from its
// parent, whose separator the parent may lack (a split posted after a
// checkpoint's cut and lost in a crash, or one whose post is in flight).
// Writers complete it (readers only follow the link).
func (t *Tree) findHint(key []byte, level uint8, hint **split) (pagetable.PID, *node.Page, error) {
restart:
	pid := RootPID
	descended := false
	for {
		p, err := t.load(pid)
		if err != nil {
			return 0, nil, err
		}
		if p == nil || p.Removed || bytes.Compare(key, p.Base.Low) < 0 {
			t.restarts.Add(1)
			goto restart
		}
		b := p.Base
		if b.High != nil && bytes.Compare(key, b.High) >= 0 {
			if hint != nil && *hint == nil && descended {
				*hint = &split{level: b.Level + 1, sep: bytes.Clone(b.High), right: pagetable.PID(b.Sibling)}
			}
			descended = false
			pid = pagetable.PID(b.Sibling)
			continue
		}
		if b.Level <= level {
			if b.Level < level {
				return 0, nil, nil // the tree is not that tall
			}
			return pid, p, nil
		}
		_, c := b.Child(key)
		pid = pagetable.PID(c)
		descended = true
	}
}

// Leaf returns the leaf state covering key, with every entry in memory
// (for iteration).
func (t *Tree) Leaf(key []byte) (*node.Page, error) {
	for {
		pid, p, err := t.find(key, 0)
		if err != nil || p == nil || p.Stub == nil {
			return p, err
		}
		if f, err := t.fullOnce(pid, p); err != nil || f != nil {
			return f, err
		}
	}
}

// RightLeaf returns the leaf with PID sibling, with every entry in
// memory, if it is live and starts at low: the right sibling of a leaf
// whose high fence is low, reached by its B-link instead of a descent
// from the root. It returns nil (and no error) when that no longer holds
// (the sibling was merged away, or its PID freed or reused): the caller
// then descends with Leaf(low). A sibling that split since still starts at
// low and is the right leaf: its moved half follows by its own link.
func (t *Tree) RightLeaf(sibling uint64, low []byte) (*node.Page, error) {
	if sibling == 0 {
		return nil, nil
	}
	pid := pagetable.PID(sibling)
	p, err := t.load(pid)
	if err != nil || p == nil || p.Removed || p.Base.Level != 0 || !bytes.Equal(p.Base.Low, low) {
		return nil, err
	}
	t.siblingHops.addExact()
	if p.Stub == nil {
		return p, nil
	}
	return t.fullOnce(pid, p)
}

// LeafBelow returns the leaf holding the keys just below key: a page with
// Low < key <= High, with every entry in memory. A nil key means plus
// infinity (the last leaf).
func (t *Tree) LeafBelow(key []byte) (*node.Page, error) {
restart:
	pid := RootPID
	for {
		p, err := t.load(pid)
		if err != nil {
			return nil, err
		}
		if p == nil || p.Removed {
			t.restarts.Add(1)
			goto restart
		}
		b := p.Base
		if key != nil && len(b.Low) > 0 && bytes.Compare(b.Low, key) >= 0 {
			t.restarts.Add(1)
			goto restart
		}
		if b.High != nil && (key == nil || bytes.Compare(b.High, key) < 0) {
			pid = pagetable.PID(b.Sibling)
			continue
		}
		if b.Level == 0 {
			if p.Stub == nil {
				return p, nil
			}
			f, err := t.fullOnce(pid, p)
			if err != nil || f != nil {
				return f, err
			}
			goto restart
		}
		if key == nil {
			pid = pagetable.PID(b.ChildAt(b.Len() - 1))
		} else {
			_, c := b.ChildBelow(key)
			pid = pagetable.PID(c)
		}
	}
}

// Get returns the newest version of key visible under vis. The value
// aliases immutable page memory. A stub leaf answers without a disk read
// when its filter rules the key out.
func (t *Tree) Get(key []byte, vis node.Visibility) ([]byte, bool, error) {
	v, ok, _, err := t.GetLeaf(key, vis)
	return v, ok, err
}

// GetLeaf is Get that also returns the PID of the leaf that answered: a
// hint for a write of the same key (WriteAt), valid or not by then.
func (t *Tree) GetLeaf(key []byte, vis node.Visibility) ([]byte, bool, uint64, error) {
	for {
		pid, p, err := t.find(key, 0)
		if err != nil {
			return nil, false, 0, err
		}
		if p.MayContain(key) {
			if p, err = t.fullOnce(pid, p); err != nil {
				return nil, false, 0, err
			}
			if p == nil {
				continue // the page changed: find it again
			}
		}
		v, ok := p.Get(key, vis)
		return v, ok, uint64(pid), nil
	}
}

// fullOnce replaces the stub state p of pid by its full state: the durable
// state read from disk (without locks) with p's chain replayed on top,
// installed under the page lock if the slot still holds p. It returns nil
// (and no error) if the slot changed meanwhile: the caller finds the page
// again. Not a frame-producing action: the full state holds the same
// frames (INV-C2 unaffected).
func (t *Tree) fullOnce(pid pagetable.PID, p *node.Page) (*node.Page, error) {
	slot := t.pt.Slot(pid)
	disk, err := t.env.Load(pid, p.Base.Addr)
	if err != nil {
		if slot.Load() != p {
			// The page moved on while we read (its old frames may be
			// junk the data-file GC reclaimed): the caller finds it again.
			return nil, nil
		}
		return nil, err
	}
	slot.Mu.Lock()
	if slot.Load() != p {
		slot.Mu.Unlock()
		return nil, nil
	}
	f := replay(disk, p)
	t.stubBytes.Add(-int64(p.Stub.Own))
	t.install(slot, pid, f)
	return f, nil
}

// install publishes a state read from disk: called with the page lock
// held (and releases it), once the caller checked the slot is unchanged.
// The page becomes an eviction candidate and the engine checks its budget.
func (t *Tree) install(slot *pagetable.Slot[node.Page], pid pagetable.PID, p *node.Page) {
	t.pt.Account(slot, int64(p.Bytes()), p.Base.Level > 0)
	// The loader is about to use the page: it starts with its reference
	// bit set, so an eviction pass run by the loader itself (a read-only
	// DB evicts in Loaded, below) cannot drop it before the loader's
	// write or read takes it (it would reload it and evict it again,
	// forever).
	slot.Touched()
	slot.Store(p)
	slot.Mu.Unlock()
	t.loads.Add(1)
	t.pt.Enqueue(pid)
	if t.env.Loaded != nil {
		t.env.Loaded()
	}
}

// replay prepends copies of stub's chain deltas, oldest first, to the
// durable state disk (the stub's deltas stay untouched: readers may be
// walking them).
func replay(disk, stub *node.Page) *node.Page {
	ds := make([]*delta.Delta, 0, stub.Len)
	for d := stub.Head; d != nil; d = d.Next {
		ds = append(ds, d)
	}
	f := disk
	for i := len(ds) - 1; i >= 0; i-- {
		c := *ds[i]
		c.Next = nil
		f = f.Prepend(&c)
	}
	return f
}

// WriteFunc decides, under the leaf's lock, what to install for a write:
// it may return an error (nothing installed) or nil delta (nothing to do).
type WriteFunc func(p *node.Page) (*delta.Delta, error)

// Write locks the leaf covering key, calls fn with its current state and
// installs the delta fn returns, consolidating, splitting or merging as
// the page's size demands. The install and any split it causes are one
// atomic unit inside the cut gate.
func (t *Tree) Write(key []byte, fn WriteFunc) error {
	return t.WriteAt(key, 0, fn)
}

// WriteAt is Write starting from leaf, the PID a read of key found
// (GetLeaf; 0: none): if that page still covers key it is the leaf to
// lock, and the descent from the root is skipped. A stale hint (the page
// split, merged or its PID was reused) costs one lock and a fence check.
func (t *Tree) WriteAt(key []byte, leaf uint64, fn WriteFunc) error {
	sp, underfull, err := t.write(key, pagetable.PID(leaf), fn)
	if err != nil {
		return err
	}
	// The write is installed: what follows only completes structure
	// changes. If a page read fails there, the half split stays (traversal
	// follows the sibling link) or the merge is skipped; the write's
	// caller must not see an error for a write that happened.
	if sp != nil {
		_ = t.post(sp)
	}
	if underfull {
		_ = t.tryMerge(key)
	}
	return nil
}

func (t *Tree) write(key []byte, leaf pagetable.PID, fn WriteFunc) (*split, bool, error) {
	tok := t.env.Gens.Enter()
	defer t.env.Gens.Exit(tok)
	for {
		var hint *split
		pid, hinted := leaf, leaf != 0
		if !hinted {
			var err error
			if pid, _, err = t.findHint(key, 0, &hint); err != nil {
				return nil, false, err
			}
		}
		leaf = 0 // a retry descends
		slot := t.pt.Slot(pid)
		slot.Mu.Lock()
		p := slot.Load()
		if p == nil || !p.Covers(key) || p.Base.Level != 0 {
			slot.Mu.Unlock()
			if !hinted {
				t.restarts.Add(1)
			}
			continue
		}
		if p.Stub != nil && (p.MayContain(key) || p.Len+p.Stub.DiskLen >= 2*t.stubChainMax()) {
			// The key may have versions on disk (its old value and the
			// conflict check need them), or the chain outgrew what the
			// background compaction keeps up with: read the full page.
			// Otherwise the write is a blind insert onto the stub.
			slot.Mu.Unlock()
			if _, err := t.fullOnce(pid, p); err != nil {
				return nil, false, err
			}
			continue
		}
		d, err := fn(p)
		if err != nil || d == nil {
			slot.Mu.Unlock()
			return nil, false, err
		}
		d.Addr = t.env.Gens.NextAddr()
		np := p.Prepend(d)
		var sp *split
		underfull := false
		frames := 1
		if np.Len > t.cfg.ChainMax && np.Stub == nil {
			np, sp, underfull = t.consolidate(pid, np)
			frames = 2 // the delta and the base that absorbed it
		}
		t.publish(slot, pid, p, np, frames)
		slot.Mu.Unlock()
		if np.Stub != nil && np.Len+np.Stub.DiskLen >= t.stubChainMax() && t.env.WantCompact != nil {
			t.env.WantCompact(pid)
		}
		if sp == nil {
			sp = hint // complete a half split met on the way (idempotent)
		}
		return sp, underfull, nil
	}
}

// split describes a separator to post in the parent level.
type split struct {
	level uint8
	sep   []byte
	right pagetable.PID
}

// consolidate builds a new base for a locked leaf, splitting it if it
// holds more than SplitEntries keys. It returns the state to publish for
// pid, the separator to post (nil if none) and whether the page is
// underfull. New pages it creates are published here.
func (t *Tree) consolidate(pid pagetable.PID, p *node.Page) (*node.Page, *split, bool) {
	t.consolidations.Add(1)
	c := p.Collect(t.env.Retention)
	b := p.Base
	n := c.Keys()
	if !t.tooBig(c) {
		nb := t.addr(c.Build(0, n, b.Low, b.High, b.Sibling))
		return &node.Page{Base: nb}, nil, t.underfull(c) && pid != RootPID
	}
	k, sep := c.SplitKey()
	if pid == RootPID {
		t.rootSplits.Add(1)
		lpid, rpid := t.pt.Alloc(), t.pt.Alloc()
		t.publish(t.pt.Slot(rpid), rpid, nil, &node.Page{Base: t.addr(c.Build(k, n, sep, nil, 0))}, 1)
		t.publish(t.pt.Slot(lpid), lpid, nil, &node.Page{Base: t.addr(c.Build(0, k, nil, sep, uint64(rpid)))}, 1)
		var bd delta.Builder
		bd.AddChild(nil, uint64(lpid))
		bd.AddChild(sep, uint64(rpid))
		return &node.Page{Base: t.addr(bd.Finish(nil, nil, 0, 1))}, nil, false
	}
	t.splits.Add(1)
	rpid := t.pt.Alloc()
	t.publish(t.pt.Slot(rpid), rpid, nil, &node.Page{Base: t.addr(c.Build(k, n, sep, b.High, b.Sibling))}, 1)
	left := &node.Page{Base: t.addr(c.Build(0, k, b.Low, sep, uint64(rpid)))}
	return left, &split{level: 1, sep: bytes.Clone(sep), right: rpid}, false
}
