package node

import (
	"fmt"
	"testing"

	"github.com/bwkv/bwkv/delta"
)

func leaf(keys []string, chain []string) *Page {
	var bd delta.Builder
	for i, k := range keys {
		bd.Add([]byte(k), []byte("v"), uint64(i+1), 0, 0)
	}
	p := &Page{Base: bd.Finish([]byte("a"), []byte("z"), 7, 0)}
	for i, k := range chain {
		p = p.Prepend(delta.New([]byte(k), []byte("w"), uint64(100+i), 0, 0))
	}
	return p
}

// TestStubFilter: a stub never rules out a key its durable state holds
// (base or chain), also after re-stubbing with a grown filter; it rules
// out most other keys; it keeps fences, sibling and head but no entries
// or memory of the old base.
func TestStubFilter(t *testing.T) {
	var keys []string
	for i := 0; i < 100; i++ {
		keys = append(keys, fmt.Sprintf("k%04d", i*2))
	}
	p := leaf(keys, []string{"k0001", "k0003"})
	s := NewStub(p, 42)
	if s.Base.Addr != 42 || s.Base.Sibling != 7 || string(s.Base.Low) != "a" || string(s.Base.High) != "z" || s.Base.Len() != 0 {
		t.Fatalf("stub base: addr %d sibling %d fences %q %q len %d", s.Base.Addr, s.Base.Sibling, s.Base.Low, s.Base.High, s.Base.Len())
	}
	if s.Stub.DiskLen != 2 {
		t.Fatalf("DiskLen %d, want 2", s.Stub.DiskLen)
	}
	all := append(append([]string{}, keys...), "k0001", "k0003")
	for _, k := range all {
		if !s.MayContain([]byte(k)) {
			t.Fatalf("stub rules out %q, which the page holds", k)
		}
	}
	// Blind inserts on the stub, then a re-stub: every key still passes.
	var more []string
	for i := 0; i < 300; i++ {
		k := fmt.Sprintf("m%04d", i)
		more = append(more, k)
		s = s.Prepend(delta.New([]byte(k), []byte("x"), uint64(500+i), 0, 0))
	}
	s2 := NewStub(s, 99)
	if s2.Stub.DiskLen != 302 || len(s2.Stub.bits) < len(s.Stub.bits) {
		t.Fatalf("re-stub: DiskLen %d, filter words %d -> %d", s2.Stub.DiskLen, len(s.Stub.bits), len(s2.Stub.bits))
	}
	for _, k := range append(all, more...) {
		if !s2.MayContain([]byte(k)) {
			t.Fatalf("re-stub rules out %q", k)
		}
	}
	fp := 0
	for i := 0; i < 10000; i++ {
		if s2.MayContain([]byte(fmt.Sprintf("absent%06d", i))) {
			fp++
		}
	}
	if fp > 500 {
		t.Fatalf("%d of 10000 absent keys pass the filter", fp)
	}
	t.Logf("false positives: %d / 10000 (filter %d bits, %d keys)", fp, 64*len(s2.Stub.bits), len(all)+len(more))
	if (&Page{Base: p.Base}).MayContain([]byte("k0000")) {
		t.Fatal("a full page reports keys beyond memory")
	}
}

// TestStubChainIndex: a stub indexes its durable chain newest first (each
// delta frame's address and key hash, then the base frame's address);
// a re-stub puts the deltas published since on top of the old index; a
// chain longer than the bound is indexed in part, the rest read from the
// first frame left out; a page with a delta that has no address is not
// indexed.
func TestStubChainIndex(t *testing.T) {
	p := leaf([]string{"k0", "k2"}, nil)
	p.Base.Addr = 10
	addr := uint64(10)
	prepend := func(p *Page, key string) *Page {
		addr++
		d := delta.New([]byte(key), []byte("v"), addr, 0, 0)
		d.Addr = addr
		return p.Prepend(d)
	}
	p = prepend(prepend(p, "k1"), "k3") // k3 at 12 over k1 at 11
	s := NewStub(p, 12)
	want := []ChainFrame{{Addr: 12, Hash: ChainHash([]byte("k3"))}, {Addr: 11, Hash: ChainHash([]byte("k1"))}}
	if c := s.Stub.Chain; c.Rest != 10 || fmt.Sprint(c.Frames) != fmt.Sprint(want) {
		t.Fatalf("index %v rest %d; want %v rest 10", c.Frames, c.Rest, want)
	}
	s = prepend(s, "k4")
	s2 := NewStub(s, 13)
	want = append([]ChainFrame{{Addr: 13, Hash: ChainHash([]byte("k4"))}}, want...)
	if c := s2.Stub.Chain; c.Rest != 10 || fmt.Sprint(c.Frames) != fmt.Sprint(want) {
		t.Fatalf("re-stub: index %v rest %d; want %v rest 10", c.Frames, c.Rest, want)
	}
	if s2.Stub.Own < s2.Base.Bytes()+16*len(want) {
		t.Fatalf("the stub's own memory %d leaves out its index", s2.Stub.Own)
	}

	long := s2
	for i := 0; i < maxChainIndex+5; i++ {
		long = prepend(long, fmt.Sprintf("m%03d", i))
	}
	s3 := NewStub(long, addr)
	if c := s3.Stub.Chain; len(c.Frames) != maxChainIndex || c.Frames[0].Addr != addr || c.Rest != addr-maxChainIndex {
		t.Fatalf("long chain: %d frames indexed from %d, rest %d; want %d from %d, rest %d", len(c.Frames), c.Frames[0].Addr, c.Rest, maxChainIndex, addr, addr-maxChainIndex)
	}

	bare := leaf([]string{"k0"}, []string{"k1"}) // no addresses
	if NewStub(bare, 5).Stub.Chain.Indexed() {
		t.Fatal("a chain without frame addresses is indexed")
	}
	many := DiskChain{Rest: 1}
	for a := uint64(maxChainIndex + 3); a > 1; a-- {
		many.Frames = append(many.Frames, ChainFrame{Addr: a})
	}
	d := DiskStub(p.Base, 12, 2, many)
	if c := d.Stub.Chain; len(c.Frames) != maxChainIndex || c.Rest != 3 {
		t.Fatalf("disk stub index of %d frames (indexed %v); want at most %d", len(c.Frames), c.Indexed(), maxChainIndex)
	}
}

// TestStubShort: Short reports two short reuse distances in a row, and a
// re-stub keeps the last one (the page stayed on disk).
func TestStubShort(t *testing.T) {
	s := NewStub(leaf([]string{"k0"}, nil), 1)
	for i, c := range []struct{ short, want bool }{{true, false}, {true, true}, {false, false}, {true, false}} {
		if got := s.Stub.Short(c.short); got != c.want {
			t.Fatalf("step %d: Short(%v) = %v, want %v", i, c.short, got, c.want)
		}
	}
	if s2 := NewStub(s, 2); !s2.Stub.Short(true) {
		t.Fatal("a re-stub forgot the last short distance")
	}
}
