package node

import (
	"fmt"
	"slices"
	"testing"

	"github.com/bwkv/bwkv/delta"
)

// fakeRetention: txids >= low are unretired; commits maps the committed
// ones to their commit timestamps.
type fakeRetention struct {
	low     uint64
	commits map[uint64]uint64
	starts  []uint64
	p       uint64
	calls   int
	// rolledBack: unretired txids rolled back to the end.
	rolledBack map[uint64]bool
}

func (f *fakeRetention) Low() uint64 { return f.low }
func (f *fakeRetention) CommitTS(id uint64) (uint64, bool) {
	c, ok := f.commits[id]
	return c, ok
}
func (f *fakeRetention) RolledBack(id uint64) bool { return f.rolledBack[id] }
func (f *fakeRetention) Readers(dst []uint64) ([]uint64, uint64) {
	f.calls++
	return append(dst[:0], f.starts...), f.p
}

// retiringRetention is a fakeRetention whose rolled-back txns retire
// right after the first RolledBack call that reports them: the status
// lookups then miss, as they do once mvcc retires a txn.
type retiringRetention struct{ fakeRetention }

func (f *retiringRetention) RolledBack(id uint64) bool {
	rb := f.rolledBack[id]
	delete(f.rolledBack, id)
	return rb
}

// keyPage returns a page whose base holds key k by retired txid 7 and
// whose chain holds ds, oldest first.
func keyPage(ds ...*delta.Delta) *Page {
	var bd delta.Builder
	bd.Add([]byte("k"), []byte("v"), 7, 0, 0)
	p := &Page{Base: bd.Finish(nil, nil, 0, 0)}
	for _, d := range ds {
		p = p.Prepend(d)
	}
	return p
}

// keptIDs lists the collected versions as txid/seq, in order.
func keptIDs(c *Contents) []string {
	var kept []string
	for _, v := range c.vers {
		kept = append(kept, fmt.Sprintf("%d/%d", v.txid, v.seq))
	}
	return kept
}

