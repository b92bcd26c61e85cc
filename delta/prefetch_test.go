package delta

import (
	"bytes"
	"fmt"
	"testing"
)

// TestPrefetchHints runs the hints over an empty base and over a base with
// empty and 4 KiB values (longer than one hint asks for), the last one
// empty (its offset is the end of the values: a hint must not index
// there): they return and the base reads as before.
func TestPrefetchHints(t *testing.T) {
	var empty Builder
	eb := empty.Finish(nil, nil, 0, 0)
	eb.PrefetchHeader()
	eb.PrefetchEntries()

	var bd Builder
	vals := [][]byte{nil, []byte("v"), bytes.Repeat([]byte("x"), 4096), nil}
	for i, v := range vals {
		bd.Add(fmt.Appendf(nil, "k%d", i), v, uint64(i+1), 1, 0)
	}
	b := bd.Finish(nil, nil, 0, 0)
	b.PrefetchHeader()
	b.PrefetchEntries()
	for i := range vals {
		b.PrefetchValue(i)
	}
	for i, v := range vals {
		if !bytes.Equal(b.ValueAt(i), v) || string(b.KeyAt(i)) != fmt.Sprintf("k%d", i) {
			t.Fatalf("entry %d reads %q=%q after the hints", i, b.KeyAt(i), b.ValueAt(i))
		}
	}
}
