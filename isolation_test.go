package bwkv_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
)

// Isolation anomaly tests (docs/crash-safety.md, layer 2), named after Adya's
// phenomena and Berenson et al.'s P4.

func mustBegin(t *testing.T, db *bwkv.DB) *bwkv.Txn {
	t.Helper()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func mustPut(t *testing.T, w interface{ Put(k, v []byte) error }, k, v string) {
	t.Helper()
	if err := w.Put([]byte(k), []byte(v)); err != nil {
		t.Fatalf("put %s=%s: %v", k, v, err)
	}
}

func wantValue(t *testing.T, get func([]byte) ([]byte, error), k, want string) {
	t.Helper()
	v, err := get([]byte(k))
	if want == "" {
		if !errors.Is(err, bwkv.ErrNotFound) {
			t.Fatalf("get %s = %q, %v; want not found", k, v, err)
		}
		return
	}
	if err != nil || string(v) != want {
		t.Fatalf("get %s = %q, %v; want %q", k, v, err, want)
	}
}

// G0: write cycles (dirty writes) — a second writer of an uncommitted key
// waits for the first; once that one commits, the second is refused.
func TestG0DirtyWrite(t *testing.T) {
	db := openTest(t, nil)
	t1, t2 := mustBegin(t, db), mustBegin(t, db)
	mustPut(t, t1, "x", "1")
	res := make(chan error, 1)
	go func() { res <- t2.Put([]byte("x"), []byte("2")) }()
	waitForWaiter(t, t2)
	mustPut(t, t1, "y", "1")
	if err := t1.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-res; !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("second writer: %v, want ErrConflict", err)
	}
	// t2 is doomed: every later call fails, nothing of it applies.
	if err := t2.Put([]byte("z"), []byte("2")); !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("doomed txn put: %v", err)
	}
	if err := t2.Commit(); !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("doomed txn commit: %v", err)
	}
	wantValue(t, db.Get, "x", "1")
	wantValue(t, db.Get, "z", "")
}

// G1a: aborted reads — nobody ever sees a rolled-back write, before or
// after the rollback, including after the txn retires.
func TestG1aAbortedRead(t *testing.T) {
	db := openTest(t, &bwkv.Options{PageSplitEntries: 4, DeltaChainMax: 1})
	mustPut(t, db, "x", "old")
	t1 := mustBegin(t, db)
	mustPut(t, t1, "x", "dirty")
	if err := t1.Delete([]byte("x")); err != nil {
		t.Fatal(err)
	}
	mustPut(t, t1, "new", "dirty")
	s1, _ := db.NewSnapshot()
	wantValue(t, s1.Get, "x", "old")
	wantValue(t, db.Get, "new", "")
	if err := t1.Rollback(); err != nil {
		t.Fatal(err)
	}
	wantValue(t, s1.Get, "x", "old")
	wantValue(t, db.Get, "x", "old")
	wantValue(t, db.Get, "new", "")
	s1.Close()
	// Retire the aborted txn, force consolidations, read again.
	db.Checkpoint()
	for i := 0; i < 20; i++ {
		mustPut(t, db, fmt.Sprintf("f%02d", i), "v")
	}
	db.Checkpoint()
	wantValue(t, db.Get, "x", "old")
	wantValue(t, db.Get, "new", "")
}

// G1b: intermediate reads — only a txn's final value is ever visible.
func TestG1bIntermediateRead(t *testing.T) {
	db := openTest(t, nil)
	mustPut(t, db, "x", "0")
	t1 := mustBegin(t, db)
	mustPut(t, t1, "x", "1")
	wantValue(t, db.Get, "x", "0")
	mustPut(t, t1, "x", "2")
	wantValue(t, t1.Get, "x", "2")
	if err := t1.Commit(); err != nil {
		t.Fatal(err)
	}
	wantValue(t, db.Get, "x", "2")
}

// G1c: circular information flow — two concurrent txns never see each
// other's writes.
func TestG1cCircularFlow(t *testing.T) {
	db := openTest(t, nil)
	mustPut(t, db, "x", "0")
	mustPut(t, db, "y", "0")
	t1, t2 := mustBegin(t, db), mustBegin(t, db)
	mustPut(t, t1, "x", "1")
	mustPut(t, t2, "y", "2")
	wantValue(t, t1.Get, "y", "0")
	wantValue(t, t2.Get, "x", "0")
	if err := t1.Commit(); err != nil {
		t.Fatal(err)
	}
	wantValue(t, t2.Get, "x", "0")
	if err := t2.Commit(); err != nil {
		t.Fatal(err)
	}
	wantValue(t, db.Get, "x", "1")
	wantValue(t, db.Get, "y", "2")
}

