package bwkv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/failpoints"
	"github.com/bwkv/bwkv/internal/invariants"
	"github.com/bwkv/bwkv/mvcc"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/tree"
	"github.com/bwkv/bwkv/wal"
)

// Txn is a read-write transaction with snapshot isolation: it reads the
// state as of Begin plus its own writes. A write that meets another
// transaction's uncommitted version of the key waits for it to end (up to
// Options.LockTimeout); a write fails with ErrConflict when another
// transaction committed the key after this one began (including one it
// waited for), on a deadlock, or after LockTimeout, and the transaction is
// then doomed: every later call, Commit included, returns ErrConflict. A
// Txn is for one goroutine at a time; after Commit or Rollback its methods
// return ErrTxnDone.
type Txn struct {
	db *DB
	st *mvcc.Txn
	r  mvcc.Reader

	mu   sync.Mutex // guards the fields below (Close may roll back)
	done bool
	// live is closed with done: in invariants and race builds a read or
	// write through the txn (or its iterators) after it ended panics.
	live   invariants.CloseChecker
	doomed error
	seq    uint32
	// writes are the txn's writes in order, appended under imgMu inside
	// the cut gate (the write's page lock held), so a cut sees every
	// write its generation holds; imaged counts those a cut already
	// logged a before-image for (logImages). imgMu is never held while
	// waiting for the gate: the cut takes it with the gate's write side.
	imgMu  sync.Mutex
	writes []undo
	imaged int
	// firstWrite is writes' room for one entry, allocated with the txn
	// (Begin points writes at it): most txns write once or not at all.
	// writes only grows by append, so the entry is never overwritten.
	firstWrite [1]undo
	// began is set once the begin record is logged (lazily, before the
	// first write); first is its LSN and last the txn's newest record's.
	began       bool
	first, last wal.LSN
	// joined: the txn is counted among the log's writers about to commit
	// (wal.Writer.Join, from Begin to its commit record; DurabilitySync
	// only). Set and cleared by compare-and-swap, so each Join gets
	// exactly one Leave.
	joined atomic.Bool
	// tooOld is set when the engine rolled the txn back for pinning the
	// log more than MaxTxnLag bytes behind the head.
	tooOld bool
	// firstAt is first+1 once the begin record is logged (0 before): the
	// txn's own calls read it without tx.mu to check its lag (abortIfLagging).
	firstAt atomic.Uint64

	// ctx (nil: none) ends lock waits early (UpdateContext); deadline,
	// when set, bounds every lock wait of the txn instead of a fresh
	// LockTimeout per write (the one-op writes share one budget).
	// Both are set before the txn is handed out and never change.
	ctx      context.Context
	deadline time.Time
	// update marks a txn run by Update, blind a one-op write (DB.Put,
	// DB.Delete: it reads nothing, so a version committed after its
	// start is no conflict for it). holdStripe is the hot stripe (hot.go)
	// the Update holds for this attempt, plus one (0: none; -1: none and
	// never restart for one); wantStripe,
	// set when the txn was restarted to queue on a hot key, the stripe
	// the next attempt must hold, plus one; tookStripe, set when the txn
	// took a free hot stripe itself (so holdStripe too), that stripe plus
	// one, which Update must release. Set before the txn is handed to fn /
	// written, or under mu.
	update, blind                      bool
	holdStripe, wantStripe, tookStripe int
	// leaf is the PID of the leaf the txn's last read found (0: none), where
	// a write of the same key starts instead of descending from the root
	// (read-modify-write); a stale one only costs a fence check. Under mu.
	leaf uint64
	// peek is what the last read found of its key on disk when the leaf
	// was left there (tree.Peeked): a write of that key takes the key's
	// durable versions from it instead of reading them again. Under mu.
	peek tree.Peeked

	// shard is the txnSet shard the txn joined in Begin (fixed from
	// then); setPrev and setNext are its links there, under shard.mu.
	shard            *txnShard
	setPrev, setNext *Txn
}

// undo is what a rollback needs to compensate one write: the key and the
// old value the write replaced (the newest committed-or-own version seen
// under the page lock). Both alias immutable page memory.
type undo struct {
	key    []byte
	old    []byte
	hasOld bool
	// prev is the write record's PrevLSN: a CLR compensating this write
	// names it as undo-next.
	prev wal.LSN
	// lsn is the write record's own LSN; deferred, that the record left
	// the old value out (wal.Record.OldDeferred): a cut logs it in a
	// before-image while the txn is open (logImages).
	lsn      wal.LSN
	deferred bool
}

