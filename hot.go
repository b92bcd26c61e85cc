package bwkv

import (
	"hash/maphash"
	"runtime"
	"sync/atomic"
	"time"
)

// Hot keys and Update's fairness.
//
// Snapshot isolation refuses a read-modify-write whose key committed after
// the txn began. On a key that many goroutines increment, someone holds it
// almost all the time, so a txn that begins while it is held is bound to
// lose: it waits for the holder, the holder commits, the waiter gets
// ErrConflict. Retrying with backoff alone is a lottery that favours the
// goroutine that just won (it is running and begins its next attempt before
// the woken losers are scheduled), so a loser can lose every one of its
// MaxUpdateRetries attempts.
//
// Update therefore queues writers of a contended key instead of letting
// them race: keys hash to hotStripes stripes, each a one-slot semaphore
// plus the time of the last contention seen on one of its keys. An Update txn that is about
// to write a key whose stripe saw contention recently, and holds no stripe,
// is restarted (it has installed nothing for that key; its other writes are
// rolled back) and its next attempts run with that stripe held from before
// Begin. Writers of one hot key then take turns in FIFO order, each
// beginning after the previous one committed, so they do not conflict.
// If the hot stripe is free when the txn writes, no writer queues ahead:
// the txn takes it there and goes on without a restart (Update releases
// it), so under a skewed load whose keys are hot but seldom written at the
// same instant an Update runs its function once.
// The one-op writes (DB.Put, DB.Delete) of a hot key take its stripe too.
//
// No deadlock: a txn holds at most one stripe, taken before Begin with no
// key locked or, during the txn, only if it is free (no wait), and waits
// for a stripe (only ever before Begin) at most LockTimeout, then goes on
// without it (a goroutine may already hold that stripe itself, e.g. a
// db.Put inside an Update's fn); a stripe holder may wait for a key lock,
// bounded by LockTimeout and deadlock detection.
// Cost: O(1) per write (a hash and an atomic load); Txns of plain Begin
// and the one-op writes are never restarted.

const hotStripes = 256

// hotWindow is how long a stripe counts as contended after the last wait
// or conflict on one of its keys, or wait for the stripe itself. A restart
// to queue does not extend it: under a skewed load most stripes see a
// writer every few milliseconds, so counting the restarts kept every stripe
// hot for good and restarted nearly every Update (W2: 420k restarts for
// about 400k updates).
const hotWindow = 20 * time.Millisecond

// stripeSpins bounds the yields of a stripe taker before it blocks
// (takeStripe). W2 at 2 threads, each count alternated with 64 (3 pairs,
// medians): 0 yields 688k vs 745k ops/s (p99 32 µs vs 8), 16 671k vs
// 783k, 256 743k vs 800k.
const stripeSpins = 64

// stripeYield is how long a stripe taker goes on yielding after its
// stripeSpins yields before it blocks (bounded by LockTimeout): a blocked
// taker's CPU idles until the release wakes it. W2 (one hot key, 2
// threads), 3 alternated pairs against 64 yields alone, both with the
// backoff's yields (pause): ops +4.6, +4.4, +16.7%, CPU busy 1.43-1.51 ->
// 1.67-1.85 cores.
const stripeYield = time.Millisecond

// idleYield: stripeSpins yields that took less than stripeSpins*idleYield
// ran nothing else, so the taker's CPU only spun. Under DurabilitySync
// such a taker then blocks instead of yielding for stripeYield
// (yieldOn): there the holder keeps the stripe through its commit's
// fsync, hundreds of microseconds, and a spinning taker burns a CPU for
// nothing and (on this 2-core VM) slows that very fsync. W2 durable at 2
// threads (one hot key, every update waits for the other's fsync), 6
// alternated pairs: ops x1.22 (all 6 above 1), CPU per op -58%, p99 -21%;
// with the taker yielding all along the log's fsyncs took 400 µs against
// 207 µs at one thread, and the second thread cost a third of the
// throughput. A taker whose yields do run other goroutines (W4 durable at
// 16 threads) goes on yielding as before: 8 pairs, ops 0.98 (4 above 1),
// p99 1.01, noise. (Blocking whatever the yields cost, or sleeping until
// the log's fsync in flight ends, cost W4 at 16 threads 4-10%.)
const idleYield = 2 * time.Microsecond

