package tree

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

// Shape summarizes the tree for Stats.
type Shape struct {
	Pages, Leaves int
	Depth         int
	// ChainHist[i] counts resident leaves whose chain length is in
	// [2^(i-1), 2^i) (ChainHist[0]: empty chains).
	ChainHist [8]int
	// Bytes is the memory of the resident pages the walk saw.
	Bytes int64
}

// Shape walks the inner levels through the sibling links (loading inner
// pages not yet in memory) and counts leaves through their parents'
// entries, without loading a leaf: Stats on a database larger than the
// cache reads no leaf from disk. It is O(pages): call it from Stats,
// never from a write path. A page that cannot be read ends the walk of its
// level (Check reports it).
func (t *Tree) Shape() Shape {
	var s Shape
	root := t.loadQuiet(RootPID)
	if root == nil {
		return s
	}
	s.Depth = int(root.Base.Level) + 1
	if root.Base.Level == 0 {
		s.Pages, s.Leaves = 1, 1
		s.leaf(root)
		return s
	}
	pid := RootPID
	for {
		p := t.loadQuiet(pid)
		if p == nil {
			return s
		}
		level := p.Base.Level
		first := pid
		for q := pid; q != 0; {
			qp := t.loadQuiet(q)
			if qp == nil {
				break
			}
			s.Pages++
			s.Bytes += int64(qp.Bytes())
			if level == 1 {
				for i := 0; i < qp.Base.Len(); i++ {
					s.Pages++
					s.Leaves++
					if lp := t.pt.Load(pagetable.PID(qp.Base.ChildAt(i))); lp != nil {
						s.leaf(lp)
					}
				}
			}
			q = pagetable.PID(qp.Base.Sibling)
		}
		if level == 1 {
			return s
		}
		fp := t.loadQuiet(first)
		if fp == nil || fp.Base.Len() == 0 {
			return s
		}
		pid = pagetable.PID(fp.Base.ChildAt(0))
	}
}

func (s *Shape) leaf(p *node.Page) {
	s.Bytes += int64(p.Bytes())
	b := 0
	for n := p.Len; n > 0 && b < len(s.ChainHist)-1; n >>= 1 {
		b++
	}
	s.ChainHist[b]++
}

// Check verifies the structure (docs/crash-safety.md, I5): key order inside pages and
// within fences, fences and sibling links agree along each level, every
// parent entry names a live child at the level below whose low fence is the
// separator, and the children a level names appear in its order along the
// child level (pages between them are half-split right siblings, which
// B-link traversal reaches through the links). It reports every problem
// found, joined. Run it on a quiescent tree: concurrent SMOs can make a
// walk see a transient mix of states.
func (t *Tree) Check() error {
	var errs []error
	bad := func(format string, a ...any) {
		if len(errs) < 50 {
			errs = append(errs, fmt.Errorf("tree: "+format, a...))
		}
	}
	root := t.loadFullQuiet(RootPID)
	if root == nil || root.Removed {
		return errors.New("tree: root missing")
	}
	if len(root.Base.Low) != 0 || root.Base.High != nil || root.Base.Sibling != 0 {
		bad("root fences [%q,%q) sibling %d, want unbounded", root.Base.Low, root.Base.High, root.Base.Sibling)
	}
	level, first := root.Base.Level, RootPID
	for {
		chain := t.checkLevel(level, first, bad)
		if level == 0 {
			break
		}
		kids := t.checkChildren(level, chain, bad)
		if len(kids) == 0 {
			bad("level %d names no children", level)
			break
		}
		first = kids[0]
		level--
		// The named children must be a subsequence of the child level's
		// chain: checked on the next round by walking and matching.
		if err := t.subsequence(kids); err != nil {
			bad("%v", err)
		}
	}
	return errors.Join(errs...)
}

