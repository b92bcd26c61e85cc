package bwkv_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
)

// Lock waits (a write meeting another txn's uncommitted version waits for
// that txn), Update's retries and the blind one-op writes.

// waitForWaiter blocks until tx waits for another txn's lock. The bound is
// a generous hang detector, not a timing assertion.
func waitForWaiter(t *testing.T, tx *bwkv.Txn) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !bwkv.TxnWaiting(tx); {
		if time.Now().After(end) {
			t.Fatal("txn never started waiting")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func TestWaiterProceedsOnRollback(t *testing.T) {
	db := openTest(t, &bwkv.Options{LockTimeout: time.Minute})
	mustPut(t, db, "x", "0")
	holder, waiter := mustBegin(t, db), mustBegin(t, db)
	mustPut(t, holder, "x", "holder")
	res := make(chan error, 1)
	go func() { res <- waiter.Put([]byte("x"), []byte("waiter")) }()
	waitForWaiter(t, waiter)
	select {
	case err := <-res:
		t.Fatalf("write returned while the holder is open: %v", err)
	default:
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-res; err != nil {
		t.Fatalf("waiter after the holder's rollback: %v", err)
	}
	if err := waiter.Commit(); err != nil {
		t.Fatal(err)
	}
	wantValue(t, db.Get, "x", "waiter")
	// The waiter's undo record holds the committed value the rollback
	// restored, not the holder's: rolling a later writer back shows it.
	w2 := mustBegin(t, db)
	mustPut(t, w2, "x", "w2")
	w2.Rollback()
	wantValue(t, db.Get, "x", "waiter")
}

func TestWaiterConflictsOnCommit(t *testing.T) {
	db := openTest(t, &bwkv.Options{LockTimeout: time.Minute})
	holder, waiter := mustBegin(t, db), mustBegin(t, db)
	mustPut(t, holder, "x", "holder")
	res := make(chan error, 1)
	start := time.Now()
	go func() { res <- waiter.Delete([]byte("x")) }()
	waitForWaiter(t, waiter)
	if err := holder.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-res; !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("waiter after the holder's commit: %v, want ErrConflict", err)
	}
	// Woken by the commit, not by the one-minute timeout (generous bound).
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("waiter returned after %v", d)
	}
	if _, err := waiter.Get([]byte("x")); !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("doomed txn get: %v, want ErrConflict", err)
	}
	// Every later call, whatever its arguments.
	if err := waiter.Put(nil, nil); !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("doomed txn put of an empty key: %v, want ErrConflict", err)
	}
	if err := waiter.Delete(nil); !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("doomed txn delete of an empty key: %v, want ErrConflict", err)
	}
	if err := waiter.Commit(); !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("doomed txn commit: %v, want ErrConflict", err)
	}
	wantValue(t, db.Get, "x", "holder")
}

func TestDeadlockFailsAtOnce(t *testing.T) {
	db := openTest(t, &bwkv.Options{LockTimeout: time.Minute})
	t1, t2 := mustBegin(t, db), mustBegin(t, db)
	mustPut(t, t1, "a", "1")
	mustPut(t, t2, "b", "2")
	res := make(chan error, 1)
	go func() { res <- t1.Put([]byte("b"), []byte("1")) }()
	waitForWaiter(t, t1)
	start := time.Now()
	err := t2.Put([]byte("a"), []byte("2"))
	if !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("closing the cycle: %v, want ErrConflict", err)
	}
	// At once, not after the one-minute LockTimeout (generous bound).
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("deadlock reported after %v", d)
	}
	if err := t2.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-res; err != nil {
		t.Fatalf("the survivor's write after the victim rolled back: %v", err)
	}
	if err := t1.Commit(); err != nil {
		t.Fatal(err)
	}
	wantValue(t, db.Get, "a", "1")
	wantValue(t, db.Get, "b", "1")
	if n := db.Stats().Txn.Deadlocks; n != 1 {
		t.Fatalf("Stats.Txn.Deadlocks = %d, want 1", n)
	}
}