// yieldOn reports whether a taker whose stripeSpins yields took spent goes
// on yielding for stripeYield (see idleYield) instead of blocking.
func (db *DB) yieldOn(spent time.Duration) bool {
	return db.opts.Durability != DurabilitySync || spent >= stripeSpins*idleYield
}

type hotStripe struct {
	// sem is a one-slot semaphore (a send takes it, a receive frees it):
	// blocked senders are served in FIFO order, and unlike a mutex a
	// taker can give up after a timeout.
	sem  chan struct{}
	last atomic.Int64 // unix nanos of the last contention; 0: never
	_    [48]byte     // one stripe per cache line
}

func (db *DB) initHot() {
	for i := range db.hot {
		db.hot[i].sem = make(chan struct{}, 1)
	}
}

// takeStripe waits for stripe s, for at most LockTimeout or until ctx (nil:
// none) ends. A caller that gives up goes on without the stripe: a
// stripe is never needed for correctness, and a goroutine that already
// holds one (a db.Put inside an Update's fn, or two keys on one stripe)
// must not wait for itself forever.
func (db *DB) takeStripe(s int, done <-chan struct{}) bool {
	sem := db.hot[s].sem
	select {
	case sem <- struct{}{}:
		return true
	default:
	}
	// Another writer holds the stripe: the key is contended now, so its
	// stripe stays hot (a stripe that no taker waits for cools after
	// hotWindow and its writers race again, without restarts).
	db.markHot(s)
	if db.opts.LockTimeout <= 0 {
		return false
	}
	// The holder keeps the stripe for one short transaction. A taker that
	// blocks is woken by the holder's release on another thread, and that
	// wakeup can cost more than the wait: on a 2-core VM a blocked taker
	// waited 1.3 s in all per 3 s of W2 (hot key, 2 threads) for a CPU
	// after being readied, its own CPU idle meanwhile. So it first yields
	// and retries, at least stripeSpins times and for up to stripeYield
	// (unless those yields found nothing else to run: yieldOn);
	// a blocked taker is still served first (a release hands the slot to
	// it).
	start := time.Now()
	yieldEnd := start.Add(min(stripeYield, db.opts.LockTimeout))
	for i := 0; i < stripeSpins || time.Now().Before(yieldEnd); i++ {
		if i == stripeSpins && !db.yieldOn(time.Since(start)) {
			break
		}
		db.hooks.runStripeSpin(i)
		runtime.Gosched()
		if db.tryStripe(s) {
			return true
		}
		select {
		case <-done:
			return false
		default:
		}
	}
	rest := db.opts.LockTimeout - time.Since(start)
	if rest <= 0 {
		return false
	}
	t := time.NewTimer(rest)
	defer t.Stop()
	select {
	case sem <- struct{}{}:
		return true
	case <-t.C:
	case <-done:
	}
	return false
}

// tryStripe takes stripe s if it is free, without waiting.
func (db *DB) tryStripe(s int) bool {
	select {
	case db.hot[s].sem <- struct{}{}:
		return true
	default:
		return false
	}
}

func (db *DB) releaseStripe(s int) { <-db.hot[s].sem }

var hotSeed = maphash.MakeSeed()

func stripeOf(key []byte) int {
	return int(maphash.Bytes(hotSeed, key) % hotStripes)
}

// markHot records contention on key's stripe.
func (db *DB) markHot(s int) {
	db.hot[s].last.Store(time.Now().UnixNano())
}

// isHot reports whether key's stripe saw contention within hotWindow.
func (db *DB) isHot(s int) bool {
	last := db.hot[s].last.Load()
	return last != 0 && time.Now().UnixNano()-last < int64(hotWindow)
}
