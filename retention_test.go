package bwkv_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
)

// TestSnapshotVersionsBounded: with snapshots held open, 4,000 updates of
// one key leave at most (distinct reader timestamps + 2) versions after
// consolidation, plus the unconsolidated chain, and each snapshot still
// reads its own version. Before, every version newer than the oldest
// snapshot stayed (4,000 versions, ~4 MiB resident for 1 KiB values).
func TestSnapshotVersionsBounded(t *testing.T) {
	const chainMax = 8
	db := openTest(t, &bwkv.Options{DeltaChainMax: chainMax})
	key := []byte("hot")
	val := func(i int) []byte { return fmt.Appendf(make([]byte, 0, 1024), "%01024d", i) }
	put := func(i int) {
		t.Helper()
		if err := db.Put(key, val(i)); err != nil {
			t.Fatal(err)
		}
	}
	put(0)
	s1, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	var s2 *bwkv.Snapshot
	peak := 0
	t0 := time.Now()
	for i := 1; i <= 4000; i++ {
		put(i)
		if i == 2000 {
			if s2, err = db.NewSnapshot(); err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
		}
		n, err := db.KeyVersions(key)
		if err != nil {
			t.Fatal(err)
		}
		peak = max(peak, n)
	}
	el := time.Since(t0)
	// Two snapshots: newest, one per snapshot, the newest retired one,
	// plus a chain not yet consolidated.
	bound := 2 + 2 + chainMax
	t.Logf("4000 updates with 2 snapshots: peak %d versions of the key (bound %d), %v", peak, bound, el)
	if peak > bound {
		t.Fatalf("peak %d versions of one key, want <= %d", peak, bound)
	}
	for _, c := range []struct {
		s    *bwkv.Snapshot
		want int
	}{{s1, 0}, {s2, 2000}} {
		got, err := c.s.Get(key)
		if err != nil || string(got) != string(val(c.want)) {
			t.Fatalf("snapshot of update %d reads %.12q, %v", c.want, got, err)
		}
	}
	if got, err := db.Get(key); err != nil || string(got) != string(val(4000)) {
		t.Fatalf("latest read %.12q, %v", got, err)
	}
}
