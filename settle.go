package bwkv

import (
	"errors"
	"time"

	"github.com/bwkv/bwkv/pagetable"
	"github.com/bwkv/bwkv/wal"
)

// Settling an idle database (docs/crash-safety.md: space converges once writes
// stop). Checkpoints are triggered by dirty bytes, so without this an idle
// database would keep its last dirty generation only in the log (with the
// full old values of every update) and its junk until the next burst of
// writes. The checkpointer looks every settleInterval: once the log head
// has not moved for settleIdle it checkpoints what is dirty, consolidates
// the resident leaves whose chain holds deltas and checkpoints them,
// rotates the log segment those checkpoints cover so it can be recycled,
// and runs GC rounds until none reports more work. A settled database does nothing
// more until the next write.

// settleInterval is how often the checkpointer looks for an idle
// database, and settleIdle how long the log head must stand still before
// the database settles: it settles between settleIdle and settleIdle +
// settleInterval after its last write (well inside the 60 s the space
// guarantee allows). The wait keeps a trickle of writes (one every few
// seconds) from paying a checkpoint and a rewrite of every touched page
// per write. Tests replace both per DB (testHooks.settleTimes) to settle
// in milliseconds.
const (
	settleInterval = time.Second
	settleIdle     = 5 * time.Second
)

const (
	// settleLogBytes: a covered log segment at least this large is
	// rotated away when the database settles; a smaller one stays (it
	// costs less than the rotation's fsyncs and file).
	settleLogBytes = 256 << 10
)

// settleSquashPages bounds the pages one look consolidates, so the
// dirty bytes it makes stay within a checkpoint of ordinary size.
const settleSquashPages = 4096

// settleRebaseBusy bounds the pages stored plain (hot) that one look
// rewrites compressed while reads go on: a few MB a second of background
// compression, instead of a whole burst's pages at once competing with
// the readers. A database idle for reads too gets settleSquashPages.
const settleRebaseBusy = 256

// settleState is the settler's memory. Checkpointer goroutine only.
type settleState struct {
	head    wal.LSN       // the log head at the last look
	since   time.Time     // when the head was first seen at head
	settled bool          // nothing was written since the database settled
	cursor  pagetable.PID // where the next squash pass resumes
	// checkpointing is set while the settle's own checkpoint runs.
	checkpointing bool
	// hits is the tree's (sampled) page-visit count at the last look:
	// reads since then make the look's rewrite of plain pages gentle.
	hits uint64
}

// settle runs in the checkpointer goroutine every settleInterval.
func (db *DB) settle() {
	_, idle := db.hooks.settleTimes()
	s := &db.idle
	hits := db.tree.Stats().Hits
	reading := hits != s.hits
	s.hits = hits
	head := db.wal.Head()
	if head != s.head || s.since.IsZero() {
		s.head, s.since, s.settled = head, time.Now(), false // writes since the last look
		return
	}
	if s.settled || db.readOnly.Load() || time.Since(s.since) < idle {
		return
	}
	rebase := settleSquashPages
	if reading {
		rebase = settleRebaseBusy
	}
	done, _, err := db.settleStep(rebase)
	if err != nil {
		// Retried at the next look; a degraded DB reported its cause
		// already.
		if db.degraded.Load() == nil {
			db.stats.bgErrors.Add(1)
			db.log.Warn("bwkv: idle settle failed; will retry", "err", err)
		}
		return
	}
	s.settled = done
}

