package generation

import (
	"testing"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

// install prepends a delta of n value bytes to page p at a new address and
// accounts it as tree.publish does (the delta's Size).
func install(m *Manager, slot *pagetable.Slot[node.Page], p *node.Page, n int) *node.Page {
	d := delta.New([]byte("k"), make([]byte, n), 1, 0, 0)
	d.Addr = m.NextAddr()
	np := p.Prepend(d)
	m.Touch(slot, 1, p, 1, d.Size(), false)
	return np
}

// consolidate replaces p by a new base at a new address, accounted as
// tree.publish does (the base's Bytes, replaced).
func consolidate(m *Manager, slot *pagetable.Slot[node.Page], p *node.Page, n int) *node.Page {
	var bd delta.Builder
	bd.Add([]byte("k"), make([]byte, n), 1, 0, 0)
	b := bd.Finish(nil, nil, 0, 0)
	b.Addr = m.NextAddr()
	np := &node.Page{Base: b}
	m.Touch(slot, 1, p, 1, b.Bytes(), true)
	return np
}

// TestBytesNet: a consolidation takes back, from the hot generation's
// Bytes, what the frames it folds were accounted with if the hot
// generation installed them, and nothing for frames of an older
// generation (which writes them). Installed keeps every install.
func TestBytesNet(t *testing.T) {
	m := NewManager(1, 0)
	var slot pagetable.Slot[node.Page]
	p := consolidate(m, &slot, nil, 100) // the page's first base
	base := p.Base.Bytes()
	p = install(m, &slot, p, 10)
	p = install(m, &slot, p, 20)
	hot := m.Hot()
	if got, want := hot.Bytes(), int64(base+p.Head.Size()+p.Head.Next.Size()); got != want {
		t.Fatalf("bytes %d before the consolidation, want %d", got, want)
	}
	gross := hot.Installed()
	p = consolidate(m, &slot, p, 50)
	if got, want := hot.Bytes(), int64(p.Base.Bytes()); got != want {
		t.Fatalf("bytes %d after a consolidation of frames all installed in the generation, want %d (the new base)", got, want)
	}
	if got, want := hot.Installed(), gross+int64(p.Base.Bytes()); got != want {
		t.Fatalf("installed %d, want %d", got, want)
	}

	// After the cut the page's base belongs to the sealed generation
	// (which writes it): the next generation's consolidation takes back
	// only the deltas drawn in it.
	sealedBytes := hot.Bytes()
	if m.Cut(func() uint64 { return 4096 }) != hot {
		t.Fatal("no cut")
	}
	next := m.Hot()
	if next.LogStart != 4096 {
		t.Fatalf("LogStart %d, want the cut's frontier 4096", next.LogStart)
	}
	p = install(m, &slot, p, 30)
	old := p.Head.Size()
	p = install(m, &slot, p, 40)
	if got, want := next.Bytes(), int64(old+p.Head.Size()); got != want {
		t.Fatalf("next generation: bytes %d, want %d", got, want)
	}
	p = consolidate(m, &slot, p, 60)
	if got, want := next.Bytes(), int64(p.Base.Bytes()); got != want {
		t.Fatalf("next generation: bytes %d after a consolidation, want %d: frames of the sealed generation were taken back", got, want)
	}
	if hot.Bytes() != sealedBytes {
		t.Fatalf("the sealed generation's bytes changed: %d, want %d", hot.Bytes(), sealedBytes)
	}
}
