package bwkv_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
)

// Every transaction a durable DB counts among the writers a group-commit
// leader waits for leaves that count exactly once, however it ends: commit,
// read-only commit, rollback, conflict, lock wait, lock timeout or a write
// after the end. A leaked count would hold every later commit back.
func TestGatherCountBalanced(t *testing.T) {
	o := bwkv.WithTestGCVerify(&bwkv.Options{LockTimeout: 20 * time.Millisecond})
	o.Durability = bwkv.DurabilitySync
	db, err := bwkv.Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const workers, rounds = 8, 60
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				key := []byte(fmt.Sprintf("k%d", i%3)) // contended: waits and conflicts
				var err error
				switch (w + i) % 5 {
				case 0, 1: // read-modify-write
					err = db.Update(func(tx *bwkv.Txn) error {
						v, err := tx.Get(key)
						if err != nil && !errors.Is(err, bwkv.ErrNotFound) {
							return err
						}
						return tx.Put(key, append(v[:len(v):len(v)], 'x'))
					})
				case 2: // read only
					err = db.Update(func(tx *bwkv.Txn) error {
						_, err := tx.Get(key)
						if errors.Is(err, bwkv.ErrNotFound) {
							err = nil
						}
						return err
					})
				case 3: // a write rolled back
					tx, err2 := db.Begin()
					if err2 != nil {
						err = err2
						break
					}
					if err2 := tx.Put(key, []byte("gone")); err2 != nil && !errors.Is(err2, bwkv.ErrConflict) {
						err = err2
					}
					_ = tx.Rollback()
					_ = tx.Put(key, []byte("after")) // after the end: ErrTxnDone
				default: // a one-op write
					err = db.Put(key, []byte("p"))
				}
				if err != nil && !errors.Is(err, bwkv.ErrConflict) {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := bwkv.WALJoined(db); n != 0 {
		t.Fatalf("%d transactions still counted as about to commit after all ended", n)
	}
	st := db.Stats()
	t.Logf("commits %d, aborts %d, conflicts %d, lock timeouts %d, syncs %d, gathers %d (%v)",
		st.Txn.Commits, st.Txn.Aborts, st.Txn.Conflicts, st.Txn.LockTimeouts, st.WAL.Syncs, st.WAL.Gathers, st.WAL.GatherWait)
}