// A three-txn cycle is found as well (the chain is walked, not one edge).
func TestDeadlockThreeTxns(t *testing.T) {
	db := openTest(t, &bwkv.Options{LockTimeout: time.Minute})
	t1, t2, t3 := mustBegin(t, db), mustBegin(t, db), mustBegin(t, db)
	mustPut(t, t1, "a", "1")
	mustPut(t, t2, "b", "2")
	mustPut(t, t3, "c", "3")
	r1, r2 := make(chan error, 1), make(chan error, 1)
	go func() { r1 <- t1.Put([]byte("b"), []byte("1")) }()
	waitForWaiter(t, t1)
	go func() { r2 <- t2.Put([]byte("c"), []byte("2")) }()
	waitForWaiter(t, t2)
	if err := t3.Put([]byte("a"), []byte("3")); !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("closing a 3-cycle: %v, want ErrConflict", err)
	}
	t3.Rollback()
	if err := <-r2; err != nil {
		t.Fatal(err)
	}
	t2.Commit()
	if err := <-r1; !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("t1 after t2 committed b: %v, want ErrConflict", err)
	}
}

func TestLockTimeout(t *testing.T) {
	db := openTest(t, &bwkv.Options{LockTimeout: 50 * time.Millisecond})
	holder, waiter := mustBegin(t, db), mustBegin(t, db)
	mustPut(t, holder, "x", "holder")
	start := time.Now()
	if err := waiter.Put([]byte("x"), []byte("w")); !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("after LockTimeout: %v, want ErrConflict", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("gave up after %v, before LockTimeout", d)
	}
	// db.Put gives up after LockTimeout too, not before.
	start = time.Now()
	if err := db.Put([]byte("x"), []byte("one-op")); !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("one-op put after LockTimeout: %v, want ErrConflict", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("one-op put gave up after %v", d)
	}
	holder.Commit()
	if err := waiter.Commit(); !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("doomed commit: %v", err)
	}
	wantValue(t, db.Get, "x", "holder")
	if n := db.Stats().Txn.LockTimeouts; n < 2 {
		t.Fatalf("Stats.Txn.LockTimeouts = %d, want >= 2", n)
	}
}

// A negative LockTimeout fails at once instead of waiting.
func TestLockTimeoutNegativeFailsAtOnce(t *testing.T) {
	db := openTest(t, &bwkv.Options{LockTimeout: -1})
	holder, other := mustBegin(t, db), mustBegin(t, db)
	mustPut(t, holder, "x", "holder")
	if err := other.Put([]byte("x"), []byte("w")); !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("%v, want ErrConflict", err)
	}
	holder.Rollback()
	other.Rollback()
}