func (tx *Txn) usable() error {
	if tx.tooOld {
		return ErrTxnTooOld
	}
	if tx.done {
		if tx.db.closed.Load() {
			return ErrClosed
		}
		return ErrTxnDone
	}
	if tx.db.closed.Load() {
		return ErrClosed
	}
	return tx.doomed
}

// abortIfLagging rolls the txn back as too old (ErrTxnTooOld from this
// call on) when its first record lies more than MaxTxnLag log bytes behind
// the head. Every call of the txn runs it first, so a lagging txn learns
// at its next call, not at the next checkpoint, which runs the same check
// for every open txn (abortTxnsTooOld: it also aborts the txns that make
// no further call, so the log behind them can be recycled). O(1): two
// atomic loads when the txn is within its lag.
func (tx *Txn) abortIfLagging() {
	at := tx.firstAt.Load()
	if at == 0 {
		return // nothing logged: no record pins the log
	}
	first, head := at-1, uint64(tx.db.wal.Head())
	// A record logged after head was read is ahead of it, not behind.
	if first < head && head-first > uint64(tx.db.opts.MaxTxnLag) {
		tx.db.abortTooOld(tx) // a no-op if the txn ended meanwhile
	}
}

// Get returns a copy of key's value as this transaction sees it (its own
// writes included). The caller owns the returned slice.
func (tx *Txn) Get(key []byte) ([]byte, error) {
	return tx.GetAppend(nil, key)
}

// GetAppend appends key's value as this transaction sees it to dst.
func (tx *Txn) GetAppend(dst, key []byte) ([]byte, error) {
	tx.abortIfLagging()
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.usable(); err != nil {
		return dst, err
	}
	tx.live.AssertOpen("Txn.GetAppend")
	return tx.db.getAppend(dst, key, &tx.r, &tx.leaf, &tx.peek)
}

// Put sets key to value. The transaction keeps no reference to key or value.
func (tx *Txn) Put(key, value []byte) error {
	return tx.write(key, value, false)
}

// Delete removes key. Deleting a missing key is not an error.
func (tx *Txn) Delete(key []byte) error {
	return tx.write(key, nil, true)
}

func (tx *Txn) write(key, value []byte, del bool) error {
	// Wait for a lagging checkpointer before taking any lock (the
	// checkpointer takes txn locks to find the oldest active txn).
	tx.db.backpressure()
	tx.abortIfLagging()
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.usable(); err != nil {
		return err
	}
	tx.live.AssertOpen("Txn write")
	// After the handle's state: a done, closed or doomed txn answers as
	// such whatever the arguments.
	if err := tx.db.checkWrite(key, value, del); err != nil {
		return err
	}
	defer tx.db.afterWrite()
	stripe := -1
	if tx.update {
		stripe = stripeOf(key)
		// (holdStripe < 0: a wait for a stripe timed out; no restart.)
		if tx.holdStripe == 0 && tx.db.isHot(stripe) {
			if !tx.db.tryStripe(stripe) {
				// Queue behind the key's other writers instead of
				// racing them (hot.go): Update restarts this txn
				// holding the stripe. The restart itself is no sign of
				// contention: the stripe stays hot only while its
				// takers wait (takeStripe).
				tx.wantStripe = stripe + 1
				tx.doomed = ErrConflict
				tx.db.stats.hotRestarts.Add(1)
				return ErrConflict
			}
			// Nobody holds the hot stripe, so no writer queues ahead:
			// this attempt goes on holding it (Update releases it).
			tx.holdStripe, tx.tookStripe = stripe+1, stripe+1
		}
	}
	markHot := func() {
		if stripe < 0 {
			stripe = stripeOf(key)
		}
		tx.db.markHot(stripe)
	}
	deadline := tx.deadline // zero: set at the first wait (no clock read otherwise)
	for {
		holder, err := tx.writeOnce(key, value, del)
		if holder == nil {
			if err == ErrConflict {
				markHot()
				tx.doom()
			}
			return err
		}
		markHot()
		if deadline.IsZero() {
			deadline = time.Now().Add(tx.db.opts.LockTimeout)
		}
		// Another active txn holds the key: wait for it to end with no
		// page lock held, and without the txn's own mutex, so Close and
		// the checkpointer's too-old scan never wait behind a waiter.
		tx.mu.Unlock()
		tx.leaveLog() // a leader gathering now would wait for this one in vain
		res := mvcc.WaitFor(tx.ctx, tx.st, holder, deadline)
		tx.mu.Lock()
		if err := tx.usable(); err != nil {
			return err
		}
		// Only a txn still usable joins again: one ended meanwhile (the
		// too-old abort) has left for good.
		tx.joinLog()
		switch res {
		case mvcc.WaitEnded:
			continue // on its rollback proceed; on its commit the check now fails
		case mvcc.WaitCanceled:
			// The txn cannot know whether the write would have gone
			// through: it is doomed like after a conflict.
			tx.doom()
			return fmt.Errorf("bwkv: waiting for a lock: %w", context.Cause(tx.ctx))
		case mvcc.WaitDeadlock:
			tx.db.stats.deadlocks.Add(1)
		default:
			tx.db.stats.lockTimeouts.Add(1)
		}
		tx.doom()
		return ErrConflict
	}
}

