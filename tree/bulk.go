package tree

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

// ErrNotEmpty is returned by BulkLoad on a tree that holds entries.
var ErrNotEmpty = errors.New("tree: bulk load needs an empty tree")

// BulkLoad builds the tree bottom-up from entries in strictly increasing
// key order (next returns ok false at the end), as versions (txid, 1) that
// the caller has made visible to every reader. It is the restore path: no
// delta, consolidation or split per key, each leaf is built once, full
// (up to SplitEntries keys and SplitBytes), and published in its own hold
// of the cut gate, so checkpoints run between leaves as dirty bytes grow;
// between leaves it calls pause (backpressure and the checkpoint trigger).
// Leaves are published before any parent names them: until the inner
// levels and the root are published at the end they are unreachable, which
// only a reader of this private, half-built tree could notice (the caller
// opens it to nobody). The inner levels' separators are kept in memory:
// one key per leaf.
//
// The tree must be empty (a fresh root leaf): the result replaces the root.
func (t *Tree) BulkLoad(next func() (key, value []byte, ok bool, err error), txid uint64, pause func()) error {
	root, err := t.load(RootPID)
	if err != nil {
		return err
	}
	if root == nil || root.Base.Level != 0 || root.Base.Len() != 0 || root.Head != nil || root.Stub != nil {
		return ErrNotEmpty
	}
	seps, err := t.bulkLeaves(next, txid, pause)
	if err != nil || len(seps) == 0 {
		return err
	}
	t.bulkInner(seps, pause)
	return nil
}

// bulkLeaves builds and publishes BulkLoad's leaves, left to right, and
// returns their parent entries. A stream of one leaf (or none) needs no
// inner level: that leaf replaces the root (an empty one leaves it as it
// is), and no entries are returned.
func (t *Tree) bulkLeaves(next func() (key, value []byte, ok bool, err error), txid uint64, pause func()) ([]sepChild, error) {
	var (
		bd         delta.Builder
		n, size    int
		low        []byte // the pending leaf's first key (nil for the first leaf)
		pid        pagetable.PID
		first      = true
		seps       []sepChild // (low fence, pid) of every published leaf
		prevKey    []byte
		hasPrevKey bool
	)
	// finish publishes the pending leaf with the given high fence and
	// right sibling.
	finish := func(high []byte, sibling pagetable.PID) {
		if pid == 0 {
			pid = t.pt.Alloc()
		}
		st := node.NewState(&bd, low, high, uint64(sibling), 0)
		t.bulkInstall(pid, st)
		seps = append(seps, sepChild{low: st.Base.Low, pid: pid})
		if first {
			seps[len(seps)-1].low = nil
		}
		first = false
		pause()
	}
	for {
		key, val, ok, err := next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if hasPrevKey && bytes.Compare(key, prevKey) <= 0 {
			return nil, fmt.Errorf("tree: bulk load: key %q not above %q", key, prevKey)
		}
		prevKey, hasPrevKey = append(prevKey[:0], key...), true
		entry := len(key) + len(val) + 24
		if n > 0 && (n >= t.cfg.SplitEntries || (t.cfg.SplitBytes > 0 && size+entry > t.cfg.SplitBytes)) {
			// key starts the next leaf: the pending one ends below it.
			right := t.pt.Alloc()
			finish(key, right)
			pid, low, n, size = right, bytes.Clone(key), 0, 0
		}
		bd.Add(key, val, txid, 1, 0)
		n++
		size += entry
	}
	if n == 0 && first {
		return nil, nil // an empty stream: the empty root stays
	}
	if first {
		// One leaf: it is the root.
		t.replaceRoot(node.NewState(&bd, nil, nil, 0, 0))
		return nil, nil
	}
	finish(nil, 0)
	return seps, nil
}

// bulkInner builds and publishes the inner levels over the leaves' entries
// seps, bottom-up, until one page remains: the new root.
func (t *Tree) bulkInner(seps []sepChild, pause func()) {
	for level := uint8(1); ; level++ {
		groups := t.groupInner(seps)
		if len(groups) == 1 {
			t.replaceRoot(buildInnerSeps(groups[0], nil, nil, 0, level))
			return
		}
		pids := make([]pagetable.PID, len(groups))
		for i := range pids {
			pids[i] = t.pt.Alloc()
		}
		var up []sepChild
		for i, g := range groups {
			var high []byte
			var sib pagetable.PID
			if i+1 < len(groups) {
				high, sib = groups[i+1][0].low, pids[i+1]
			}
			t.bulkInstall(pids[i], buildInnerSeps(g, g[0].low, high, sib, level))
			up = append(up, sepChild{low: g[0].low, pid: pids[i]})
		}
		seps = up
		pause()
	}
}

// sepChild is one parent entry: a child's low fence and PID.
type sepChild struct {
	low []byte
	pid pagetable.PID
}

// groupInner splits a level's parent entries into pages of at most
// SplitEntries entries (and SplitBytes).
func (t *Tree) groupInner(seps []sepChild) [][]sepChild {
	var groups [][]sepChild
	start, size := 0, 0
	for i, s := range seps {
		entry := len(s.low) + 8 + 24
		if i > start && (i-start >= t.cfg.SplitEntries || (t.cfg.SplitBytes > 0 && size+entry > t.cfg.SplitBytes)) {
			groups = append(groups, seps[start:i])
			start, size = i, 0
		}
		size += entry
	}
	return append(groups, seps[start:])
}

func buildInnerSeps(g []sepChild, low, high []byte, sibling pagetable.PID, level uint8) *node.Page {
	var bd delta.Builder
	for _, s := range g {
		bd.AddChild(s.low, uint64(s.pid))
	}
	return node.NewState(&bd, low, high, uint64(sibling), level)
}

// bulkInstall publishes a new page built by BulkLoad in one hold of the gate.
func (t *Tree) bulkInstall(pid pagetable.PID, st *node.Page) {
	tok := t.env.Gens.Enter()
	slot := t.pt.Slot(pid)
	slot.Mu.Lock()
	t.publish(slot, pid, nil, t.addrPage(st), 1)
	slot.Mu.Unlock()
	t.env.Gens.Exit(tok)
}

// replaceRoot publishes st as the root's new state.
func (t *Tree) replaceRoot(st *node.Page) {
	tok := t.env.Gens.Enter()
	slot := t.pt.Slot(RootPID)
	slot.Mu.Lock()
	t.publish(slot, RootPID, slot.Load(), t.addrPage(st), 1)
	slot.Mu.Unlock()
	t.env.Gens.Exit(tok)
}
