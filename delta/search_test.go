package delta

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// naiveBound is the definition Search and Child implement.
func naiveBound(keys [][]byte, key []byte, strict bool) int {
	for i, k := range keys {
		if c := bytes.Compare(k, key); c > 0 || (!strict && c == 0) {
			return i
		}
	}
	return len(keys)
}

// TestSearchIndex: the prefix-word index gives the same answers as a
// plain binary search, for keys that share long prefixes, share the whole
// 8-byte word after the prefix, are prefixes of each other, hold zero
// bytes (a zero byte and the padding of a shorter key look alike), and
// for probes below, above and between the entries.
func TestSearchIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{0, 1, 'a', 'b', 0xff}
	randKey := func(prefix string) []byte {
		k := []byte(prefix)
		for range rng.IntN(24) {
			k = append(k, alphabet[rng.IntN(len(alphabet))])
		}
		return k
	}
	for round := range 3000 {
		// The last two share 8 and 14 bytes after "s" (one search word,
		// and nearly two): the second word and the tail past both decide.
		prefix := []string{"", "p", "prefix/shared/", "s07f_00000", "s07f_000", "s07f_000000000x"}[round%6]
		var keys [][]byte
		for range 1 + rng.IntN(40) {
			keys = append(keys, randKey(prefix))
		}
		if round%3 == 0 { // several versions of one key
			keys = append(keys, keys[0], keys[0])
		}
		slices.SortFunc(keys, bytes.Compare)
		var bd Builder
		for i, k := range keys {
			bd.Add(k, []byte{byte(i)}, uint64(i+1), 0, 0)
		}
		b := bd.Finish(nil, nil, 0, 0)
		probes := append(slices.Clone(keys), []byte{}, []byte{0xff, 0xff}, []byte(prefix))
		for _, k := range keys { // as long as an entry, differing in its last byte only
			if len(k) > 0 {
				m := slices.Clone(k)
				m[len(m)-1] ^= 1
				probes = append(probes, m)
			}
		}
		for range 20 {
			probes = append(probes, randKey(prefix), randKey(""))
		}
		for _, p := range probes {
			if got, want := b.Search(p), naiveBound(keys, p, false); got != want {
				t.Fatalf("round %d: Search(%q) = %d, want %d over %q", round, p, got, want, keys)
			}
			if got, want := b.bound(p, true), naiveBound(keys, p, true); got != want {
				t.Fatalf("round %d: strict bound(%q) = %d, want %d over %q", round, p, got, want, keys)
			}
			// KeyEqual decides by the search word where it can; it
			// must agree with a byte compare for every entry.
			for i, k := range keys {
				if got, want := b.KeyEqual(i, p), bytes.Equal(k, p); got != want {
					t.Fatalf("round %d: KeyEqual(%d, %q) = %v, entry %q", round, i, p, got, k)
				}
			}
		}
	}
}

// BenchmarkBaseSearch: a point search in a leaf of 28 entries with 1 KiB
// values (the kv_bench P2 shape), in an inner page of 128 separators, and
// in an inner page of 512 separators over 64 key buckets, as kv_bench's
// keys make them.
func BenchmarkBaseSearch(b *testing.B) {
	for _, c := range []struct {
		name    string
		n, vl   int
		buckets bool
	}{{"leaf28x1KiB", 28, 1024, false}, {"inner128", 128, 8, false}, {"inner512buckets", 512, 8, true}} {
		var bd Builder
		var keys [][]byte
		for i := range c.n {
			k := fmt.Appendf(nil, "s%03x_%010x", 0x7f, i*1024+0x7f)
			if c.buckets {
				// A kv_bench inner page: separators of many buckets,
				// several per bucket (the first 8 bytes after "s" tie).
				k = fmt.Appendf(nil, "s%03x_%010x", i/8, (i%8)*50000*1024+i/8)
			}
			k = append(k, bytes.Repeat([]byte("x"), 32-len(k))...)
			keys = append(keys, k)
			bd.Add(k, make([]byte, c.vl), uint64(i+1), 0, 0)
		}
		base := bd.Finish(nil, nil, 0, 0)
		b.Run(c.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if base.Search(keys[i%len(keys)]) != i%len(keys) {
					b.Fatal("wrong index")
				}
			}
		})
	}
}

// BenchmarkBaseSearchCold: point searches in random leaves of a set far
// larger than the CPU caches (2000 leaves of 28 x 1 KiB), where a probe
// into the slab is a cache miss: what a descent pays on a large tree.
func BenchmarkBaseSearchCold(b *testing.B) {
	const nb, ne = 2000, 28 // 57 MiB of slabs: well beyond the CPU caches
	bases := make([]*Base, nb)
	keys := make([][][]byte, nb)
	for j := range nb {
		var bd Builder
		for i := range ne {
			id := j*ne + i
			k := fmt.Appendf(nil, "s%03x_%010x", j%1024, id*1024+j%1024)
			k = append(k, bytes.Repeat([]byte("x"), 32-len(k))...)
			keys[j] = append(keys[j], k)
			bd.Add(k, make([]byte, 1024), uint64(i+1), 0, 0)
		}
		bases[j] = bd.Finish(nil, nil, 0, 0)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for b.Loop() {
		j, i := rng.IntN(nb), rng.IntN(ne)
		if bases[j].Search(keys[j][i]) != i {
			b.Fatal("wrong")
		}
	}
}
