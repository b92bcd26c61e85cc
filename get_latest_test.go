package bwkv_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
)

// TestGetLatestUnderConsolidation: DB.Get reads a key's newest committed
// value while a writer consolidates its page on every write and no other
// reader holds old versions back: counters that only grow read back, per
// reader, never missing and never smaller than a value the reader saw
// before or a value committed before its read began. (A Get that took its
// timestamp before the descent without registering it fails here, in
// about two runs of three: a consolidation between the two dropped the
// version it sees.)
func TestGetLatestUnderConsolidation(t *testing.T) {
	o := &bwkv.Options{DeltaChainMax: 1, Durability: bwkv.DurabilityRelaxed}
	db := openTest(t, o)
	const keys = 4
	key := func(i int) []byte { return fmt.Appendf(nil, "c%d", i) }
	var committed [keys]atomic.Int64
	for i := 0; i < keys; i++ {
		mustPut(t, db, string(key(i)), "0")
	}
	// The writer runs for at least a second and until the reads have raced
	// 1000 consolidations; on a loaded machine that can take longer, so the
	// limit is a hang detector, not the test's length.
	start := time.Now()
	minEnd, hang := start.Add(time.Second), start.Add(60*time.Second)
	var reads atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	wg.Add(1)
	go func() { // the writer: each counter goes up by one per write
		defer wg.Done()
		defer close(stop)
		for n := 1; ; n++ {
			if n%256 == 0 {
				now := time.Now()
				if now.After(hang) {
					errs <- fmt.Errorf("after %v: %d consolidations, %d reads; want 1000 and some reads", now.Sub(start), db.Stats().Tree.Consolidations, reads.Load())
					return
				}
				if now.After(minEnd) && reads.Load() > 0 && db.Stats().Tree.Consolidations >= 1000 {
					return
				}
			}
			i := n % keys
			v := committed[i].Load() + 1
			if err := db.Put(key(i), []byte(strconv.FormatInt(v, 10))); err != nil {
				errs <- err
				return
			}
			committed[i].Store(v)
		}
	}()
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last [keys]int64
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				i := n % keys
				floor := committed[i].Load()
				got, err := db.Get(key(i))
				if err != nil {
					if errors.Is(err, bwkv.ErrNotFound) {
						err = fmt.Errorf("Get(%s) after %d reads: not found", key(i), n)
					}
					errs <- err
					return
				}
				v, err := strconv.ParseInt(string(got), 10, 64)
				if err != nil || v < floor || v < last[i] {
					errs <- fmt.Errorf("Get(%s) = %q (%v); committed before the read %d, seen before %d", key(i), got, err, floor, last[i])
					return
				}
				last[i] = v
				reads.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := db.Stats()
	t.Logf("%d reads, %d consolidations", reads.Load(), st.Tree.Consolidations)
	if st.Tree.Consolidations < 1000 {
		t.Fatalf("%d consolidations: the reads did not race them", st.Tree.Consolidations)
	}
}