// P4: lost update — two read-modify-write txns on one key: the second
// writer fails.
func TestP4LostUpdate(t *testing.T) {
	db := openTest(t, nil)
	mustPut(t, db, "x", "10")
	t1, t2 := mustBegin(t, db), mustBegin(t, db)
	wantValue(t, t1.Get, "x", "10")
	wantValue(t, t2.Get, "x", "10")
	mustPut(t, t1, "x", "11")
	if err := t1.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := t2.Put([]byte("x"), []byte("11")); !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("second increment: %v, want ErrConflict", err)
	}
	if err := t2.Commit(); !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("commit: %v", err)
	}
	wantValue(t, db.Get, "x", "11")
}

// A rollback between the real last writer and me must not hide that
// writer: its compensation is ignored by the conflict test, before and
// after the aborted txn retires.
func TestConflictSeesPastCompensation(t *testing.T) {
	db := openTest(t, &bwkv.Options{PageSplitEntries: 4, DeltaChainMax: 1})
	mustPut(t, db, "x", "0")
	me := mustBegin(t, db)
	mustPut(t, db, "x", "1") // committed after me began
	c := mustBegin(t, db)
	mustPut(t, c, "x", "c")
	if err := c.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := me.Put([]byte("x"), []byte("me")); !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("write past a compensation: %v, want ErrConflict", err)
	}
	me.Rollback()
	wantValue(t, db.Get, "x", "1")
	// Once both aborted txns retire, a new writer is not refused by their
	// versions or compensations, and readers see the last committed value.
	db.Checkpoint()
	wantValue(t, db.Get, "x", "1")
	w := mustBegin(t, db)
	mustPut(t, w, "x", "w")
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	wantValue(t, db.Get, "x", "w")
}

// Read skew: a txn reading two keys sees one consistent state even when a
// transfer commits between its reads.
func TestReadSkew(t *testing.T) {
	db := openTest(t, nil)
	mustPut(t, db, "x", "50")
	mustPut(t, db, "y", "50")
	r := mustBegin(t, db)
	wantValue(t, r.Get, "x", "50")
	if err := db.Update(func(tx *bwkv.Txn) error {
		if err := tx.Put([]byte("x"), []byte("10")); err != nil {
			return err
		}
		return tx.Put([]byte("y"), []byte("90"))
	}); err != nil {
		t.Fatal(err)
	}
	wantValue(t, r.Get, "y", "50")
	r.Rollback()
}

// Fractured reads: a snapshot sees all of a txn's writes or none.
func TestFracturedRead(t *testing.T) {
	db := openTest(t, &bwkv.Options{PageSplitEntries: 4, DeltaChainMax: 2})
	for i := 0; i < 50; i++ {
		mustPut(t, db, fmt.Sprintf("k%02d", i), "0")
	}
	s0, _ := db.NewSnapshot()
	if err := db.Update(func(tx *bwkv.Txn) error {
		for i := 0; i < 50; i++ {
			if err := tx.Put([]byte(fmt.Sprintf("k%02d", i)), []byte("1")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s1, _ := db.NewSnapshot()
	for _, c := range []struct {
		s    *bwkv.Snapshot
		want string
	}{{s0, "0"}, {s1, "1"}} {
		it, _ := c.s.NewIter(nil)
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			if string(it.Value()) != c.want {
				t.Fatalf("fractured: %s = %s, want %s", it.Key(), it.Value(), c.want)
			}
			n++
		}
		if n != 50 || it.Error() != nil {
			t.Fatalf("saw %d keys (%v)", n, it.Error())
		}
		it.Close()
		c.s.Close()
	}
}

// Write skew is allowed under snapshot isolation: two txns each read both
// keys and write a different one; both commit. This documents the anomaly
// SI permits (use a shared key to serialize such txns).
func TestWriteSkewAllowed(t *testing.T) {
	db := openTest(t, nil)
	mustPut(t, db, "oncall-a", "1")
	mustPut(t, db, "oncall-b", "1")
	t1, t2 := mustBegin(t, db), mustBegin(t, db)
	wantValue(t, t1.Get, "oncall-b", "1")
	wantValue(t, t2.Get, "oncall-a", "1")
	mustPut(t, t1, "oncall-a", "0")
	mustPut(t, t2, "oncall-b", "0")
	if err := t1.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := t2.Commit(); err != nil {
		t.Fatalf("write skew refused (SI allows it): %v", err)
	}
	wantValue(t, db.Get, "oncall-a", "0")
	wantValue(t, db.Get, "oncall-b", "0")
}

// TestBank: goroutines transfer between accounts; every snapshot sums to
// the initial total. Duration from BWKV_BANK_MS (CI default 2000).
func TestBank(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		testBank(t, &bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 4})
	})
	// Leaves are evicted and reloaded under the transfers and audits.
	t.Run("tiny-cache", func(t *testing.T) {
		testBank(t, &bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 4, CacheBytes: 1, CheckpointBytes: 4096})
	})
}