// checkLevel walks level's sibling chain from its leftmost page first,
// checks each page and the fences between neighbours, and returns the
// chain's PIDs.
func (t *Tree) checkLevel(level uint8, first pagetable.PID, bad func(string, ...any)) []pagetable.PID {
	var chain []pagetable.PID
	var prevHigh []byte
	seen := map[pagetable.PID]bool{}
	for q := first; q != 0; {
		if seen[q] {
			bad("level %d: sibling cycle at pid %d", level, q)
			break
		}
		seen[q] = true
		p := t.loadFullQuiet(q)
		if p == nil || p.Removed {
			bad("level %d: pid %d on the sibling chain is unmapped or removed", level, q)
			break
		}
		b := p.Base
		if b.Level != level {
			bad("pid %d: level %d on level %d's chain", q, b.Level, level)
		}
		if len(chain) == 0 && len(b.Low) != 0 {
			bad("level %d: leftmost pid %d has low fence %q", level, q, b.Low)
		}
		if len(chain) > 0 && !bytes.Equal(prevHigh, b.Low) {
			bad("level %d: pid %d low fence %q != left neighbour's high %q", level, q, b.Low, prevHigh)
		}
		if (b.High == nil) != (b.Sibling == 0) {
			bad("pid %d: high fence %q with sibling %d", q, b.High, b.Sibling)
		}
		checkPage(q, p, bad)
		chain = append(chain, q)
		prevHigh = b.High
		q = pagetable.PID(b.Sibling)
	}
	if prevHigh != nil {
		bad("level %d: rightmost page has high fence %q", level, prevHigh)
	}
	return chain
}

// checkChildren returns the children the pages of chain (at level) name,
// in order, checking that each is live, one level down, and has its
// separator as its low fence.
func (t *Tree) checkChildren(level uint8, chain []pagetable.PID, bad func(string, ...any)) []pagetable.PID {
	var kids []pagetable.PID
	for _, q := range chain {
		b := t.loadFullQuiet(q).Base
		for i := 0; i < b.Len(); i++ {
			c := pagetable.PID(b.ChildAt(i))
			cp := t.loadFullQuiet(c)
			if cp == nil || cp.Removed {
				bad("pid %d entry %d names unmapped or removed pid %d", q, i, c)
				continue
			}
			sep := b.KeyAt(i)
			if i == 0 {
				sep = b.Low
			}
			if !bytes.Equal(cp.Base.Low, sep) {
				bad("pid %d entry %d: child %d low fence %q != separator %q", q, i, c, cp.Base.Low, sep)
			}
			if cp.Base.Level+1 != level {
				bad("pid %d: child %d at level %d under level %d", q, c, cp.Base.Level, level)
			}
			kids = append(kids, c)
		}
	}
	return kids
}

func (t *Tree) subsequence(kids []pagetable.PID) error {
	j := 0
	for q := kids[0]; q != 0 && j < len(kids); {
		if q == kids[j] {
			j++
		}
		p := t.loadFullQuiet(q)
		if p == nil {
			break
		}
		q = pagetable.PID(p.Base.Sibling)
	}
	if j != len(kids) {
		return fmt.Errorf("children named by parents are not in sibling order (matched %d of %d)", j, len(kids))
	}
	return nil
}

func checkPage(pid pagetable.PID, p *node.Page, bad func(string, ...any)) {
	b := p.Base
	for i := 0; i < b.Len(); i++ {
		k := b.KeyAt(i)
		if i > 0 {
			c := bytes.Compare(b.KeyAt(i-1), k)
			if c > 0 || (c == 0 && b.Level > 0) {
				bad("pid %d: entries %d and %d out of order", pid, i-1, i)
			}
		}
		if b.Level > 0 && i == 0 {
			continue // the first separator stands for the low fence
		}
		if !b.Covers(k) {
			bad("pid %d: key %q outside fences [%q,%q)", pid, k, b.Low, b.High)
		}
	}
	for d := p.Head; d != nil; d = d.Next {
		if !b.Covers(d.Key) {
			bad("pid %d: delta key %q outside fences [%q,%q)", pid, d.Key, b.Low, b.High)
		}
	}
}

// loadQuiet loads a page for the structural walks; a page that fails to
// load reads as missing, which Check reports.
func (t *Tree) loadQuiet(pid pagetable.PID) *node.Page {
	p, _ := t.load(pid)
	return p
}

// loadFullQuiet is loadQuiet with every entry in memory (a stub leaf is
// read in full), for Check.
func (t *Tree) loadFullQuiet(pid pagetable.PID) *node.Page {
	for {
		p := t.loadQuiet(pid)
		if p == nil || p.Stub == nil {
			return p
		}
		if f, err := t.fullOnce(pid, p); err != nil || f != nil {
			return f
		}
	}
}
