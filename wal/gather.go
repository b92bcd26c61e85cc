package wal

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Commit gathering
//
// With N committers in a loop (commit, wait for the fsync, run the next
// transaction, commit), plain group commit settles at about N/2 commits per
// fsync: the committers an fsync wakes are still running their next
// transaction when the next leader starts its fsync, so they wait for that
// one to end and are covered by the one after. Each then pays about two
// fsyncs per commit.
//
// A leader therefore first waits, briefly, for the writers that are in the
// middle of a transaction: the engine calls Join when a transaction begins
// and Leave when it logged its last record (commit or end), ended without
// one, or stops to wait for another transaction. The leader waits while any joined
// writer has not left, for at most half the recent fsync time (an average
// of the last fsyncs, capped at maxGather) and not at all before an fsync
// was timed. A transaction held open by its user costs every commit at most
// that bound; the fsync it waits for would have taken twice as long.
//
// Nothing changes for a lone committer (no other writer is joined) or in
// relaxed durability (the engine joins nobody then).

// maxGather bounds a leader's wait whatever the fsyncs cost.
const maxGather = 2 * time.Millisecond

// gatherer is the leader's view of the writers about to commit.
type gatherer struct {
	// inflight counts the joined writers that have not left.
	inflight atomic.Int64
	// waiting is set while a leader waits; Leave then wakes it when the
	// count reaches zero.
	waiting atomic.Bool
	wake    chan struct{} // capacity 1
	// fsyncNanos is an exponential average of the recent fsync times
	// (weight 1/8), 0 before the first.
	fsyncNanos atomic.Int64
	// gathers counts the leaders that waited; gatherNanos their waits.
	gathers, gatherNanos atomic.Int64
	// limit, when positive, replaces maxGather (tests; set before use).
	limit time.Duration
	// joined is set by the first Join: until then (relaxed durability) a
	// leader does not gather, nor yield its CPU for the committers an
	// fsync woke (there are none).
	joined atomic.Bool
}

// Join notes a writer that runs a transaction and may ask for a Sync (its
// commit) soon. Every Join is matched by one Leave.
func (w *Writer) Join() {
	g := &w.gather
	if !g.joined.Load() {
		g.joined.Store(true)
	}
	g.inflight.Add(1)
}

// Leave notes that a joined writer logged its last record (its commit or
// end), or stopped to wait for something other than the log; a writer that
// resumes joins again.
func (w *Writer) Leave() {
	g := &w.gather
	if g.inflight.Add(-1) <= 0 && g.waiting.Load() {
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
}

// timed feeds one fsync's duration into the average.
func (g *gatherer) timed(d time.Duration) {
	old := g.fsyncNanos.Load()
	if old == 0 {
		g.fsyncNanos.Store(int64(d))
		return
	}
	g.fsyncNanos.Store(old + (int64(d)-old)/8)
}

// gatherCommits makes a leader wait for the joined writers (see above).
// The leader is elected (syncing) and holds no lock.
func (w *Writer) gatherCommits() {
	g := &w.gather
	if !g.joined.Load() {
		return
	}
	// The committers the last fsync woke are runnable but may not have
	// begun their next transaction yet: let them run first.
	runtime.Gosched()
	if g.inflight.Load() <= 0 {
		return
	}
	bound := maxGather
	if g.limit > 0 {
		bound = g.limit
	}
	limit := min(time.Duration(g.fsyncNanos.Load())/2, bound)
	if limit <= 0 {
		return
	}
	start := time.Now()
	g.waiting.Store(true)
	t := time.NewTimer(limit)
	// Checked after waiting is set: a Leave that found it clear has
	// already lowered the count.
	for g.inflight.Load() > 0 {
		select {
		case <-g.wake:
			continue
		case <-t.C:
		case <-w.stop:
		}
		break
	}
	t.Stop()
	g.waiting.Store(false)
	g.gathers.Add(1)
	g.gatherNanos.Add(int64(time.Since(start)))
}

// Joined returns the number of joined writers that have not left.
func (w *Writer) Joined() int64 { return w.gather.inflight.Load() }