// The hot counter: every increment through Update succeeds and none is
// lost. BWKV_HOT_INCREMENTS sets each goroutine's count.
func TestHotCounterUpdate(t *testing.T) {
	per := envInt("BWKV_HOT_INCREMENTS", hotIncrementsDefault)
	if testing.Short() {
		per = min(per, 500)
	}
	const workers = 16
	db := openTest(t, nil)
	key := []byte("counter")
	var runs atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if err := db.Update(func(tx *bwkv.Txn) error {
					runs.Add(1)
					return increment(tx, key)
				}); err != nil {
					errs <- fmt.Errorf("increment %d: %w", i, err)
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
	d := time.Since(start)
	v, err := db.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := binary.BigEndian.Uint64(v), uint64(workers*per); got != want {
		t.Fatalf("counter = %d, want %d", got, want)
	}
	st := db.Stats().Txn
	t.Logf("%d increments in %v (%.0f/s), fn runs %d, conflicts %d, requeued %d", workers*per, d,
		float64(workers*per)/d.Seconds(), runs.Load(), st.Conflicts, st.Requeued)
}

func increment(tx *bwkv.Txn, key []byte) error {
	var n uint64
	v, err := tx.Get(key)
	switch {
	case err == nil:
		n = binary.BigEndian.Uint64(v)
	case !errors.Is(err, bwkv.ErrNotFound):
		return err
	}
	return tx.Put(key, binary.BigEndian.AppendUint64(nil, n+1))
}

// Blind one-op writes on one key from 16 goroutines never report a
// conflict.
func TestPutContentionNeverConflicts(t *testing.T) {
	per := 2000
	if testing.Short() || raceEnabled {
		per = 300
	}
	db := openTest(t, nil)
	// A txn holding the key for a while makes the first one-op writes
	// wait, then rolls back.
	tx := mustBegin(t, db)
	mustPut(t, tx, "hot", "held")
	var wg sync.WaitGroup
	var failures atomic.Int64
	var first atomic.Value
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				var err error
				if i%5 == 4 {
					err = db.Delete([]byte("hot"))
				} else {
					err = db.Put([]byte("hot"), fmt.Appendf(nil, "%d-%d", w, i))
				}
				if err != nil {
					failures.Add(1)
					first.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	tx.Rollback()
	wg.Wait()
	if n := failures.Load(); n != 0 {
		t.Fatalf("%d one-op writes failed, first: %v; stats %+v", n, first.Load(), db.Stats().Txn)
	}
}

// commitPut writes k in a txn of its own. (Inside an Update's fn it stands
// for another goroutine's write: a db.Put there could wait for the hot
// stripe the Update itself holds.)
func commitPut(t *testing.T, db *bwkv.DB, k, v string) {
	t.Helper()
	tx := mustBegin(t, db)
	mustPut(t, tx, k, v)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestUpdateRetryLimit(t *testing.T) {
	for _, tc := range []struct {
		retries, wantRuns int
	}{{-1, 1}, {3, 4}} {
		t.Run(fmt.Sprint(tc.retries), func(t *testing.T) {
			db := openTest(t, &bwkv.Options{MaxUpdateRetries: tc.retries})
			runs := 0
			err := db.Update(func(tx *bwkv.Txn) error {
				runs++
				// Someone else commits the key after this txn began.
				commitPut(t, db, "k", fmt.Sprint(runs))
				return tx.Put([]byte("k"), []byte("mine"))
			})
			// One run more is allowed: the first conflict marks the key
			// hot, and the restart that queues the next attempt on it is
			// not a retry.
			if !errors.Is(err, bwkv.ErrConflict) || runs < tc.wantRuns || runs > tc.wantRuns+1 {
				t.Fatalf("Update = %v after %d runs, want ErrConflict after %d", err, runs, tc.wantRuns)
			}
		})
	}
	// A conflict that clears is retried to success.
	db := openTest(t, nil)
	runs := 0
	err := db.Update(func(tx *bwkv.Txn) error {
		runs++
		if runs < 3 {
			commitPut(t, db, "k", "other")
		}
		return tx.Put([]byte("k"), []byte("mine"))
	})
	if err != nil || runs < 3 || runs > 4 {
		t.Fatalf("Update = %v after %d runs, want success after 3", err, runs)
	}
	wantValue(t, db.Get, "k", "mine")
}

func TestUpdateContext(t *testing.T) {
	db := openTest(t, &bwkv.Options{LockTimeout: time.Minute})
	holder := mustBegin(t, db)
	mustPut(t, holder, "x", "holder")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := db.UpdateContext(ctx, func(tx *bwkv.Txn) error {
		return tx.Put([]byte("x"), []byte("waiting"))
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("UpdateContext past its deadline: %v", err)
	}
	holder.Rollback()
	wantValue(t, db.Get, "x", "")
	if err := db.UpdateContext(ctx, func(*bwkv.Txn) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("UpdateContext with an ended context: %v", err)
	}
	called := false
	if err := db.ViewContext(ctx, func(*bwkv.Snapshot) error { called = true; return nil }); !errors.Is(err, context.DeadlineExceeded) || called {
		t.Fatalf("ViewContext with an ended context: %v (fn ran: %v)", err, called)
	}
	if err := db.ViewContext(context.Background(), func(s *bwkv.Snapshot) error {
		_, err := s.Get([]byte("x"))
		return err
	}); !errors.Is(err, bwkv.ErrNotFound) {
		t.Fatalf("ViewContext: %v", err)
	}
}

// BenchmarkHotCounter measures increments of one key through Update from
// 16 goroutines (ops/s is the committed increments per second).
func BenchmarkHotCounter(b *testing.B) {
	db := openTest(b, nil)
	key := []byte("counter")
	b.SetParallelism(8) // 8 x GOMAXPROCS goroutines
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := db.Update(func(tx *bwkv.Txn) error { return increment(tx, key) }); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
	b.ReportMetric(float64(db.Stats().Txn.Conflicts)/float64(b.N), "conflicts/op")
}

// TestUpdateTakesFreeHotStripe: an Update that writes a key whose stripe
// is hot but free takes the stripe and goes on, instead of restarting to
// queue on it (fn runs once, nothing requeued), and releases it when it
// ends, also when fn panics. A restart only pays when another writer
// holds the stripe (TestHotCounterUpdate).
func TestUpdateTakesFreeHotStripe(t *testing.T) {
	db := openTest(t, nil)
	key := []byte("k")
	// hotWindow is 20 ms: a try whose write came later (a slow machine)
	// proves nothing and is repeated.
	for try := 0; ; try++ {
		if try == 20 {
			t.Fatal("no Update wrote within the hot window in 20 tries")
		}
		before := db.Stats().Txn.Requeued
		runs, hot := 0, false
		bwkv.MarkHot(db, key)
		err := db.Update(func(tx *bwkv.Txn) error {
			runs++
			hot = bwkv.IsHot(db, key)
			return tx.Put(key, []byte("v"))
		})
		if err != nil {
			t.Fatal(err)
		}
		if !hot {
			continue
		}
		if runs != 1 || db.Stats().Txn.Requeued != before {
			t.Fatalf("fn ran %d times, %d requeued: the Update restarted for a free stripe", runs, db.Stats().Txn.Requeued-before)
		}
		if !bwkv.StripeFree(db, key) {
			t.Fatal("the Update kept the stripe it took")
		}
		break
	}
	// A panic in fn after the write releases the stripe too.
	for try := 0; try < 20; try++ {
		hot := false
		bwkv.MarkHot(db, key)
		func() {
			defer func() {
				if r := recover(); r != "boom" {
					t.Fatalf("recovered %v", r)
				}
			}()
			db.Update(func(tx *bwkv.Txn) error {
				hot = bwkv.IsHot(db, key)
				if err := tx.Put(key, []byte("w")); err != nil {
					return err
				}
				panic("boom")
			})
		}()
		if !bwkv.StripeFree(db, key) {
			t.Fatalf("the stripe stays held after a panic in fn (hot at the write: %v)", hot)
		}
		if hot {
			return
		}
	}
	t.Fatal("no panicking Update wrote within the hot window in 20 tries")
}

// TestStripeTakerYieldsBeforeBlocking: a taker of a held hot stripe
// yields and retries before it blocks, so a holder that releases within
// those yields hands the stripe over without waking a blocked goroutine;
// a holder that keeps it makes the taker block, up to LockTimeout; a
// negative LockTimeout never waits.
func TestStripeTakerYieldsBeforeBlocking(t *testing.T) {
	db := openTest(t, &bwkv.Options{LockTimeout: 50 * time.Millisecond})
	key := []byte("k")
	if !bwkv.TryStripe(db, key) {
		t.Fatal("a fresh stripe is held")
	}
	yields := 0
	db.SetTestStripeSpinHook(func(i int) {
		yields++
		if i == 3 {
			bwkv.ReleaseStripe(db, key) // the holder finishes during the 4th yield
		}
	})
	start := time.Now()
	if !bwkv.TakeStripe(db, key) {
		t.Fatalf("the taker did not get a stripe released during its yields (waited %v)", time.Since(start))
	}
	if yields != 4 {
		t.Fatalf("%d yields, want 4 (the stripe was free after the 4th)", yields)
	}
	// The taker holds it now; a second taker yields at least stripeSpins
	// times (relaxed: for up to stripeYield),
	// then blocks until LockTimeout and goes on without the stripe.
	yields = 0
	db.SetTestStripeSpinHook(func(int) { yields++ })
	start = time.Now()
	if bwkv.TakeStripe(db, key) {
		t.Fatal("a second taker got a held stripe")
	}
	if yields < bwkv.StripeSpins() || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("%d yields in %v, want at least %d then a wait of LockTimeout", yields, time.Since(start), bwkv.StripeSpins())
	}
	bwkv.ReleaseStripe(db, key)

	nowait := openTest(t, &bwkv.Options{LockTimeout: -1})
	nowait.SetTestStripeSpinHook(func(int) { t.Error("a taker yielded with a negative LockTimeout") })
	if !bwkv.TryStripe(nowait, key) || bwkv.TakeStripe(nowait, key) {
		t.Fatal("a taker with a negative LockTimeout got a held stripe")
	}
	bwkv.ReleaseStripe(nowait, key)
}

// TestStripeTakerBlocksWhenYieldsIdle: under DurabilitySync a stripe
// holder keeps the stripe through its commit's fsync, so a taker whose
// first yields ran nothing else (they returned at once) stops yielding and
// blocks; one whose yields ran other goroutines goes on yielding, and so
// does every taker in relaxed durability, where holders are brief.
func TestStripeTakerBlocksWhenYieldsIdle(t *testing.T) {
	durable, err := bwkv.Open(t.TempDir(), &bwkv.Options{Durability: bwkv.DurabilitySync})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { durable.Close() })
	relaxed := openTest(t, nil) // relaxed
	spins := time.Duration(bwkv.StripeSpins())
	for _, c := range []struct {
		name  string
		db    *bwkv.DB
		spent time.Duration
		want  bool
	}{
		{"durable, idle yields", durable, spins * 500 * time.Nanosecond, false},
		{"durable, no time at all", durable, 0, false},
		{"durable, yields that ran others", durable, spins * 20 * time.Microsecond, true},
		{"relaxed, idle yields", relaxed, spins * 500 * time.Nanosecond, true},
		{"relaxed, yields that ran others", relaxed, spins * 20 * time.Microsecond, true},
	} {
		if got := bwkv.YieldOn(c.db, c.spent); got != c.want {
			t.Errorf("%s (%v for %d yields): yield on %v, want %v", c.name, c.spent, bwkv.StripeSpins(), got, c.want)
		}
	}

	// A durable taker of a held stripe, alone: its yields run nothing
	// else, so it stops after StripeSpins of them (unless this machine
	// made them slow: a yield past StripeSpins must then come at least
	// StripeSpins*IdleYield after the start).
	key := []byte("k")
	if !bwkv.TryStripe(durable, key) {
		t.Fatal("a fresh stripe is held")
	}
	defer bwkv.ReleaseStripe(durable, key)
	yields := 0
	var past time.Duration // when the first yield past StripeSpins came
	start := time.Now()
	durable.SetTestStripeSpinHook(func(i int) {
		yields++
		if i == bwkv.StripeSpins() {
			past = time.Since(start)
		}
	})
	if bwkv.TakeStripe(durable, key) {
		t.Fatal("a taker got a held stripe")
	}
	if yields > bwkv.StripeSpins() && past < time.Duration(bwkv.StripeSpins())*bwkv.IdleYield() {
		t.Fatalf("%d yields, the first past %d after %v: a durable taker whose yields were idle went on yielding", yields, bwkv.StripeSpins(), past)
	}
}

// Update's backoff waits its whole duration (yielding below a millisecond,
// on a timer above) and ends early, reporting so, when its done channel
// closes.
func TestPause(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	for _, d := range []time.Duration{200 * time.Microsecond, 3 * time.Millisecond} {
		start := time.Now()
		if !bwkv.Pause(d, nil) {
			t.Fatalf("Pause(%v) with no done channel reported an early end", d)
		}
		if got := time.Since(start); got < d {
			t.Fatalf("Pause(%v) returned after %v", d, got)
		}
		if bwkv.Pause(d, closed) {
			t.Fatalf("Pause(%v) with its done channel closed ran its course", d)
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(d/4, cancel)
		if bwkv.Pause(time.Hour, ctx.Done()) {
			t.Fatal("Pause(1h) ran its course")
		}
	}
}