// settleStep is one bounded step of settling, the idle settle's look
// and each of Compact's, on the checkpointer goroutine: it checkpoints
// what is dirty, consolidates up to settleSquashPages leaves whose chain
// holds deltas and rewrites up to rebase pages stored plain (within the
// same budget), checkpoints those, rotates the covered log segment and
// runs a bounded GC round. done reports that a whole pass found nothing
// to consolidate and the GC has no more work; wrapped that this step's
// pass reached the last page. A failed log fsync degrades the DB (it is
// never retried: docs/formats.md); other failures are returned for the
// caller to retry or report.
func (db *DB) settleStep(rebase int) (done, wrapped bool, err error) {
	if db.gens.Hot().Frames() > 0 || db.gens.Sealed() != nil {
		if err := db.settleCheckpoint(); err != nil {
			return false, false, err
		}
	}
	// Pages whose durable chain has deltas are consolidated and written
	// again as one base: the old chain becomes junk (a base and the
	// deltas above it repeat versions), which the GC then reclaims.
	squashed, wrapped := db.squashChains()
	squashed += db.rebasePlain(min(settleSquashPages-squashed, rebase))
	if squashed > 0 {
		if err := db.settleCheckpoint(); err != nil {
			return false, wrapped, err
		}
	}
	if err := db.rotateCovered(); err != nil {
		if errors.Is(err, wal.ErrFailed) {
			return false, wrapped, db.degrade(err)
		}
		return false, wrapped, err
	}
	// Bounded rounds (RoundBytes each, yielding to a due checkpoint); the
	// next step runs another while one reports more.
	more := db.gc.worker.Collect(true)
	return !more && wrapped && squashed == 0, wrapped, nil
}

// squashChains consolidates up to settleSquashPages resident leaves whose
// chain holds deltas, in memory or on disk below a carried base or a
// stub, resuming where the last pass stopped; wrapped
// reports that the pass reached the last page. Pages on disk only are not
// read: they were consolidated before they were evicted or are untouched
// since Open.
func (db *DB) squashChains() (squashed int, wrapped bool) {
	s := &db.idle
	end := db.pt.Next()
	if s.cursor == 0 || s.cursor >= end {
		s.cursor = 1
	}
	for ; s.cursor < end && squashed < settleSquashPages; s.cursor++ {
		p := db.pt.Load(s.cursor)
		if p == nil || p.Removed || p.Base.Level != 0 || (p.Len == 0 && !p.Base.Carried() && (p.Stub == nil || p.Stub.DiskLen == 0)) {
			continue
		}
		if err := db.tree.Squash(s.cursor); err != nil {
			db.stats.bgErrors.Add(1)
			db.log.Warn("bwkv: idle consolidation failed", "pid", s.cursor, "err", err)
			continue
		}
		squashed++
	}
	return squashed, s.cursor >= end
}

// rebasePlain rewrites up to n of the pages whose durable frames a
// checkpoint stored plain because they were hot (checkpoint.Heat), so
// that the next checkpoint, which finds them cold, writes them
// compressed: the data files of a database that went quiet end up
// compressed. It returns the pages rewritten. A page that cannot be
// rewritten now is counted and logged, and stays plain until its next
// write.
func (db *DB) rebasePlain(n int) int {
	done := 0
	for _, pid := range db.heat.Plain(max(n, 0)) {
		if err := db.tree.Rebase(pagetable.PID(pid)); err != nil {
			db.stats.bgErrors.Add(1)
			db.log.Warn("bwkv: idle rewrite of a page stored uncompressed failed", "pid", pid, "err", err)
			continue
		}
		done++
	}
	return done
}

// settleCheckpoint cuts and publishes what is dirty for a settle step
// (the idle one or Compact's). Every frame is compressed
// (checkpoint.Env.Idle): the idle settle runs when no page is about to be
// rewritten, and Compact's caller asked for the settled form.
func (db *DB) settleCheckpoint() error {
	db.idle.checkpointing = true
	err := db.ckpt.Attempt(true)
	db.idle.checkpointing = false
	return err
}

// rotateCovered rotates the log segment when the last publish covers the
// whole log (nothing was appended since its cut, no transaction pins it)
// and the segment is large, then recycles it; either way it trims the
// active segment's preallocated tail.
func (db *DB) rotateCovered() error {
	covered := wal.LSN(db.ckpt.AnalysisStart())
	if db.wal.Head() == covered {
		rotated, err := db.wal.Rotate(settleLogBytes)
		if err != nil {
			return err
		}
		if rotated {
			if err := db.wal.Recycle(covered); err != nil {
				return err
			}
		}
	}
	// The active segment's preallocated zeros and the spare segment files
	// go too: an idle database keeps no log beyond its records (the next
	// write preallocates again, the next recycle keeps spares again).
	if err := db.wal.DropSpares(); err != nil {
		return err
	}
	return db.wal.TrimTail()
}
