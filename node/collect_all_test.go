package node

import (
	"fmt"
	"slices"
	"testing"

	"github.com/bwkv/bwkv/delta"
)

// TestCollectAll: a nil Retention keeps every version, an open txn's
// older writes and CLRs included (the GC's merge of part of a chain).
func TestCollectAll(t *testing.T) {
	var bd delta.Builder
	bd.Add([]byte("k"), []byte("v"), 7, 0, 0)
	p := &Page{Base: bd.Finish(nil, nil, 0, 0)}
	for _, d := range []*delta.Delta{
		delta.New([]byte("k"), []byte("a"), 10, 1, 0),
		delta.New([]byte("k"), []byte("b"), 10, 2, 0),
		delta.New([]byte("k"), []byte("v"), 10, 3, delta.CLR),
		delta.New([]byte("k"), []byte("c"), 11, 1, 0),
		delta.New([]byte("k"), []byte("d"), 11, 2, 0),
	} {
		p = p.Prepend(d)
	}
	var kept []string
	for _, v := range p.Collect(nil).vers {
		kept = append(kept, fmt.Sprintf("%d/%d", v.txid, v.seq))
	}
	if want := []string{"11/2", "11/1", "10/3", "10/2", "10/1", "7/0"}; !slices.Equal(kept, want) {
		t.Fatalf("kept %v, want %v", kept, want)
	}
}
