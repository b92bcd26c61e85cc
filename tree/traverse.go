package tree

import (
	"bytes"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

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

// find descends from the root to the page at level that covers key.
func (t *Tree) find(key []byte, level uint8) (pagetable.PID, *node.Page, error) {
	return t.findHint(key, level, nil, nil)
}

// findHint is find that also reports, through hint (if not nil), the
// first half split it crossed: a move right from a page reached from its
// parent, whose separator the parent may lack (a split posted after a
// checkpoint's cut and lost in a crash, or one whose post is in flight).
// Writers complete it (readers only follow the link).
//
// With pk set, the descent is a point access of key: a leaf with nothing
// in memory is read as loadLeaf does, which may keep a peek of key in pk.
func (t *Tree) findHint(key []byte, level uint8, hint **split, pk *Peeked) (pagetable.PID, *node.Page, error) {
restart:
	pid := RootPID
	descended := false
	leaf := false // pid is a leaf (the root may be one, but is never evicted)
	for {
		var p *node.Page
		var err error
		if leaf && pk != nil && level == 0 {
			p, err = t.loadLeaf(pid, key, pk)
		} else {
			p, err = t.load(pid)
		}
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
			leaf = b.Level == 0
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
		leaf = b.Level == 1
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
	return t.GetLeafPeeked(key, vis, nil)
}

// GetLeafPeeked is GetLeaf that records in pk (if not nil) a point read
// answered from disk (peek.go), for the caller's write of key
// (WriteAtPeeked).
func (t *Tree) GetLeafPeeked(key []byte, vis node.Visibility, pk *Peeked) ([]byte, bool, uint64, error) {
	var local Peeked
	if pk == nil {
		pk = &local
	}
	h := t.hints.of(key)
	for {
		var err error
		pid, p := t.hinted(h, key)
		if p == nil {
			if pid, p, err = t.findHint(key, 0, nil, pk); err != nil {
				return nil, false, 0, err
			}
			h.remember(pid)
		}
		if disk := pk.of(pid, p, key); p.Stub != nil && disk != nil {
			// The descent read the leaf from disk for key.
			v, ok := p.OverDisk(disk).Get(key, vis)
			return v, ok, uint64(pid), nil
		}
		if p.Stub != nil && t.peekable(p, key) {
			disk, err := t.peek(pid, p, key, vis.Low())
			if err != nil {
				return nil, false, 0, err
			}
			if disk == nil {
				continue // the page changed: find it again
			}
			pk.keep(pid, p, key, disk)
			v, ok := p.OverDisk(disk).Get(key, vis)
			return v, ok, uint64(pid), nil
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
// The engine then makes the page an eviction candidate and checks its
// budget (Env.Loaded).
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
	t.missed.Add(int64(p.Bytes()))
	if t.env.Loaded != nil {
		t.env.Loaded(pid)
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
