package tree

import (
	"bytes"
	"sync/atomic"

	"github.com/bwkv/bwkv/delta"
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
}

// Env is what the tree asks of the rest of the engine.
type Env struct {
	// LowUnretired returns the lowest unretired txid (retention rule).
	LowUnretired func() uint64
	// Epoch returns the current checkpoint epoch; PIDs removed in it are
	// reusable once that epoch is published (INV-P2).
	Epoch func() uint64
}

// Stats counts structure modifications.
type Stats struct {
	Consolidations, Splits, RootSplits, Merges, Restarts uint64
}

// Tree is a B-link Bw-tree. All methods are safe for concurrent use.
type Tree struct {
	pt  *pagetable.Table[node.Page]
	cfg Config
	env Env

	consolidations, splits, rootSplits, merges, restarts atomic.Uint64
}

// New returns a tree with an empty root leaf.
func New(cfg Config, env Env) *Tree {
	t := &Tree{pt: pagetable.New[node.Page](RootPID + 1), cfg: cfg, env: env}
	var bd delta.Builder
	t.pt.Slot(RootPID).Store(&node.Page{Base: bd.Finish(nil, nil, 0, 0)})
	return t
}

// Table returns the mapping table.
func (t *Tree) Table() *pagetable.Table[node.Page] { return t.pt }

// Stats returns the SMO counters.
func (t *Tree) Stats() Stats {
	return Stats{
		Consolidations: t.consolidations.Load(),
		Splits:         t.splits.Load(),
		RootSplits:     t.rootSplits.Load(),
		Merges:         t.merges.Load(),
		Restarts:       t.restarts.Load(),
	}
}

// find descends from the root to the page at level that covers key.
func (t *Tree) find(key []byte, level uint8) (pagetable.PID, *node.Page) {
restart:
	pid := RootPID
	for {
		p := t.pt.Load(pid)
		if p == nil || p.Removed || bytes.Compare(key, p.Base.Low) < 0 {
			t.restarts.Add(1)
			goto restart
		}
		b := p.Base
		if b.High != nil && bytes.Compare(key, b.High) >= 0 {
			pid = pagetable.PID(b.Sibling)
			continue
		}
		if b.Level <= level {
			if b.Level < level {
				return 0, nil // the tree is not that tall
			}
			return pid, p
		}
		_, c := b.Child(key)
		pid = pagetable.PID(c)
	}
}

// Leaf returns the leaf state covering key (for reads and iteration).
func (t *Tree) Leaf(key []byte) *node.Page {
	_, p := t.find(key, 0)
	return p
}

// LeafBelow returns the leaf holding the keys just below key: a page with
// Low < key <= High. A nil key means plus infinity (the last leaf).
func (t *Tree) LeafBelow(key []byte) *node.Page {
restart:
	pid := RootPID
	for {
		p := t.pt.Load(pid)
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
			return p
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
// aliases immutable page memory.
func (t *Tree) Get(key []byte, vis node.Visibility) ([]byte, bool) {
	return t.Leaf(key).Get(key, vis)
}

// WriteFunc decides, under the leaf's lock, what to install for a write:
// it may return an error (nothing installed) or nil delta (nothing to do).
type WriteFunc func(p *node.Page) (*delta.Delta, error)

// Write locks the leaf covering key, calls fn with its current state and
// installs the delta fn returns, consolidating, splitting or merging as
// the page's size demands.
func (t *Tree) Write(key []byte, fn WriteFunc) error {
	for {
		pid, _ := t.find(key, 0)
		slot := t.pt.Slot(pid)
		slot.Mu.Lock()
		p := slot.Load()
		if p == nil || !p.Covers(key) || p.Base.Level != 0 {
			slot.Mu.Unlock()
			t.restarts.Add(1)
			continue
		}
		d, err := fn(p)
		if err != nil || d == nil {
			slot.Mu.Unlock()
			return err
		}
		np := p.Prepend(d)
		var sp *split
		underfull := false
		if np.Len > t.cfg.ChainMax {
			np, sp, underfull = t.consolidate(pid, np)
		}
		slot.Store(np)
		slot.Mu.Unlock()
		if sp != nil {
			t.post(sp)
		}
		if underfull {
			t.tryMerge(key)
		}
		return nil
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
// underfull.
func (t *Tree) consolidate(pid pagetable.PID, p *node.Page) (*node.Page, *split, bool) {
	t.consolidations.Add(1)
	c := p.Collect(t.env.LowUnretired())
	b := p.Base
	n := c.Keys()
	if n <= t.cfg.SplitEntries {
		nb := c.Build(0, n, b.Low, b.High, b.Sibling)
		return &node.Page{Base: nb}, nil, n < t.cfg.SplitEntries/4 && pid != RootPID
	}
	k, sep := c.SplitKey()
	if pid == RootPID {
		t.rootSplits.Add(1)
		lpid, rpid := t.pt.Alloc(), t.pt.Alloc()
		t.pt.Slot(rpid).Store(&node.Page{Base: c.Build(k, n, sep, nil, 0)})
		t.pt.Slot(lpid).Store(&node.Page{Base: c.Build(0, k, nil, sep, uint64(rpid))})
		var bd delta.Builder
		bd.AddChild(nil, uint64(lpid))
		bd.AddChild(sep, uint64(rpid))
		return &node.Page{Base: bd.Finish(nil, nil, 0, 1)}, nil, false
	}
	t.splits.Add(1)
	rpid := t.pt.Alloc()
	t.pt.Slot(rpid).Store(&node.Page{Base: c.Build(k, n, sep, b.High, b.Sibling)})
	left := &node.Page{Base: c.Build(0, k, b.Low, sep, uint64(rpid))}
	return left, &split{level: 1, sep: bytes.Clone(sep), right: rpid}, false
}
