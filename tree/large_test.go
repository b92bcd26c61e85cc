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

// leafSizes returns the key and value bytes of every leaf, left to right.
func leafSizes(t *testing.T, tr *Tree) []int {
	t.Helper()
	pid := RootPID
	for {
		p := tr.pt.Load(pid)
		if p.Base.Level == 0 {
			break
		}
		pid = pagetable.PID(p.Base.ChildAt(0))
	}
	var out []int
	for pid != 0 {
		p := tr.pt.Load(pid)
		n := 0
		for i := 0; i < p.Base.Len(); i++ {
			n += len(p.Base.KeyAt(i)) + len(p.Base.ValueAt(i))
		}
		for d := p.Head; d != nil; d = d.Next {
			n += len(d.Key) + len(d.Value)
		}
		out = append(out, n)
		pid = pagetable.PID(p.Base.Sibling)
	}
	return out
}

// TestSetLarge: leaves split by SplitBytes until the tree is marked large,
// then by SmallSplitBytes as each is next consolidated, and merge back
// towards SplitBytes once it is not; every key reads its value throughout.
func TestSetLarge(t *testing.T) {
	env := Env{Retention: keepAll{}, Gens: generation.NewManager(1, 0)}
	tr := New(Config{SplitEntries: 128, ChainMax: 1, SplitBytes: 32 << 10, SmallSplitBytes: 8 << 10}, env, pagetable.New[node.Page](RootPID+1))
	const keys = 300
	seq := uint32(0)
	writeAll := func() {
		for i := range keys {
			k := fmt.Appendf(nil, "key%05d", i)
			v := bytes.Repeat([]byte{byte(i)}, 1000)
			seq++
			if err := tr.Write(k, func(*node.Page) (*delta.Delta, error) { return delta.New(k, v, 1, seq, 0), nil }); err != nil {
				t.Fatal(err)
			}
		}
		for i := range keys {
			k := fmt.Appendf(nil, "key%05d", i)
			v, ok, err := tr.Get(k, allVisible{})
			if err != nil || !ok || len(v) != 1000 || v[0] != byte(i) {
				t.Fatalf("%s: %d bytes, %v, %v", k, len(v), ok, err)
			}
		}
	}
	maxLeaf := func() (int, int) {
		sizes := leafSizes(t, tr)
		m := 0
		for _, s := range sizes {
			m = max(m, s)
		}
		return m, len(sizes)
	}
	writeAll()
	big, nBig := maxLeaf()
	if big <= 8<<10 || big > 32<<10+1100 {
		t.Fatalf("largest leaf %d bytes before SetLarge, want (8 KiB, 32 KiB]", big)
	}
	tr.SetLarge(true)
	if !tr.Large() {
		t.Fatal("Large() false after SetLarge(true)")
	}
	writeAll()
	writeAll() // a leaf split in two may need a second consolidation
	if err := tr.Check(); err != nil {
		t.Fatal(err)
	}
	small, nSmall := maxLeaf()
	if small > 8<<10+1100 || nSmall < 2*nBig {
		t.Fatalf("large tree: largest leaf %d bytes, %d leaves (were %d), want <= 8 KiB and at least twice as many", small, nSmall, nBig)
	}
	tr.SetLarge(false)
	for range 4 {
		writeAll()
	}
	if _, n := maxLeaf(); n >= nSmall {
		t.Fatalf("%d leaves after the tree is small again, were %d: underfull leaves did not merge", n, nSmall)
	}
	if err := tr.Check(); err != nil {
		t.Fatal(err)
	}
}

// retiredAll is a retention under which every txn has retired and no
// reader is registered: consolidation keeps each key's newest version.
type retiredAll struct{}

func (retiredAll) Low() uint64                             { return ^uint64(0) }
func (retiredAll) CommitTS(uint64) (uint64, bool)          { return 0, false }
func (retiredAll) Readers(dst []uint64) ([]uint64, uint64) { return dst[:0], ^uint64(0) }
func (retiredAll) RolledBack(uint64) bool                  { return false }

// TestChainHeavy: a leaf whose chain holds more bytes than SplitBytes
// consolidates before its chain reaches ChainMax, so a page of large
// values holds at most about twice its leaf bound in memory.
func TestChainHeavy(t *testing.T) {
	env := Env{Retention: retiredAll{}, Gens: generation.NewManager(1, 0)}
	const sb = 32 << 10
	tr := New(Config{SplitEntries: 128, ChainMax: 100, SplitBytes: sb}, env, pagetable.New[node.Page](RootPID+1))
	k := []byte("key")
	maxLen, maxBytes := 0, 0
	for i := range 60 {
		v := bytes.Repeat([]byte{byte(i)}, 4<<10)
		if err := tr.Write(k, func(*node.Page) (*delta.Delta, error) { return delta.New(k, v, 1, uint32(i+1), 0), nil }); err != nil {
			t.Fatal(err)
		}
		p := tr.pt.Load(RootPID)
		maxLen, maxBytes = max(maxLen, p.Len), max(maxBytes, p.Bytes())
		got, ok, err := tr.Get(k, allVisible{})
		if err != nil || !ok || !bytes.Equal(got, v) {
			t.Fatalf("write %d: read %d bytes, %v, %v", i, len(got), ok, err)
		}
	}
	if maxLen > sb/(4<<10)+1 || maxBytes > 2*sb+(8<<10) {
		t.Fatalf("chains of 4 KiB values reached %d deltas and %d bytes, want a consolidation past %d bytes of chain", maxLen, maxBytes, sb)
	}
	// Small values: the count bound alone decides.
	tr = New(Config{SplitEntries: 128, ChainMax: 12, SplitBytes: sb}, env, pagetable.New[node.Page](RootPID+1))
	maxLen = 0
	for i := range 40 {
		if err := tr.Write(k, func(*node.Page) (*delta.Delta, error) { return delta.New(k, []byte("v"), 1, uint32(i+1), 0), nil }); err != nil {
			t.Fatal(err)
		}
		maxLen = max(maxLen, tr.pt.Load(RootPID).Len)
	}
	if maxLen != 12 {
		t.Fatalf("chains of small values reached %d deltas, want ChainMax 12", maxLen)
	}
	// A large tree's smaller leaves (SmallSplitBytes) do not shrink the
	// chain bound: 24 deltas of 1 KiB (~29 KiB) wait for ChainMax.
	tr = New(Config{SplitEntries: 128, ChainMax: 24, SplitBytes: sb, SmallSplitBytes: 8 << 10}, env, pagetable.New[node.Page](RootPID+1))
	tr.SetLarge(true)
	maxLen = 0
	for i := range 30 {
		v := bytes.Repeat([]byte{byte(i)}, 1<<10)
		if err := tr.Write(k, func(*node.Page) (*delta.Delta, error) { return delta.New(k, v, 1, uint32(i+1), 0), nil }); err != nil {
			t.Fatal(err)
		}
		maxLen = max(maxLen, tr.pt.Load(RootPID).Len)
	}
	if maxLen != 24 {
		t.Fatalf("a large tree's chains of 1 KiB values reached %d deltas, want ChainMax 24", maxLen)
	}
}

