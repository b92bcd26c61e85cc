package node

import (
	"fmt"
	"slices"
	"testing"
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
