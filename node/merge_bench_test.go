package node

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bwkv/bwkv/delta"
)

// w4Leaf returns a leaf like one of W4's (kvbench, 32-byte keys, 1 KiB
// values): a base of n keys of one key bucket, and a chain of m updates of
// keys drawn from them, every txid below low.
func w4Leaf(n, m int) (*Page, uint64) {
	key := func(j int) []byte {
		k := fmt.Appendf(nil, "s47b_%010x", 0x47b+j<<10)
		return append(k, bytes.Repeat([]byte{'x'}, 32-len(k))...)
	}
	val := bytes.Repeat([]byte{'v'}, 1024)
	var bd delta.Builder
	for j := range n {
		bd.Add(key(j), val, uint64(j+1), 1, 0)
	}
	p := &Page{Base: bd.Finish(key(0), key(n), 0, 0)}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range m {
		p = p.Prepend(delta.New(key(r.IntN(n)), val, uint64(1000+i), 1, 0))
	}
	return p, 1 << 20
}

// BenchmarkConsolidate is a writer's consolidation of a W4 leaf at the
// default DeltaChainMax (a chain of 13 over a base of 24 keys, every txn
// retired): collect the versions to keep, then build the new base.
func BenchmarkConsolidate(b *testing.B) {
	p, low := w4Leaf(24, 13)
	r := &fakeRetention{low: low}
	b.ReportAllocs()
	b.SetBytes(int64(p.Bytes()))
	for b.Loop() {
		c := p.Collect(r)
		if nb := c.Build(0, c.Keys(), p.Base.Low, p.Base.High, 0); nb.Len() != 24 {
			b.Fatalf("built %d entries, want 24", nb.Len())
		}
	}
}
