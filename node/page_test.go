package node

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/bwkv/bwkv/delta"
)

// TestVersionsAndHas: Versions yields a key's chain versions newest first,
// then its base version, and nothing of other keys; Has finds exactly the
// versions present. With a chain of many keys the filter must never rule
// out a key the chain holds (a Versions that skipped the chain would let
// a write miss another writer's uncommitted version).
func TestVersionsAndHas(t *testing.T) {
	var base, chain []string
	for i := range 40 {
		base = append(base, fmt.Sprintf("k%03d", i*2))
	}
	for i := range 60 {
		chain = append(chain, fmt.Sprintf("k%03d", (i*7)%80)) // some repeat, some in base
	}
	p := leaf(base, chain)
	for k := range 81 {
		key := fmt.Sprintf("k%03d", k)
		var want []uint64
		for i := len(chain) - 1; i >= 0; i-- { // leaf prepends: newest is last
			if chain[i] == key {
				want = append(want, uint64(100+i))
			}
		}
		if i := slices.Index(base, key); i >= 0 {
			want = append(want, uint64(i+1))
		}
		var got []uint64
		p.Versions([]byte(key), func(v Version) bool { got = append(got, v.TxID); return true })
		if !slices.Equal(got, want) {
			t.Fatalf("Versions(%s) = %v, want %v", key, got, want)
		}
		for _, id := range want {
			if !p.Has([]byte(key), id, 0) {
				t.Fatalf("Has(%s, %d) = false", key, id)
			}
		}
		if p.Has([]byte(key), 99, 0) {
			t.Fatalf("Has(%s, 99) = true", key)
		}
	}
}

// TestNewState: NewState builds the same base as Finish, with a state of
// its own holding only that base, and the state costs no allocation of its
// own (it shares the base's: the point of NewState). A NewState that
// allocated the two apart, or built a different base, fails.
func TestNewState(t *testing.T) {
	fill := func(bd *delta.Builder) {
		for i := range 20 {
			bd.Add(fmt.Appendf(nil, "k%03d", i), fmt.Appendf(nil, "value %d", i), uint64(i+1), 1, 0)
		}
	}
	var fb, pb delta.Builder
	fill(&fb)
	fill(&pb)
	want := fb.Finish([]byte("k"), []byte("l"), 7, 0)
	st := NewState(&pb, []byte("k"), []byte("l"), 7, 0)
	b := st.Base
	if st.Head != nil || st.Len != 0 || st.Stub != nil || st.Removed {
		t.Fatalf("NewState's state is not the base alone: %+v", st)
	}
	if string(b.Low) != "k" || string(b.High) != "l" || b.Sibling != 7 || b.Level != 0 || b.Keys != want.Keys || b.Len() != want.Len() ||
		b.MaxTxID != want.MaxTxID || b.Simple != want.Simple {
		t.Fatalf("NewState's base differs from Finish's: %+v vs %+v", b, want)
	}
	for i := range want.Len() {
		if !bytes.Equal(b.KeyAt(i), want.KeyAt(i)) || !bytes.Equal(b.ValueAt(i), want.ValueAt(i)) || b.TxIDAt(i) != want.TxIDAt(i) {
			t.Fatalf("entry %d: %q=%q@%d, want %q=%q@%d", i, b.KeyAt(i), b.ValueAt(i), b.TxIDAt(i), want.KeyAt(i), want.ValueAt(i), want.TxIDAt(i))
		}
	}
	if i := b.Search([]byte("k010")); i != 10 {
		t.Fatalf("Search(k010) = %d on NewState's base", i)
	}
	key, val := []byte("k"), []byte("v")
	finish := testing.AllocsPerRun(100, func() {
		var bd delta.Builder
		bd.Add(key, val, 1, 1, 0)
		_ = bd.Finish(nil, nil, 0, 0)
	})
	state := testing.AllocsPerRun(100, func() {
		var bd delta.Builder
		bd.Add(key, val, 1, 1, 0)
		_ = NewState(&bd, nil, nil, 0, 0)
	})
	if state != finish {
		t.Fatalf("NewState makes %v allocations, Finish %v: the state should share the base's", state, finish)
	}
}

// TestChainMasks: a page's chain masks key's versions below it only if it
// holds a CLR of key; another key's CLR or key's plain versions do not.
func TestChainMasks(t *testing.T) {
	var bd delta.Builder
	bd.Add([]byte("a"), []byte("base"), 1, 1, 0)
	bd.Add([]byte("b"), []byte("base"), 1, 1, 0)
	p := &Page{Base: bd.Finish(nil, nil, 0, 0)}
	if p.ChainMasks([]byte("a")) {
		t.Fatal("a page with no chain masks a")
	}
	p = p.Prepend(delta.New([]byte("a"), []byte("new"), 5, 1, 0))
	p = p.Prepend(delta.New([]byte("b"), []byte("base"), 6, 2, delta.CLR))
	if p.ChainMasks([]byte("a")) {
		t.Fatal("a chain with a's plain version and b's CLR masks a")
	}
	if !p.ChainMasks([]byte("b")) {
		t.Fatal("a chain with b's CLR does not mask b")
	}
	p = p.Prepend(delta.New([]byte("c"), nil, 7, 1, 0))
	if !p.ChainMasks([]byte("b")) {
		t.Fatal("b's CLR under a newer delta of c does not mask b")
	}
}
