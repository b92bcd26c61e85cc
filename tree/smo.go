package tree

import (
	"bytes"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

// innerEntries copies an inner page's entries with (sep, child) inserted at
// index at (at < 0: nothing inserted) and index skip removed (-1: none).
func innerEntries(b *delta.Base, at int, sep []byte, child uint64, skip int) ([][]byte, []uint64) {
	keys := make([][]byte, 0, b.Len()+1)
	kids := make([]uint64, 0, b.Len()+1)
	for i := 0; i <= b.Len(); i++ {
		if i == at {
			keys = append(keys, sep)
			kids = append(kids, child)
		}
		if i == b.Len() {
			break
		}
		if i == skip {
			continue
		}
		keys = append(keys, b.KeyAt(i))
		kids = append(kids, b.ChildAt(i))
	}
	return keys, kids
}

func buildInner(keys [][]byte, kids []uint64, low, high []byte, sibling uint64, level uint8) *node.Page {
	var bd delta.Builder
	for i := range keys {
		bd.AddChild(keys[i], kids[i])
	}
	return node.NewState(&bd, low, high, sibling, level)
}

// post inserts a split's separator into the page one level up, splitting
// that page in turn when it overflows. It holds one lock at a time.
func (t *Tree) post(sp *split) error {
	for sp != nil {
		var err error
		if sp, err = t.postOnce(sp); err != nil {
			return err
		}
	}
	return nil
}

// postOnce is one atomic unit: it holds the cut gate once.
func (t *Tree) postOnce(sp *split) (*split, error) {
	tok := t.env.Gens.Enter()
	defer t.env.Gens.Exit(tok)
	for {
		pid, _, err := t.find(sp.sep, sp.level)
		if err != nil {
			return nil, err
		}
		if pid == 0 {
			// The tree has no page at this level: only possible if the
			// split page was the root, which splits in place. Nothing to do.
			return nil, nil
		}
		slot := t.pt.Slot(pid)
		slot.Mu.Lock()
		p := slot.Load()
		if p == nil || !p.Covers(sp.sep) || p.Base.Level != sp.level {
			slot.Mu.Unlock()
			t.restarts.Add(1)
			continue
		}
		b := p.Base
		i, _ := b.Child(sp.sep)
		if bytes.Equal(b.KeyAt(i), sp.sep) {
			slot.Mu.Unlock() // already posted
			return nil, nil
		}
		// The new child must still be the live page starting at sep one
		// level down (a hint from a traversal may be stale). A merge could
		// only remove it through this parent, whose lock we hold.
		if cp, err := t.load(sp.right); err != nil || cp == nil || cp.Removed ||
			!bytes.Equal(cp.Base.Low, sp.sep) || cp.Base.Level+1 != sp.level {
			slot.Mu.Unlock()
			return nil, err
		}
		keys, kids := innerEntries(b, i+1, sp.sep, uint64(sp.right), -1)
		if len(keys) <= t.cfg.SplitEntries {
			t.publish(slot, pid, p, t.addrPage(buildInner(keys, kids, b.Low, b.High, b.Sibling, b.Level)), 1)
			slot.Mu.Unlock()
			return nil, nil
		}
		k := len(keys) / 2
		sep := keys[k]
		if pid == RootPID {
			t.rootSplits.Add(1)
			lpid, rpid := t.pt.Alloc(), t.pt.Alloc()
			t.publish(t.pt.Slot(rpid), rpid, nil, t.addrPage(buildInner(keys[k:], kids[k:], sep, nil, 0, b.Level)), 1)
			t.publish(t.pt.Slot(lpid), lpid, nil, t.addrPage(buildInner(keys[:k], kids[:k], nil, sep, uint64(rpid), b.Level)), 1)
			var bd delta.Builder
			bd.AddChild(nil, uint64(lpid))
			bd.AddChild(sep, uint64(rpid))
			t.publish(slot, pid, p, t.addrPage(node.NewState(&bd, nil, nil, 0, b.Level+1)), 1)
			slot.Mu.Unlock()
			return nil, nil
		}
		t.splits.Add(1)
		rpid := t.pt.Alloc()
		t.publish(t.pt.Slot(rpid), rpid, nil, t.addrPage(buildInner(keys[k:], kids[k:], sep, b.High, b.Sibling, b.Level)), 1)
		t.publish(slot, pid, p, t.addrPage(buildInner(keys[:k], kids[:k], b.Low, sep, uint64(rpid), b.Level)), 1)
		slot.Mu.Unlock()
		return &split{level: b.Level + 1, sep: bytes.Clone(sep), right: rpid}, nil
	}
}

// tryMerge merges the underfull leaf covering key with an adjacent leaf of
// the same parent, if the pair still qualifies once locked. The merge is
// one atomic unit inside the cut gate.
func (t *Tree) tryMerge(key []byte) error {
	tok := t.env.Gens.Enter()
	defer t.env.Gens.Exit(tok)
	ppid, _, err := t.find(key, 1)
	if err != nil || ppid == 0 {
		return err
	}
	ps := t.pt.Slot(ppid)
	ps.Mu.Lock()
	defer ps.Mu.Unlock()
	pp := ps.Load()
	if pp == nil || !pp.Covers(key) || pp.Base.Level != 1 {
		return nil
	}
	pb := pp.Base
	i, _ := pb.Child(key)
	li, ri := i-1, i
	if i == 0 {
		li, ri = 0, 1
	}
	if ri >= pb.Len() {
		return nil
	}
	lpid, rpid := pagetable.PID(pb.ChildAt(li)), pagetable.PID(pb.ChildAt(ri))
	sep := pb.KeyAt(ri)
	// Children not loaded yet are not worth a disk read to merge.
	ls, rs := t.pt.Slot(lpid), t.pt.Slot(rpid)
	if ls.Load() == nil || rs.Load() == nil {
		return nil
	}
	ls.Mu.Lock()
	defer ls.Mu.Unlock()
	rs.Mu.Lock()
	defer rs.Mu.Unlock()
	lp, rp := ls.Load(), rs.Load()
	if lp == nil || rp == nil || lp.Removed || rp.Removed || lp.Stub != nil || rp.Stub != nil ||
		lp.Base.Level != 0 || rp.Base.Level != 0 ||
		lp.Base.Sibling != uint64(rpid) ||
		!bytes.Equal(lp.Base.High, sep) || !bytes.Equal(rp.Base.Low, sep) {
		return nil
	}
	if lp.Base.Keys+rp.Base.Keys > t.cfg.SplitEntries {
		return nil // cheap pre-check on the bases alone
	}
	c := lp.Collect(t.env.Retention)
	c.Append(rp, t.env.Retention)
	n, sb := c.Keys(), t.splitBytes()
	if n > t.cfg.SplitEntries*3/4 || (sb > 0 && c.Bytes() > sb*3/4) {
		return nil
	}
	merged := t.addrPage(c.BuildState(0, n, lp.Base.Low, rp.Base.High, rp.Base.Sibling))
	keys, kids := innerEntries(pb, -1, nil, 0, ri)
	t.publish(ls, lpid, lp, merged, 1)
	t.publish(rs, rpid, rp, &node.Page{Base: rp.Base, Removed: true}, 0)
	t.publish(ps, ppid, pp, t.addrPage(buildInner(keys, kids, pb.Low, pb.High, pb.Sibling, pb.Level)), 1)
	// INV-P2: the PID is reusable once this generation is published.
	t.pt.Retire(rpid, t.env.Gens.Hot().ID)
	t.merges.Add(1)
	t.consolidations.Add(1)
	return nil
}
