package gc

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// WorkerEnv is how a Worker reports to the engine: the round's outcome,
// and the failures the engine must act on.
type WorkerEnv struct {
	// Skip reports whether rounds are off now (a read-only or degraded
	// DB, a test's pause); skipped rounds stay due.
	Skip func() bool
	// RoundDone runs after each round with its duration and outcome
	// (events; waking the writers held while it ran).
	RoundDone func(d time.Duration, more bool, err error)
	// Fatal reports whether a round's error must degrade the DB (a failed
	// fsync, never retried); Degrade degrades it, after which Skip holds.
	Fatal   func(err error) bool
	Degrade func(err error)
	// BackgroundError counts and reports any other failure; Log gets its
	// warning. A later round resumes.
	BackgroundError func(err error)
	Log             *slog.Logger
}

// Worker drives a Collector's rounds: whether one is due, whether one
// runs, and what a round's outcome means. A DB runs its rounds on the
// checkpointer goroutine, right after a checkpoint attempt, so no other
// manifest commit interleaves with one. Due, Running and Published are
// safe for concurrent use; Collect runs on one goroutine at a time. A nil
// *Worker (a read-only DB) runs nothing.
type Worker struct {
	coll *Collector
	// round is coll.Round (a test's stand-in in the package's tests).
	round func(settle bool) (more bool, err error)
	env   WorkerEnv
	// due: a publish happened, or a round left work or failed, since the
	// last round. Written by Collect's goroutine and Published.
	due atomic.Bool
	// settling: the last round settled and left work, and nothing was
	// published since. The round that resumes it (the checkpointer's
	// retry on a quiet database) settles too: a busy round would find
	// nothing under Policy.Busy's looser targets and clear due, leaving
	// the data files above the settled ones a DB.Checkpoint or the idle
	// settle asked for. A publish (new writes) ends it. Collect's
	// goroutine and Published, which the checkpointer's goroutine calls.
	settling atomic.Bool
	// running is set during a round: writers then wait at 2x
	// CheckpointBytes as they do during a publish, so a round cannot let
	// the hot generation and the log grow unbounded.
	running atomic.Bool
}

// NewWorker returns a Worker for c. A round is due at once: a reopened
// directory may hold junk, a stage mark or pending deletes, which the
// first round after the first publish sees to.
func NewWorker(c *Collector, env WorkerEnv) *Worker {
	w := &Worker{coll: c, round: c.Round, env: env}
	w.due.Store(true)
	return w
}

// Collect runs one round. With settle (an idle database settling, or a
// caller waiting on a checkpoint) the round runs whether or not one is
// due and works to the policy's own targets; without, it runs only when
// one is due (after a publish, or a round that left work), while writes
// go on, and works to Policy.Busy's looser ones, unless it resumes a
// settle round's work with nothing published since (settling). Failures
// are reported through the env, never returned: a failed step leaves
// what a crash there would, and a later round resumes, except for a
// fatal one, which degrades the DB. It reports whether another round
// should follow soon.
func (w *Worker) Collect(settle bool) bool {
	if w == nil || w.env.Skip() || (!settle && !w.due.Load()) {
		return false
	}
	settle = settle || w.settling.Load()
	w.running.Store(true)
	start := time.Now()
	more, err := w.round(settle)
	w.running.Store(false)
	w.env.RoundDone(time.Since(start), more, err)
	switch {
	case err != nil && w.env.Fatal(err):
		w.env.Degrade(err) // no more rounds: Skip holds
		more = false
	case err != nil:
		w.env.BackgroundError(err)
		w.env.Log.Warn("bwkv: data-file GC failed; will retry", "err", err)
		more = true
	}
	w.settling.Store(settle && more)
	w.due.Store(more)
	return more
}

// Published notes a publish: the accounting changed, a round is due,
// and writes went on, so a settle round's leftover work no longer makes
// the next round settle.
func (w *Worker) Published() {
	if w != nil {
		w.settling.Store(false)
		w.due.Store(true)
	}
}

// Due reports whether a round is due.
func (w *Worker) Due() bool { return w != nil && w.due.Load() }

// Running reports whether a round runs now.
func (w *Worker) Running() bool { return w != nil && w.running.Load() }

// Stats returns the collector's counters (zero for a nil Worker).
func (w *Worker) Stats() Stats {
	if w == nil {
		return Stats{}
	}
	return w.coll.Stats()
}
