package tree

import (
	"math"

	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

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
	// EvictLongChain: read before this pass and the one before it (in
	// steady use, not just loaded and read once; the bit is cleared, the
	// page stays) and its chain is long (readLong): the caller
	// should Shorten it, which frees the versions its deltas superseded
	// and shortens the walk of every read of it.
	EvictLongChain
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
	return t.compact(pid, t.stubChainMax(), func(p *node.Page) bool { return p.Len > t.cfg.ChainMax })
}

// Squash consolidates leaf pid into a new base if its chain holds any
// delta, in memory or on disk (a carried base stands for deltas on disk),
// as Compact does. For the engine's idle settler: a durable chain
// of deltas above a base stores versions the base may repeat, and the
// next checkpoint of the consolidated page turns the whole old chain into
// junk the data-file GC reclaims.
func (t *Tree) Squash(pid pagetable.PID) error {
	return t.compact(pid, 1, func(p *node.Page) bool { return p.Len > 0 || p.Base.Carried() })
}

// Rebase consolidates leaf pid into a new base even if its chain is
// empty (reading it first if it is a stub or on disk only), so the next
// checkpoint writes the page again as one base frame. The idle settle
// uses it to rewrite compressed the pages a checkpoint stored plain.
func (t *Tree) Rebase(pid pagetable.PID) error {
	return t.compact(pid, 0, func(*node.Page) bool { return true })
}

// Shorten consolidates leaf pid if it is resident in full with a chain at
// least Config.ReadChain long or holding a quarter of a leaf's bytes
// (readLong; a stub is left alone: Compact handles its chain). For the
// evictor, on a page in steady use (EvictLongChain):
// ChainMax suits a page written as often as it is read, where a
// consolidation per few writes would cost more than the walks it saves; on
// a page read many times per write the chain's superseded values take
// cache memory and every read walks the chain, so while the cache is over
// its budget such pages are consolidated instead of being evicted.
func (t *Tree) Shorten(pid pagetable.PID) error {
	if t.cfg.ReadChain <= 0 {
		return nil
	}
	return t.compact(pid, math.MaxInt, t.readLong)
}

// readLong reports whether a leaf in steady use should be shortened: its
// chain is Config.ReadChain long, or its deltas hold a quarter of a
// leaf's bytes (Config.SplitBytes/4, whether or not the tree is large:
// with values of several KiB one or two superseded versions, which double
// the memory a read-mostly page takes and so the cache a data set needs;
// a chain of small values waits for ReadChain). O(1).
func (t *Tree) readLong(p *node.Page) bool {
	if t.cfg.ReadChain <= 0 || p.Len == 0 {
		return false
	}
	if p.Len >= t.cfg.ReadChain {
		return true
	}
	sb := t.cfg.SplitBytes
	return sb > 0 && chainBytes(p) >= sb/4
}

// compact consolidates leaf pid when a stub's chain (memory and disk)
// reaches stubMin, or need says so of its full state.
func (t *Tree) compact(pid pagetable.PID, stubMin int, need func(*node.Page) bool) error {
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
		sp, done := t.compactFull(pid, need)
		if sp != nil {
			_ = t.post(sp)
		}
		if done {
			return nil
		}
	}
	return nil
}

// compactFull consolidates pid's full state if need says so. done is
// false if the slot held a stub again (evicted meanwhile).
func (t *Tree) compactFull(pid pagetable.PID, need func(*node.Page) bool) (*split, bool) {
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
	if !need(p) {
		return nil, true
	}
	np, sp, _ := t.consolidate(pid, p, true, false)
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
	if n := slot.Unref(); n > 0 {
		if n >= 2 && p.Stub == nil && t.readLong(p) {
			return EvictLongChain
		}
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