// TestRetention: per key, consolidation keeps uncommitted versions, the
// newest committed one, the newest at or below each reader's start (and
// the bound p for unlisted readers), and the newest retired one.
func TestRetention(t *testing.T) {
	// txid i commits at ts 2i (txids 1..3 retired: low 4); 9 is active,
	// 8 aborted (not committed), 6 and 7 committed by the same key's
	// writers in order.
	commits := map[uint64]uint64{4: 8, 5: 10, 6: 12, 7: 14}
	const never = ^uint64(0)
	cases := []struct {
		name   string
		starts []uint64
		p      uint64
		want   []uint64 // kept txids, newest first
		reads  bool     // Readers consulted
	}{
		{"no readers", nil, never, []uint64{9, 8, 7, 3}, true},
		{"reader at 11", []uint64{11}, never, []uint64{9, 8, 7, 5, 3}, true},
		{"readers at 8, 9, 13", []uint64{8, 9, 13}, never, []uint64{9, 8, 7, 6, 4, 3}, true},
		{"reader below every commit", []uint64{7}, never, []uint64{9, 8, 7, 3}, true},
		{"unlisted readers from 10", nil, 10, []uint64{9, 8, 7, 6, 5, 3}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var bd delta.Builder
			for id := uint64(1); id <= 3; id++ {
				// Retired versions, newest first in the base.
				bd.Add([]byte("k"), []byte("v"), 4-id, 0, 0)
			}
			p := &Page{Base: bd.Finish(nil, nil, 0, 0)}
			for id := uint64(4); id <= 9; id++ {
				p = p.Prepend(delta.New([]byte("k"), fmt.Appendf(nil, "v%d", id), id, 0, 0))
			}
			r := &fakeRetention{low: 4, commits: commits, starts: c.starts, p: c.p}
			got := p.Collect(r)
			var ids []uint64
			for _, v := range got.vers {
				ids = append(ids, v.txid)
			}
			if !slices.Equal(ids, c.want) {
				t.Fatalf("kept %v, want %v", ids, c.want)
			}
			if (r.calls > 0) != c.reads || r.calls > 1 {
				t.Fatalf("Readers called %d times", r.calls)
			}
		})
	}
	// A txn known rolled back to the end is masked by its CLRs as a
	// retired one is: its versions go with the CLRs, and the versions
	// under them stay (10 wrote k twice and rolled back; 11 still open
	// wrote a version and compensated it: its CLR stays, and the
	// version under it goes as an older write of an open txn).
	rp := keyPage(
		delta.New([]byte("k"), []byte("a"), 10, 1, 0),
		delta.New([]byte("k"), []byte("b"), 10, 2, 0),
		delta.New([]byte("k"), []byte("v"), 10, 3, delta.CLR),
		delta.New([]byte("k"), []byte("v"), 10, 4, delta.CLR),
		delta.New([]byte("k"), []byte("c"), 11, 1, 0),
		delta.New([]byte("k"), []byte("v"), 11, 2, delta.CLR),
	)
	rr := &fakeRetention{low: 4, commits: commits, p: never, rolledBack: map[uint64]bool{10: true}}
	if kept, want := keptIDs(rp.Collect(rr)), []string{"11/2", "7/0"}; !slices.Equal(kept, want) {
		t.Fatalf("rolled back: kept %v, want %v", kept, want)
	}

	// A rolled-back txn that retires between its CLR and its version (a
	// concurrent retirement: RolledBack and CommitTS then answer false):
	// the version still goes with the CLR that was dropped, or it would
	// be kept without one and read as a retired, visible version.
	gp := keyPage(
		delta.New([]byte("k"), []byte("a"), 10, 1, 0),
		delta.New([]byte("k"), []byte("v"), 10, 2, delta.CLR),
	)
	gr := &retiringRetention{fakeRetention{low: 4, commits: commits, p: never, rolledBack: map[uint64]bool{10: true}}}
	if kept, want := keptIDs(gp.Collect(gr)), []string{"7/0"}; !slices.Equal(kept, want) {
		t.Fatalf("retired mid-run: kept %v, want %v", kept, want)
	}

	// An open txn that wrote a key three times keeps only its newest
	// write, above the committed versions the rule keeps anyway; once it
	// commits, its newest write is the newest committed version.
	var writes []*delta.Delta
	for seq := uint32(1); seq <= 3; seq++ {
		writes = append(writes, delta.New([]byte("k"), fmt.Appendf(nil, "w%d", seq), 12, seq, 0))
	}
	op := keyPage(writes...)
	if kept, want := keptIDs(op.Collect(&fakeRetention{low: 4, commits: commits, p: never})), []string{"12/3", "7/0"}; !slices.Equal(kept, want) {
		t.Fatalf("open txn: kept %v, want %v", kept, want)
	}

	// One committed unretired version per key: the reader set is not
	// needed and not fetched.
	p := leaf([]string{"a", "b"}, []string{"a", "b"})
	r := &fakeRetention{low: 100, commits: map[uint64]uint64{100: 200, 101: 201}}
	if c := p.Collect(r); c.Keys() != 2 || r.calls != 0 {
		t.Fatalf("keys %d, Readers called %d times", c.Keys(), r.calls)
	}
}

// TestCollectAll: a nil Retention keeps every version, an open txn's
// older writes and CLRs included (the GC's merge of part of a chain).
func TestCollectAll(t *testing.T) {
	p := keyPage(
		delta.New([]byte("k"), []byte("a"), 10, 1, 0),
		delta.New([]byte("k"), []byte("b"), 10, 2, 0),
		delta.New([]byte("k"), []byte("v"), 10, 3, delta.CLR),
		delta.New([]byte("k"), []byte("c"), 11, 1, 0),
		delta.New([]byte("k"), []byte("d"), 11, 2, 0),
	)
	if kept, want := keptIDs(p.Collect(nil)), []string{"11/2", "11/1", "10/3", "10/2", "10/1", "7/0"}; !slices.Equal(kept, want) {
		t.Fatalf("kept %v, want %v", kept, want)
	}
}