// TestShortenHeavy: the evictor's Shorten consolidates a leaf in steady
// use whose chain holds a quarter of a leaf's bytes, even when the chain
// is shorter than ReadChain; a short chain of small values stays.
func TestShortenHeavy(t *testing.T) {
	env := Env{Retention: retiredAll{}, Gens: generation.NewManager(1, 0)}
	const sb = 32 << 10
	for _, c := range []struct {
		name   string
		value  int
		deltas int
		want   int // chain length after Shorten
	}{
		{"one 16 KiB delta", 16 << 10, 1, 0},
		{"two 4 KiB deltas", 4 << 10, 2, 0},
		{"one 4 KiB delta", 4 << 10, 1, 1},
		{"three small deltas", 100, 3, 3},
		{"four small deltas", 100, 4, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := New(Config{SplitEntries: 128, ChainMax: 12, ReadChain: 4, SplitBytes: sb}, env, pagetable.New[node.Page](RootPID+1))
			k := []byte("key")
			for i := range c.deltas + 1 {
				v := bytes.Repeat([]byte{byte(i)}, c.value)
				if err := tr.Write(k, func(*node.Page) (*delta.Delta, error) { return delta.New(k, v, 1, uint32(i+1), 0), nil }); err != nil {
					t.Fatal(err)
				}
				if i == 0 { // the first version becomes the base
					if err := tr.Squash(RootPID); err != nil || tr.pt.Load(RootPID).Len != 0 {
						t.Fatalf("squash: %v", err)
					}
				}
			}
			if err := tr.Shorten(RootPID); err != nil {
				t.Fatal(err)
			}
			p := tr.pt.Load(RootPID)
			if p.Len != c.want {
				t.Fatalf("chain of %d deltas after Shorten, want %d", p.Len, c.want)
			}
			if got, ok, err := tr.Get(k, allVisible{}); err != nil || !ok || len(got) != c.value || got[0] != byte(c.deltas) {
				t.Fatalf("read %d bytes, %v, %v", len(got), ok, err)
			}
		})
	}
}

// oneOpen is a retention under which txid 1 has retired and txid 2 is in
// flight (not committed, not rolled back), with no reader registered.
type oneOpen struct{}

func (oneOpen) Low() uint64                             { return 2 }
func (oneOpen) CommitTS(uint64) (uint64, bool)          { return 0, false }
func (oneOpen) Readers(dst []uint64) ([]uint64, uint64) { return dst[:0], ^uint64(0) }
func (oneOpen) RolledBack(uint64) bool                  { return false }

// TestChainHeavyBeforeDelta: a heavy chain is consolidated before the
// writer's own delta, not with it, so the base does not keep the version
// that uncommitted delta supersedes: once it commits, the page holds
// one superseded value at most, and only in its chain, where the next
// consolidation (a write, the evictor, the idle settle) drops it.
func TestChainHeavyBeforeDelta(t *testing.T) {
	env := Env{Retention: oneOpen{}, Gens: generation.NewManager(1, 0)}
	tr := New(Config{SplitEntries: 128, ChainMax: 12, SplitBytes: 32 << 10}, env, pagetable.New[node.Page](RootPID+1))
	k := []byte("key")
	write := func(i int, txid uint64) {
		v := bytes.Repeat([]byte{byte(i)}, 16<<10)
		if err := tr.Write(k, func(*node.Page) (*delta.Delta, error) { return delta.New(k, v, txid, uint32(i+1), 0), nil }); err != nil {
			t.Fatal(err)
		}
	}
	write(0, 1)
	write(1, 1) // two 16 KiB deltas: the chain is heavy
	write(2, 2) // in flight
	p := tr.pt.Load(RootPID)
	if p.Len != 1 || p.Head == nil || p.Head.TxID != 2 {
		t.Fatalf("chain of %d deltas: want the in-flight delta alone above a new base", p.Len)
	}
	if p.Base.Len() != 1 || p.Base.ValueAt(0)[0] != 1 {
		t.Fatalf("base holds %d versions (first value %d), want only the newest retired one (1)", p.Base.Len(), p.Base.ValueAt(0)[0])
	}
}