// doom marks the txn failed by a conflict: every later call returns
// ErrConflict. Called with tx.mu held.
func (tx *Txn) doom() {
	tx.doomed = ErrConflict
	tx.db.stats.conflicts.Add(1)
}

// writeOnce runs the conflict check and installs the write under the page
// lock. It returns a non-nil holder when another active txn's uncommitted
// version of key blocks the write (nothing was logged or installed).
func (tx *Txn) writeOnce(key, value []byte, del bool) (*mvcc.Txn, error) {
	me, start := tx.st.ID, tx.st.ID
	if tx.blind {
		// Reading nothing, a one-op write is ordered after every commit
		// so far: only an uncommitted version stops it.
		start = ^uint64(0)
	}
	mv := tx.db.mv
	var u undo
	var holder *mvcc.Txn
	err := tx.db.tree.WriteAtPeeked(key, tx.leaf, func(p *node.Page) (*delta.Delta, error) {
		verdict := mvcc.CheckOK
		u = undo{}
		p.Versions(key, func(v node.Version) bool {
			c, h := mv.WriteCheck(v.TxID, me, start)
			if c == mvcc.CheckSkip {
				return true
			}
			verdict, holder = c, h
			if c == mvcc.CheckOK && v.Flags&delta.Tombstone == 0 {
				u.old, u.hasOld = v.Value, true
			}
			return false
		})
		switch verdict {
		case mvcc.CheckConflict:
			return nil, ErrConflict
		case mvcc.CheckWait:
			return nil, nil // no delta: the page lock is released, nothing installed
		}
		// The old value stays out of the record (OldDeferred): undo needs
		// it only if a checkpoint can hold this version before the txn
		// ends, that is if a cut comes first, and the cut logs it then
		// (logImages). A commit before the next cut never logs it.
		// (A database of an older format logs the old value inline.)
		rec := wal.Record{TxID: wal.TxID(me), Key: key}
		deferOld := tx.db.deferOld && u.hasOld
		if !deferOld {
			rec.OldValue, rec.HasOld = u.old, u.hasOld
		}
		flags := delta.Flags(0)
		switch {
		case del:
			flags = delta.Tombstone
			rec.Type, rec.OldDeferred = wal.Delete, deferOld
		case u.hasOld:
			rec.Type, rec.OldDeferred, rec.Value = wal.Update, deferOld, value
		default:
			rec.Type, rec.Value = wal.Put, value
		}
		lsn, err := tx.log(&rec)
		if err != nil {
			return nil, err
		}
		d := delta.New(key, value, me, rec.Seq, flags)
		d.LSN = uint64(lsn)
		u.key = d.Key
		u.prev = rec.PrevLSN
		u.lsn, u.deferred = lsn, rec.OldDeferred
		// Recorded inside the gate: a cut that seals d sees the write.
		tx.imgMu.Lock()
		tx.writes = append(tx.writes, u)
		tx.imgMu.Unlock()
		return d, nil
	}, &tx.peek)
	if err != nil {
		return nil, err
	}
	if holder != nil {
		return holder, nil
	}
	return nil, nil
}

