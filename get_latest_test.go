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

// TestGetLatestUnderConsolidation: DB.Get registers no snapshot (its
// visibility samples the timestamp after it loaded the leaf state it
// searches), so it must stay exact while writers consolidate the page on
// every write and no reader holds back the old versions: counters that
// only grow read back, per reader, never missing and never smaller than a
// value the reader saw before or a value committed before its read began.
// (Sampling the timestamp before the descent, unregistered, reads keys as
// missing here: a consolidation between the sample and the load drops the
// version the sample sees.)
func TestGetLatestUnderConsolidation(t *testing.T) {
	o := &bwkv.Options{DeltaChainMax: 1, Durability: bwkv.DurabilityRelaxed}
	db := openTest(t, o)
	const keys = 4
	key := func(i int) []byte { return fmt.Appendf(nil, "c%d", i) }
	var committed [keys]atomic.Int64
	for i := 0; i < keys; i++ {
		mustPut(t, db, string(key(i)), "0")
	}
	deadline := time.Now().Add(time.Second)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	wg.Add(1)
	go func() { // the writer: each counter goes up by one per write
		defer wg.Done()
		defer close(stop)
		for n := 1; time.Now().Before(deadline); n++ {
			i := n % keys
			v := committed[i].Load() + 1
			if err := db.Put(key(i), []byte(strconv.FormatInt(v, 10))); err != nil {
				errs <- err
				return
			}
			committed[i].Store(v)
		}
	}()
	var reads atomic.Int64
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
