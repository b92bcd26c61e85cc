package checkpoint

import (
	"cmp"
	"slices"
	"testing"

	"github.com/bwkv/bwkv/gc"
)

// TestBlobReuse: reuse finds a durable blob by version, length and CRC,
// in a short list scanned as it is and in a long one sorted by version
// (as durable leaves them); a version whose length or CRC differs is not
// reused, nor is a version the list lacks.
func TestBlobReuse(t *testing.T) {
	for _, n := range []int{3, blobScan, blobScan + 1, 4 * blobScan} {
		var list []gc.Blob
		for i := range n {
			list = append(list, gc.Blob{Addr: uint64(1000 + i), ID: uint64(i*7919) % 10007, Len: 100, CRC: uint32(i)})
		}
		// A second blob of version 0 with another CRC (a collision),
		// listed first: the search must go on past it.
		list = append([]gc.Blob{{Addr: 999, ID: 0, Len: 100, CRC: 77}}, list...)
		if len(list) > blobScan {
			slices.SortStableFunc(list, func(x, y gc.Blob) int { return cmp.Compare(x.ID, y.ID) })
		}
		for i := range n {
			id := uint64(i*7919) % 10007
			if got := reuse(list, id, 100, uint32(i)); got != uint64(1000+i) {
				t.Fatalf("n=%d: version %d reused %d, want %d", n, id, got, 1000+i)
			}
			if got := reuse(list, id, 101, uint32(i)); got != 0 {
				t.Fatalf("n=%d: version %d with another length reused %d", n, id, got)
			}
			if got := reuse(list, id, 100, uint32(i)+1000); got != 0 {
				t.Fatalf("n=%d: version %d with another CRC reused %d", n, id, got)
			}
		}
		if got := reuse(list, 0, 100, 77); got != 999 {
			t.Fatalf("n=%d: the colliding blob: %d, want 999", n, got)
		}
		if got := reuse(list, 10008, 100, 0); got != 0 {
			t.Fatalf("n=%d: a version not in the list reused %d", n, got)
		}
	}
}