func testBank(t *testing.T, o *bwkv.Options) {
	const accounts, initial = 100, 1000
	db := openTest(t, o)
	acct := func(i int) []byte { return []byte(fmt.Sprintf("acct%03d", i)) }
	for i := 0; i < accounts; i++ {
		mustPut(t, db, string(acct(i)), strconv.Itoa(initial))
	}
	d := time.Duration(envInt("BWKV_BANK_MS", 2000)) * time.Millisecond
	if testing.Short() {
		d = 300 * time.Millisecond
	}
	// The workload runs for d; with the tiny cache, on until a leaf was
	// evicted and read again (at most 30 s): pages are evicted only once
	// a checkpoint made them clean, and how soon that happens depends on
	// the machine's speed, not on the duration chosen.
	var stop atomic.Bool
	go func() {
		start := time.Now()
		for time.Since(start) < d || (o.CacheBytes == 1 && time.Since(start) < 30*time.Second && db.Stats().Cache.Misses == 0) {
			time.Sleep(20 * time.Millisecond)
		}
		stop.Store(true)
	}()
	var wg sync.WaitGroup
	var transfers, conflicts, audits atomic.Int64
	errc := make(chan error, 16)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for !stop.Load() {
				a, b := rng.IntN(accounts), rng.IntN(accounts)
				if a == b {
					continue
				}
				amt := rng.IntN(50)
				err := db.Update(func(tx *bwkv.Txn) error {
					va, err := tx.Get(acct(a))
					if err != nil {
						return err
					}
					vb, err := tx.Get(acct(b))
					if err != nil {
						return err
					}
					na, _ := strconv.Atoi(string(va))
					nb, _ := strconv.Atoi(string(vb))
					if err := tx.Put(acct(a), []byte(strconv.Itoa(na-amt))); err != nil {
						return err
					}
					return tx.Put(acct(b), []byte(strconv.Itoa(nb+amt)))
				})
				switch {
				case err == nil:
					transfers.Add(1)
				case errors.Is(err, bwkv.ErrConflict):
					conflicts.Add(1)
				default:
					errc <- err
					return
				}
			}
		}(g)
	}
	for g := 0; g < 2; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				err := db.View(func(s *bwkv.Snapshot) error {
					it, err := s.NewIter(nil)
					if err != nil {
						return err
					}
					defer it.Close()
					sum, n := 0, 0
					for ok := it.First(); ok; ok = it.Next() {
						v, _ := strconv.Atoi(string(it.Value()))
						sum += v
						n++
					}
					if err := it.Error(); err != nil {
						return fmt.Errorf("audit after %d accounts: %w", n, err)
					}
					if n != accounts || sum != accounts*initial {
						return fmt.Errorf("audit: %d accounts sum %d, want %d and %d", n, sum, accounts, accounts*initial)
					}
					return nil
				})
				if err != nil {
					errc <- err
					return
				}
				audits.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if transfers.Load() == 0 || audits.Load() == 0 {
		t.Fatalf("no progress: %d transfers, %d audits", transfers.Load(), audits.Load())
	}
	st := db.Stats()
	t.Logf("%d transfers, %d conflicts, %d audits; cache: %d evictions, %d misses", transfers.Load(), conflicts.Load(), audits.Load(), st.Cache.Evictions, st.Cache.Misses)
	if o.CacheBytes == 1 && (st.Cache.Evictions == 0 || st.Cache.Misses == 0) {
		t.Fatalf("the tiny cache never evicted and reloaded a page: %+v", st.Cache)
	}
	if err := db.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentSMOs: writers own disjoint key sets and churn them (puts
// and deletes, so pages split and merge) while scanners and readers run;
// every scan is ordered, and at the end the DB equals the union of the
// writers' models.
func TestConcurrentSMOs(t *testing.T) {
	db := openTest(t, &bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 2})
	const writers, perWriter = 4, 400
	d := time.Duration(envInt("BWKV_SMO_MS", 1500)) * time.Millisecond
	if testing.Short() {
		d = 300 * time.Millisecond
	}
	deadline := time.Now().Add(d)
	models := make([]map[string]string, writers)
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for g := 0; g < writers; g++ {
		models[g] = map[string]string{}
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			m := models[g]
			for n := 0; time.Now().Before(deadline); n++ {
				k := fmt.Sprintf("k%04d-%d", rng.IntN(perWriter), g)
				// Grow in the first half, shrink in the second: pages
				// split, then empty out and merge.
				del := rng.IntN(5) == 0
				if time.Until(deadline) < d/2 {
					del = rng.IntN(5) != 0
				}
				if del {
					if err := db.Delete([]byte(k)); err != nil {
						errc <- err
						return
					}
					delete(m, k)
				} else {
					v := strconv.Itoa(n)
					if err := db.Put([]byte(k), []byte(v)); err != nil {
						errc <- err
						return
					}
					m[k] = v
				}
				if n%50 == 0 {
					got, err := db.Get([]byte(k))
					want, ok := m[k]
					if ok != (err == nil) || string(got) != want {
						errc <- fmt.Errorf("writer %d: get %s = %q, %v; want %q", g, k, got, err, want)
						return
					}
				}
			}
			// Then delete nine keys in ten, however fast the machine was:
			// leaves empty out and merge in every run.
			// (Two sweeps: the second one's consolidations find the first
			// one's tombstones retired and drop them.)
			for i := 0; i < 2*perWriter; i++ {
				if i == perWriter {
					time.Sleep(20 * time.Millisecond) // let retirement catch up
				}
				if i%perWriter%10 == 0 {
					continue
				}
				k := fmt.Sprintf("k%04d-%d", i%perWriter, g)
				if err := db.Delete([]byte(k)); err != nil {
					errc <- err
					return
				}
				delete(m, k)
			}
		}(g)
	}
	scanDone := make(chan struct{})
	var sg sync.WaitGroup
	for g := 0; g < 2; g++ {
		sg.Add(1)
		go func(g int) {
			defer sg.Done()
			for {
				select {
				case <-scanDone:
					return
				default:
				}
				s, _ := db.NewSnapshot()
				it, _ := s.NewIter(nil)
				var prev []byte
				fwd := g == 0
				ok := it.First()
				if !fwd {
					ok = it.Last()
				}
				for ; ok; ok = map[bool]func() bool{true: it.Next, false: it.Prev}[fwd]() {
					if prev != nil {
						c := string(it.Key()) > string(prev)
						if c != fwd {
							errc <- fmt.Errorf("scan out of order: %q after %q (forward=%v)", it.Key(), prev, fwd)
							it.Close()
							s.Close()
							return
						}
					}
					prev = append(prev[:0], it.Key()...)
				}
				it.Close()
				s.Close()
			}
		}(g)
	}
	wg.Wait()
	close(scanDone)
	sg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, m := range models {
		for k, v := range m {
			want[k] = v
		}
	}
	s, _ := db.NewSnapshot()
	defer s.Close()
	it, _ := s.NewIter(nil)
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if want[string(it.Key())] != string(it.Value()) {
			t.Fatalf("%s = %q, want %q", it.Key(), it.Value(), want[string(it.Key())])
		}
		n++
	}
	if n != len(want) || it.Error() != nil {
		t.Fatalf("db has %d keys, models %d (%v)", n, len(want), it.Error())
	}
	if err := db.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := db.Stats().Tree
	t.Logf("splits %d merges %d consolidations %d", st.Splits, st.Merges, st.Consolidations)
	if st.Splits == 0 || st.Merges == 0 {
		t.Fatalf("workload did not split and merge: %+v", st)
	}
}
