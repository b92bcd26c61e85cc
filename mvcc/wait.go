package mvcc

import (
	"context"
	"time"
)

// WaitResult is how a WaitFor ended.
type WaitResult int

// WaitFor outcomes.
const (
	// WaitEnded: the holder reached a final state; check the key again.
	WaitEnded WaitResult = iota
	// WaitDeadlock: waiting would close a cycle of waiting txns.
	WaitDeadlock
	// WaitTimeout: the deadline passed first.
	WaitTimeout
	// WaitCanceled: the context ended first.
	WaitCanceled
)

// maxWaitHops bounds the wait-for chain a deadlock check walks. A cycle
// that does not pass through the caller is found by one of its own members
// (each checks when it starts waiting), so a longer chain only costs time;
// past the bound the caller waits out its deadline instead.
const maxWaitHops = 1024

// WaitFor blocks waiter until holder ends, the deadline passes or ctx (nil:
// none) ends. Waiting is per holder: registering is O(1) (the holder's done
// channel, made on first use under its status lock) and the holder's end
// wakes exactly its own waiters; no global lock is taken.
//
// Deadlock detection: the waiter publishes its edge (waiter -> holder)
// before it walks the chain from holder. Of two txns closing a cycle at the
// same time, each stores its edge before loading the other's (sequentially
// consistent atomics), so at least one of them sees the cycle and fails at
// once; none waits out its deadline.
func WaitFor(ctx context.Context, waiter, holder *Txn, deadline time.Time) WaitResult {
	waiter.waitingFor.Store(holder)
	defer waiter.waitingFor.Store(nil)
	for t, hops := holder, 0; t != nil && hops < maxWaitHops; hops++ {
		if t == waiter {
			return WaitDeadlock
		}
		t = t.waitingFor.Load()
	}
	holder.mu.Lock()
	if holder.ended {
		holder.mu.Unlock()
		return WaitEnded
	}
	if holder.done == nil {
		holder.done = make(chan struct{})
	}
	done := holder.done
	holder.mu.Unlock()
	d := time.Until(deadline)
	if d <= 0 {
		return WaitTimeout
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	var cancel <-chan struct{}
	if ctx != nil {
		cancel = ctx.Done()
	}
	select {
	case <-done:
		return WaitEnded
	case <-timer.C:
		return WaitTimeout
	case <-cancel:
		return WaitCanceled
	}
}

// endLocked marks t final and wakes its waiters. Called with t.mu held.
func (t *Txn) endLocked() {
	if t.ended {
		return
	}
	t.ended = true
	if t.done != nil {
		close(t.done)
	}
}

// Waiting reports whether t is blocked in WaitFor (tests use it to order
// their steps).
func (t *Txn) Waiting() bool { return t.waitingFor.Load() != nil }