// logImages logs a before-image (wal.Image) of each write of the txn with
// a deferred old value that no cut covered yet, and returns how many. The
// cut calls it for every open txn twice: before its gate closes, for the
// writes so far, while the txn's other writes wait on imgMu and other
// txns go on; then inside the gate's write side, before it reads the
// frontier, for the writes made meanwhile. So every version a checkpoint
// can hold of a txn that has not ended has its old value in the log below
// the frontier, which the checkpoint makes durable before it publishes
// (INV-C1). A txn that committed or rolled back meanwhile gets images it
// will never need.
func (tx *Txn) logImages() (int, error) {
	tx.imgMu.Lock()
	defer tx.imgMu.Unlock()
	n := 0
	for ; tx.imaged < len(tx.writes); tx.imaged++ {
		u := &tx.writes[tx.imaged]
		if !u.deferred {
			continue
		}
		rec := wal.Record{Type: wal.Image, TxID: wal.TxID(tx.st.ID), Key: u.key, Value: u.old, Of: u.lsn}
		if _, err := tx.db.wal.Append(&rec); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// NewIter returns an iterator over this transaction's view, its own writes
// included. Once the transaction ends the iterator stops: positioning
// calls return false and Error returns ErrClosed.
func (tx *Txn) NewIter(o *IterOptions) (*Iter, error) {
	tx.abortIfLagging()
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.usable(); err != nil {
		return nil, err
	}
	return newIter(tx.db, &tx.r, o, &tx.live, func() error {
		tx.abortIfLagging()
		tx.mu.Lock()
		defer tx.mu.Unlock()
		return tx.usable()
	})
}

// Commit makes the transaction's writes visible atomically. A doomed
// transaction is rolled back and Commit returns ErrConflict.
func (tx *Txn) Commit() error {
	tx.abortIfLagging()
	tx.mu.Lock()
	if err := tx.usable(); err != nil {
		doomed := tx.doomed != nil && !tx.done
		tx.mu.Unlock()
		if doomed {
			_ = tx.rollback(true)
		}
		return err
	}
	tx.done = true
	tx.live.Close()
	tx.mu.Unlock()
	db := tx.db
	defer tx.flushOwnLog()
	defer db.afterFinish()
	defer db.forget(tx)
	if !tx.began {
		tx.leaveLog()
		db.mv.Commit(tx.st) // read-only: nothing was logged
		return nil
	}
	db.mv.SetCommitting(tx.st)
	rec := wal.Record{Type: wal.Commit, TxID: wal.TxID(tx.st.ID)}
	lsn, err := tx.log(&rec)
	tx.leaveLog()
	if err != nil {
		db.mv.SetInDoubt(tx.st)
		return err
	}
	err = failpoints.Hit(failpoints.TxnCommitLogged)
	if err == nil && db.opts.Durability == DurabilitySync && !failpoints.Skip(failpoints.MutCommitNotDurable) {
		err = db.wal.Sync(lsn + wal.LSN(wal.EncodedSize(&rec)))
	}
	if err == nil {
		err = failpoints.Hit(failpoints.TxnCommitDurable)
	}
	if err != nil {
		// In doubt: invisible until reopen, which decides.
		db.mv.SetInDoubt(tx.st)
		return db.degrade(err)
	}
	db.mv.Commit(tx.st)
	db.stats.commits.Add(1)
	return nil
}

// log appends r as the txn's next record, logging the begin record first
// if needed. It fills r's Seq and PrevLSN. Called under the txn's mutex or
// by its only user.
func (tx *Txn) log(r *wal.Record) (wal.LSN, error) {
	db := tx.db
	if !tx.began {
		lsn, err := db.wal.Append(&wal.Record{Type: wal.Begin, TxID: wal.TxID(tx.st.ID)})
		if err != nil {
			return 0, db.degrade(err)
		}
		tx.began, tx.first, tx.last = true, lsn, lsn
		tx.firstAt.Store(uint64(lsn) + 1)
	}
	tx.seq++
	r.Seq = tx.seq
	r.PrevLSN = tx.last
	lsn, err := db.wal.Append(r)
	if errors.Is(err, wal.ErrRecordTooLarge) {
		// Nothing was logged for this write: it fails alone and the
		// txn, the log and the DB go on. (Segments are sized from the
		// stored MaxKeySize and MaxValueSize, so only a database whose
		// manifest predates the stored MaxValueSize gets here.)
		tx.seq--
		return 0, fmt.Errorf("%w: the log record (key, value and the full old value) does not fit in a log segment: %w", ErrValueTooLarge, err)
	}
	if err != nil {
		return 0, db.degrade(err)
	}
	tx.last = lsn
	return lsn, nil
}

// Rollback undoes the transaction's writes. Rolling back a finished
// transaction returns ErrTxnDone; rolling back one doomed by ErrConflict
// returns nil (the rollback is what the conflict calls for), so a deferred
// Rollback needs no special case.
func (tx *Txn) Rollback() error {
	tx.mu.Lock()
	if tx.done {
		err := tx.usable()
		tx.mu.Unlock()
		return err
	}
	tx.mu.Unlock()
	return tx.rollback(true)
}

// rollback walks the writes newest first and installs a compensation (CLR)
// carrying each old value, then finishes the abort (the package mvcc doc
// states why nobody can have seen the undone versions).
func (tx *Txn) rollback(count bool) error {
	tx.mu.Lock()
	if tx.done {
		tx.mu.Unlock()
		return nil
	}
	tx.done = true
	tx.live.Close()
	tx.mu.Unlock()
	// tx.writes stays: until the end record a cut must still image the
	// writes not compensated yet.
	tx.imgMu.Lock()
	writes := tx.writes
	tx.imgMu.Unlock()
	db := tx.db
	db.mv.SetAborted(tx.st)
	for i := len(writes) - 1; i >= 0; i-- {
		u := writes[i]
		_ = db.tree.Write(u.key, func(*node.Page) (*delta.Delta, error) {
			flags := delta.CLR
			if !u.hasOld {
				flags |= delta.Tombstone
			}
			rec := wal.Record{Type: wal.CLR, TxID: wal.TxID(tx.st.ID), Key: u.key,
				Value: u.old, Tombstone: !u.hasOld, UndoNext: u.prev}
			if failpoints.Skip(failpoints.MutCLRNoUndoNext) {
				rec.UndoNext = 0
			}
			// A failed append degrades the DB; the compensation is still
			// installed so this process never shows the txn's writes, and
			// the next open undoes it from the log.
			lsn, err := tx.log(&rec)
			if err != nil && db.degraded.Load() == nil {
				// Without its CLR the end record would make the next
				// open treat the write as undone when it is not.
				_ = db.degrade(err)
			}
			d := delta.New(u.key, u.old, tx.st.ID, rec.Seq, flags)
			d.LSN = uint64(lsn)
			return d, nil
		})
		if err := failpoints.Hit(failpoints.TxnUndoCLR); err != nil {
			_ = db.degrade(err) // as if the CLR's append had failed
		}
		db.hooks.runRollback(len(writes) - i)
	}
	var endEnd uint64
	if tx.began && db.degraded.Load() == nil {
		rec := wal.Record{Type: wal.End, TxID: wal.TxID(tx.st.ID)}
		if err := failpoints.Hit(failpoints.TxnAbortEnd); err != nil {
			_ = db.degrade(err) // as if the end record's append had failed
		} else if lsn, err := tx.log(&rec); err == nil {
			endEnd = uint64(lsn) + uint64(wal.EncodedSize(&rec))
		}
	}
	tx.leaveLog()
	db.mv.FinishAbort(tx.st, endEnd)
	if count {
		db.stats.aborts.Add(1)
	}
	db.forget(tx)
	db.afterFinish()
	tx.flushOwnLog()
	return nil
}

// flushOwnLog writes out the log bytes the ended txn left due
// (DB.flushLog), unless Update or a one-op write runs it: they flush once
// they released the key's stripe.
func (tx *Txn) flushOwnLog() {
	if !tx.update && !tx.blind {
		tx.db.flushLog()
	}
}

// joinLog counts the txn among the writers a group-commit leader waits
// for (wal/gather.go): it runs and will commit soon. Counting from Begin,
// not from the first log record, matters: committers an fsync woke are
// still reading when the next leader starts. Only DurabilitySync commits
// wait for an fsync, so only they join.
func (tx *Txn) joinLog() {
	if tx.db.opts.Durability == DurabilitySync && tx.joined.CompareAndSwap(false, true) {
		tx.db.wal.Join()
	}
}

// leaveLog undoes joinLog: the txn logged its last record, or waits for
// another txn.
func (tx *Txn) leaveLog() {
	if tx.joined.CompareAndSwap(true, false) {
		tx.db.wal.Leave()
	}
}

func (db *DB) forget(tx *Txn) { db.txns.remove(tx) }

// stripes returns the stripe a restart asked for and the stripe the txn
// took itself (see Txn).
func (tx *Txn) stripes() (want, took int) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	return tx.wantStripe, tx.tookStripe
}
