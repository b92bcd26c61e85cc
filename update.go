package bwkv

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"time"
)

// Backoff between Update's attempts: jittered, doubling from
// updateBackoffBase up to updateBackoffMax. The cap stays small because a
// conflict on a hot key means the key just committed: the next attempt is
// likely to find it free, and a long sleep only idles the retrier.
const (
	updateBackoffBase = 20 * time.Microsecond
	updateBackoffMax  = 2 * time.Millisecond
)

// pauseYieldBelow is the backoff below which pause yields instead of
// sleeping. The Go runtime's idle wait for a timer has millisecond
// granularity (the poller's timeout): a 20 µs sleep on a P with nothing
// else to run parks its thread for 1 ms or more. On W2 (one hot key, 2
// threads, 2 cores) those sleeps and the stripe takers' blocking waits
// (hot.go) idled a quarter of the CPU: the workers were runnable but their
// threads parked. With both yielding, 6 alternated pairs: median ops 560k
// -> 719k (+28%), CPU busy 1.3 -> 1.8 cores, p99 16.4 -> 18.9 µs.
const pauseYieldBelow = time.Millisecond

// pause waits d, or until done (nil: never) is closed, and reports whether
// the wait ran its course. A wait below pauseYieldBelow yields the
// processor until its deadline, so other goroutines run and this one
// resumes on time; a longer one sleeps on a timer.
func pause(d time.Duration, done <-chan struct{}) bool {
	if d < pauseYieldBelow {
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			select {
			case <-done:
				return false
			default:
			}
			runtime.Gosched()
		}
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// Update runs fn in a new transaction and commits it if fn returns nil;
// otherwise it rolls back and returns fn's error. If fn panics, the
// transaction is rolled back and the panic continues.
//
// On ErrConflict (from a write in fn or from Commit) Update rolls back and
// runs fn again in a fresh transaction, after a jittered exponential
// backoff, up to Options.MaxUpdateRetries times. fn may therefore run more
// than once: it must not have effects outside the transaction that a
// second run would repeat, and must not keep the *Txn after it returns.
func (db *DB) Update(fn func(*Txn) error) error {
	return db.UpdateContext(context.Background(), fn)
}

// UpdateContext is Update bounded by ctx: a lock wait, the backoff
// between attempts and the start of each attempt end when ctx does, and
// UpdateContext then returns ctx's error (the open transaction is rolled
// back). fn may run more than once (see Update).
func (db *DB) UpdateContext(ctx context.Context, fn func(*Txn) error) error {
	retries := db.opts.MaxUpdateRetries
	// stripe is the hot stripe held (hot.go) plus one; 0: none yet; -1:
	// none, and a wait for one timed out (no more restarts to queue).
	stripe := 0
	defer func() {
		if stripe > 0 {
			db.releaseStripe(stripe - 1)
		}
		db.flushLog()
	}()
	for attempt := 0; ; {
		if err := ctx.Err(); err != nil {
			return err
		}
		want, took, err := db.updateOnce(ctx, fn, stripe)
		if took != 0 {
			stripe = took // held from here on; the defer releases it
		}
		if want != 0 && stripe == 0 {
			// Restarted to queue on a hot key: not a conflict, and not
			// counted as a retry (it happens at most once per call).
			stripe = -1
			if db.takeStripe(want-1, ctx.Done()) {
				stripe = want
			}
			continue
		}
		if !errors.Is(err, ErrConflict) || attempt >= retries {
			return err
		}
		d := updateBackoffBase << min(attempt, 16)
		if d > updateBackoffMax {
			d = updateBackoffMax
		}
		attempt++
		// Full jitter: waiters woken by the same commit spread out
		// instead of meeting again on the key.
		d = time.Duration(rand.Int64N(int64(d)) + 1)
		if !pause(d, ctx.Done()) {
			return ctx.Err()
		}
	}
}

// updateOnce runs one attempt of Update holding hot stripe hold-1 (0:
// none). want is the stripe the next attempt must hold, plus one (0: any);
// took is the stripe the attempt took itself, plus one (0: none), which
// the caller now holds.
func (db *DB) updateOnce(ctx context.Context, fn func(*Txn) error, hold int) (want, took int, err error) {
	tx, err := db.Begin()
	if err != nil {
		return 0, 0, err
	}
	tx.update, tx.holdStripe = true, hold
	if ctx.Done() != nil {
		tx.ctx = ctx
	}
	done := false
	defer func() {
		// Reached without done only when fn panics: roll back and let the
		// panic continue.
		if !done {
			_ = tx.Rollback()
			if _, took := tx.stripes(); took != 0 {
				db.releaseStripe(took - 1)
			}
		}
	}()
	if err := fn(tx); err != nil {
		done = true
		_ = tx.Rollback()
		want, took = tx.stripes()
		return want, took, err
	}
	done = true
	err = tx.Commit()
	want, took = tx.stripes()
	return want, took, err
}

// View runs fn on a new snapshot and closes it afterwards. fn must not
// keep the snapshot, or bytes read through its iterators, after it
// returns.
func (db *DB) View(fn func(*Snapshot) error) error {
	s, err := db.NewSnapshot()
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(s)
}

// ViewContext is View that returns ctx's error instead of running fn
// when ctx has already ended. fn runs once; it should watch ctx itself
// during long scans.
func (db *DB) ViewContext(ctx context.Context, fn func(*Snapshot) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.View(fn)
}

// Put sets key to value in a one-operation transaction. The write is
// blind (it reads nothing), so contention never fails it: it waits for a
// transaction holding the key and retries with a fresh transaction when
// one committed the key first, and returns ErrConflict only when
// Options.LockTimeout passed (or on a deadlock, which a one-op write
// cannot close).
func (db *DB) Put(key, value []byte) error {
	return db.oneOp(key, value, false)
}

// Delete removes key in a one-operation transaction, like Put. Deleting a
// missing key is not an error.
func (db *DB) Delete(key []byte) error {
	return db.oneOp(key, nil, true)
}

func (db *DB) oneOp(key, value []byte, del bool) error {
	// A closed or read-only DB answers as such whatever the arguments,
	// as a txn's writes do.
	if err := db.checkOpen(); err != nil {
		return err
	}
	if err := db.checkWrite(key, value, del); err != nil {
		return err
	}
	deadline := time.Now().Add(db.opts.LockTimeout)
	stripe := stripeOf(key)
	locked, tried := false, false
	defer func() {
		if locked {
			db.releaseStripe(stripe)
		}
		db.flushLog()
	}()
	for attempt := 0; ; attempt++ {
		if !tried && db.isHot(stripe) {
			// Take turns with the key's other writers (hot.go) instead
			// of racing them for each release of the key.
			locked, tried = db.takeStripe(stripe, nil), true
		}
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		tx.deadline, tx.blind = deadline, true
		err = tx.write(key, value, del)
		if err == nil {
			return tx.Commit()
		}
		_ = tx.Rollback()
		if !errors.Is(err, ErrConflict) || !time.Now().Before(deadline) {
			return err
		}
		// Another txn committed the key after this one began: a fresh
		// start timestamp is after that commit. The key is hot, so step
		// aside briefly from the second attempt on.
		if attempt > 0 {
			pause(time.Duration(rand.Int64N(int64(updateBackoffBase)<<min(attempt, 6))+1), nil)
		}
	}
}
