package pool

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
)

// findTables returns tables of ascending addresses: a checkpoint's frames
// with random gaps, dense runs far apart, addresses growing geometrically,
// the largest addresses, and tables of every size around the sample's
// spacing.
func findTables(rng *rand.Rand) map[string][]uint64 {
	tabs := map[string][]uint64{}
	var a []uint64
	for x := uint64(1000); len(a) < 5000; x++ {
		if rng.IntN(10) < 4 {
			a = append(a, x)
		}
	}
	tabs["gaps"] = a
	a = nil
	for i := range 3000 {
		a = append(a, uint64(10+i))
	}
	for i := range 3000 {
		a = append(a, uint64(1<<40+i*3))
	}
	tabs["runs"] = a
	a = nil
	for x := uint64(1); x < 1<<58; x = x*5/4 + 1 {
		a = append(a, x)
	}
	tabs["geometric"] = a
	tabs["top"] = []uint64{^uint64(0) - 2, ^uint64(0) - 1, ^uint64(0)}
	for _, n := range []int{0, 1, 2, 3, sampleEvery - 1, sampleEvery, sampleEvery + 1, 2 * sampleEvery, 2*sampleEvery + 1, 5*sampleEvery - 1} {
		a = nil
		for i := range n {
			a = append(a, uint64(3*i+1))
		}
		tabs[fmt.Sprintf("n%d", n)] = a
	}
	return tabs
}

// TestFindMatchesSearch: find's answer is the lower bound a plain search
// of the addresses gives, for every address a table holds, its
// neighbours, and addresses at random.
func TestFindMatchesSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, addrs := range findTables(rng) {
		entries := make([]entry, len(addrs))
		for i, a := range addrs {
			entries[i] = entry{addr: a, off: int64(i), pid: a}
		}
		r := &File{table: table{addrs: addrs, slots: make([]slot, len(entries)), sample: sampleOf(addrs)}}
		for i, e := range entries {
			r.slots[i] = slot{off: e.off, len: e.len, crc: e.crc, pid: e.pid}
		}
		check := func(q uint64) {
			want := sort.Search(len(addrs), func(i int) bool { return addrs[i] >= q })
			got, ok := r.find(q)
			wantOK := want < len(addrs) && addrs[want] == q
			if got != want || ok != wantOK {
				t.Fatalf("%s: find(%d) = %d, %v; want %d, %v", name, q, got, ok, want, wantOK)
			}
			if ok && r.entry(got) != entries[want] {
				t.Fatalf("%s: entry %d = %+v; want %+v", name, got, r.entry(got), entries[want])
			}
		}
		check(0)
		check(^uint64(0))
		for _, a := range addrs {
			check(a)
			check(a - 1)
			check(a + 1)
		}
		for range 2000 {
			check(rng.Uint64())
			if len(addrs) > 0 {
				lo, hi := addrs[0], addrs[len(addrs)-1]
				check(lo + rng.Uint64N(hi-lo+1))
			}
		}
	}
}
