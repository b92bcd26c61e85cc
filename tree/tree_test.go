package tree

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/generation"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

type allVisible struct{}

func (allVisible) Visible(uint64) bool { return true }
func (allVisible) Low() uint64         { return 0 }

func newTestTree() *Tree {
	env := Env{Retention: keepAll{}, Gens: generation.NewManager(1, 0)}
	return New(Config{SplitEntries: 4, ChainMax: 1}, env, pagetable.New[node.Page](RootPID+1))
}

func put(t *testing.T, tr *Tree, k string, seq uint32) {
	t.Helper()
	if err := tr.Write([]byte(k), func(*node.Page) (*delta.Delta, error) {
		return delta.New([]byte(k), []byte(k), 1, seq, 0), nil
	}); err != nil {
		t.Fatal(err)
	}
}

// parentNames reports whether some level-1 page names pid.
func parentNames(tr *Tree, pid pagetable.PID) bool {
	for q := pagetable.PID(RootPID); q != 0; {
		p := tr.pt.Load(q)
		if p.Base.Level == 0 {
			return false
		}
		if p.Base.Level == 1 {
			for r := q; r != 0; r = pagetable.PID(tr.pt.Load(r).Base.Sibling) {
				b := tr.pt.Load(r).Base
				for i := 0; i < b.Len(); i++ {
					if pagetable.PID(b.ChildAt(i)) == pid {
						return true
					}
				}
			}
			return false
		}
		q = pagetable.PID(p.Base.ChildAt(0))
	}
	return false
}

// TestWriterCompletesHalfSplit: a split whose separator never reached the
// parent (as after a crash between the split and the post) is completed
// by the next writer that crosses the sibling link.
func TestWriterCompletesHalfSplit(t *testing.T) {
	tr := newTestTree()
	seq := uint32(0)
	for i := 0; i < 40; i++ {
		seq++
		put(t, tr, fmt.Sprintf("k%03d", i*10), seq)
	}
	// Split a leaf without posting its separator.
	var sp *split
	for i := 0; sp == nil && i < 50; i++ {
		seq++
		k := fmt.Sprintf("k%03d", 201+i%9)
		var err error
		sp, _, err = tr.write([]byte(k), 0, func(*node.Page) (*delta.Delta, error) {
			return delta.New([]byte(k), nil, 1, seq, 0), nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	if sp == nil {
		t.Fatal("no split happened")
	}
	if parentNames(tr, sp.right) {
		t.Fatal("the separator was posted already")
	}
	if err := tr.Check(); err != nil {
		t.Fatalf("a half split must pass Check: %v", err)
	}
	// A reader follows the link without fixing anything.
	key := append(bytes.Clone(sp.sep), 'z')
	if _, ok, err := tr.Get(sp.sep, allVisible{}); err != nil || !ok {
		t.Fatalf("read across the half split: %v %v", ok, err)
	}
	if parentNames(tr, sp.right) {
		t.Fatal("a reader changed the structure")
	}
	seq++
	put(t, tr, string(key), seq)
	if !parentNames(tr, sp.right) {
		t.Fatal("the writer did not complete the half split")
	}
	if err := tr.Check(); err != nil {
		t.Fatal(err)
	}
}

// keepAll is a retention under which no txn has retired or committed:
// consolidation keeps every version.
type keepAll struct{}

func (keepAll) Low() uint64                             { return 1 }
func (keepAll) CommitTS(uint64) (uint64, bool)          { return 0, false }
func (keepAll) Readers(dst []uint64) ([]uint64, uint64) { return dst[:0], 0 }
func (keepAll) RolledBack(uint64) bool                  { return false }

// TestWriteAtStaleHint: a write started from another leaf's PID (a read
// hint gone stale by a split, or simply the wrong page) lands in the leaf
// that covers its key, and a valid hint lands in the same leaf a descent
// finds.
func TestWriteAtStaleHint(t *testing.T) {
	tr := newTestTree()
	for i := range 2000 {
		put(t, tr, fmt.Sprintf("k%05d", i), 1)
	}
	_, ok, first, err := tr.GetLeaf([]byte("k00000"), allVisible{})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	_, _, last, err := tr.GetLeaf([]byte("k01999"), allVisible{})
	if err != nil || first == last {
		t.Fatalf("want two leaves: %d %d %v", first, last, err)
	}
	for i := range 2000 {
		k := []byte(fmt.Sprintf("k%05d", i))
		if err := tr.WriteAt(k, first, func(*node.Page) (*delta.Delta, error) {
			return delta.New(k, []byte("new"), 2, 1, 0), nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2000 {
		k := []byte(fmt.Sprintf("k%05d", i))
		v, ok, err := tr.Get(k, allVisible{})
		if err != nil || !ok || string(v) != "new" {
			t.Fatalf("%s = %q %v %v", k, v, ok, err)
		}
	}
	if err := tr.Check(); err != nil {
		t.Fatal(err)
	}
}
