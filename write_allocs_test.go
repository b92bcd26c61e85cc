package bwkv_test

import (
	"fmt"
	"testing"

	"github.com/bwkv/bwkv"
)

// writeAllocBudget is the heap allocations a read-modify-write of an
// existing key may average (DB.Update with a Get and a Put, consolidations
// amortized in), measured at 8: the Txn (its first undo entry inside it),
// the manager's transaction and its entry in the active map, the delta and
// its bytes, the new page state and the consolidations' share (with a
// carried base's carry and pending list since those came). The log's records and
// the checkpointer's throttle allocate nothing (they cost four more until
// a local escaped no longer). A step that starts allocating on every
// write shows here before it shows in a profile.
const writeAllocBudget = 8

// TestWriteAllocs holds the write path to writeAllocBudget allocations.
func TestWriteAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	db := openTest(t, &bwkv.Options{CheckpointBytes: 1 << 30})
	const keys = 2000
	val := make([]byte, 100)
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }
	for i := 0; i < keys; i++ {
		if err := db.Put(key(i), val); err != nil {
			t.Fatal(err)
		}
	}
	ks := make([][]byte, keys)
	for i := range ks {
		ks[i] = key(i * 7919 % keys)
	}
	n := 0
	buf := make([]byte, 0, 128)
	allocs := testing.AllocsPerRun(5000, func() {
		k := ks[n%keys]
		n++
		if err := db.Update(func(tx *bwkv.Txn) error {
			v, err := tx.GetAppend(buf[:0], k)
			if err != nil {
				return err
			}
			return tx.Put(k, v)
		}); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.1f allocations per read-modify-write", allocs)
	if allocs > writeAllocBudget {
		t.Fatalf("a read-modify-write allocates %.1f objects, budget %d", allocs, writeAllocBudget)
	}
}
