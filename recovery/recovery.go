package recovery

import (
	"fmt"
	"slices"
	"time"

	"github.com/bwkv/bwkv/failpoints"
	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/wal"
)

// Applier installs versions in the index. Every call runs on the opening
// goroutine before the DB is handed out.
type Applier interface {
	// Redo installs the version a put, update, delete or CLR record
	// describes, unless that version is already present.
	Redo(lsn wal.LSN, r *wal.Record) error
	// Committed reports a commit record met by the analysis (before or
	// after the frontier), in log order: from then on the transaction's
	// versions are committed, so redo's consolidations may drop those a
	// newer committed version supersedes (no reader exists yet, and undo
	// takes old values from the log).
	Committed(id wal.TxID)
	// Ended reports an end record met by the analysis, in log order: the
	// transaction rolled back (a rollback or an earlier recovery's undo
	// logs its end only after every compensation), so redo's
	// consolidations may drop its versions with their CLRs. Undo's own
	// end records are not reported.
	Ended(id wal.TxID)
}

// Options say where the log is and how to continue it.
type Options struct {
	WAL wal.Options
	// From is analysisStart: the log is read from here.
	From wal.LSN
	// Frontier is the checkpoint frontier: records below it are already in
	// the durable pages; redo starts here.
	Frontier wal.LSN
	// Synced is the log LSN the last checkpoint publish had fsynced (the
	// manifest's LogSynced): a log ending or damaged below it lost
	// durable bytes.
	Synced wal.LSN
	// TruncateDamaged keeps the longest valid prefix of a damaged log
	// (Result.Damage says what was dropped) instead of failing.
	TruncateDamaged bool
	// Hook, if set, is called before each undo step (tests use it to
	// crash in the middle of recovery).
	Hook func()
	// ReadOnly recovers in memory only: the log is not opened for
	// writing, and losers are compensated in the index without CLRs (the
	// next read-write open undoes them for good).
	ReadOnly bool
}

// Result describes what recovery did.
type Result struct {
	RecordsReplayed int64
	LosersUndone    int
	CLRsWritten     int
	TornBytes       int64
	// Damage is the log damage a TruncateDamaged recovery cut the log at
	// (nil: none); DroppedBytes the log bytes it gave up.
	Damage       *base.CorruptionError
	DroppedBytes int64
	// MaxTxID is the highest txid the log names (the oracle restarts above).
	MaxTxID  uint64
	End      wal.LSN
	Duration time.Duration
}

// rec is what undo needs of one record of an open transaction below the
// frontier.
type rec struct {
	typ      wal.Type
	prev     wal.LSN
	undoNext wal.LSN
	key, old []byte
	hasOld   bool
	// deferred: the write logged its old value apart (OldDeferred) and no
	// before-image of it was met yet.
	deferred bool
}

type txn struct {
	last    wal.LSN
	maxSeq  uint32
	records map[wal.LSN]*rec
	// lastPre is the txn's newest record below the frontier (hasPre: one
	// exists): undo starts there.
	lastPre wal.LSN
	hasPre  bool
}

// analysis is what the first pass learns: the transactions still open
// (the losers, once the log is read) and those that rolled back with
// their end record at or after the frontier.
type analysis struct {
	open  map[wal.TxID]*txn
	ended map[wal.TxID]bool
}

// Run recovers the log in o.WAL.Dir and returns the writer that continues
// it. On error nothing was written.
func Run(o Options, ap Applier) (*wal.Writer, Result, error) {
	start := time.Now()
	var res Result
	an := analysis{open: map[wal.TxID]*txn{}, ended: map[wal.TxID]bool{}}
	ropts := wal.ReplayOptions{From: o.From, Frontier: o.Frontier, Synced: o.Synced, TruncateDamaged: o.TruncateDamaged, BindLSN: o.WAL.BindLSN}
	rr, err := wal.ReplayWith(o.WAL.FS, o.WAL.Dir, ropts, func(lsn wal.LSN, r *wal.Record) error {
		return analyze(o, ap, &res, &an, lsn, r)
	})
	res.TornBytes = rr.TornBytes
	res.End = rr.End
	res.Damage, res.DroppedBytes = rr.Damage, rr.DroppedBytes
	if err != nil {
		return nil, res, err
	}
	// The second pass reads the same bytes, up to the same end (Replay
	// changes nothing, and a damaged log stops at the same damage).
	ropts.From = o.Frontier
	if _, err := wal.ReplayWith(o.WAL.FS, o.WAL.Dir, ropts, func(lsn wal.LSN, r *wal.Record) error {
		return redo(o, ap, &an, lsn, r)
	}); err != nil {
		return nil, res, err
	}
	var w *wal.Writer
	if !o.ReadOnly {
		if w, err = openLog(o, rr); err != nil {
			return nil, res, err
		}
	}
	if err := undoLosers(o, w, ap, an.open, &res); err != nil {
		if w != nil {
			w.Close()
		}
		return nil, res, err
	}
	if err := failpoints.Hit(failpoints.RecoveryEnd); err != nil {
		if w != nil {
			w.Close()
		}
		return nil, res, fmt.Errorf("recovery: end: %w", err)
	}
	res.Duration = time.Since(start)
	return w, res, nil
}

// analyze is the first pass's step for one record: the transactions'
// outcomes, and what undo needs of the open ones' records below the
// frontier. Commit and end records below the frontier are reported to
// the applier here, before any redo; those at or after it in the second
// pass, in log order with the redo.
func analyze(o Options, ap Applier, res *Result, an *analysis, lsn wal.LSN, r *wal.Record) error {
	res.RecordsReplayed++
	if uint64(r.TxID) > res.MaxTxID {
		res.MaxTxID = uint64(r.TxID)
	}
	if r.Type == wal.Image {
		// Not part of its transaction's chain. One for a transaction
		// that already ended, or for a write at or after the frontier,
		// is never needed.
		if t := an.open[r.TxID]; t != nil {
			if x := t.records[r.Of]; x != nil && x.deferred {
				x.old, x.hasOld, x.deferred = slices.Clone(r.Value), true, false
			}
		}
		return nil
	}
	t := an.open[r.TxID]
	if t == nil {
		t = &txn{records: map[wal.LSN]*rec{}}
		an.open[r.TxID] = t
	}
	t.last = lsn
	if r.Seq > t.maxSeq {
		t.maxSeq = r.Seq
	}
	switch r.Type {
	case wal.Commit:
		delete(an.open, r.TxID)
		if lsn < o.Frontier {
			ap.Committed(r.TxID)
		}
		return nil
	case wal.End:
		delete(an.open, r.TxID)
		if lsn < o.Frontier {
			ap.Ended(r.TxID)
		} else {
			an.ended[r.TxID] = true
		}
		return nil
	}
	if lsn >= o.Frontier {
		return nil
	}
	t.lastPre, t.hasPre = lsn, true
	if r.Type == wal.Begin {
		t.records[lsn] = &rec{typ: wal.Begin}
		return nil
	}
	x := &rec{typ: r.Type, prev: r.PrevLSN, undoNext: r.UndoNext}
	if r.Type != wal.CLR {
		x.key = slices.Clone(r.Key)
		x.old, x.hasOld, x.deferred = slices.Clone(r.OldValue), r.HasOld, r.OldDeferred
	}
	t.records[lsn] = x
	return nil
}

// redo is the second pass's step for one record at or after the
// frontier. It installs the records of the transactions that committed,
// only the CLRs of those that rolled back (every write of a rolled-back
// transaction has its CLR, which restores the old value; a recovery's
// undo, below, compensates only the writes below the frontier, the ones
// a checkpoint holds), and nothing of the losers. So undo never needs the
// old value of a write at or after the frontier, and a write below it had
// its old value logged in its record or, at the cut that sealed it, in a
// before-image (wal.Image): undo never reads a data file for an old
// value.
func redo(o Options, ap Applier, an *analysis, lsn wal.LSN, r *wal.Record) error {
	if lsn < o.Frontier {
		return nil
	}
	switch r.Type {
	case wal.Commit:
		ap.Committed(r.TxID)
		return nil
	case wal.End:
		ap.Ended(r.TxID)
		return nil
	case wal.Begin, wal.Image:
		return nil
	}
	if an.open[r.TxID] != nil || an.ended[r.TxID] && r.Type != wal.CLR {
		return nil
	}
	if err := failpoints.Hit(failpoints.RecoveryRedo); err != nil {
		return fmt.Errorf("recovery: redo at %d: %w", lsn, err)
	}
	return ap.Redo(lsn, r)
}

// openLog makes the first mutations: it drops what a TruncateDamaged
// replay gave up, then (in wal.Open) the torn tail, and returns the writer
// continuing the log at rr.End. A read-only recovery does not call it: it
// leaves the files as they are and just stops at End.
func openLog(o Options, rr wal.ReplayResult) (*wal.Writer, error) {
	if rr.Damage != nil {
		if err := wal.DiscardAfter(o.WAL.FS, o.WAL.Dir, rr.End); err != nil {
			return nil, fmt.Errorf("recovery: drop the damaged log after %d: %w", rr.End, err)
		}
	}
	w, err := wal.Open(o.WAL, rr.End)
	if err != nil {
		return nil, fmt.Errorf("recovery: open log at %d: %w", rr.End, err)
	}
	return w, nil
}

// undoLosers undoes the transactions left open, newest first, and syncs
// their compensations (w is nil in a read-only recovery). The caller
// closes w on error.
func undoLosers(o Options, w *wal.Writer, ap Applier, open map[wal.TxID]*txn, res *Result) error {
	ids := make([]wal.TxID, 0, len(open))
	for id := range open {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for i := len(ids) - 1; i >= 0; i-- {
		if failpoints.Skip(failpoints.MutRecoveryNoUndo) {
			continue
		}
		n, err := undo(o, w, ap, ids[i], open[ids[i]])
		res.CLRsWritten += n
		if err != nil {
			return err
		}
		res.LosersUndone++
	}
	if len(ids) > 0 && w != nil {
		if err := w.Sync(w.Head()); err != nil {
			return fmt.Errorf("recovery: sync undo records: %w", err)
		}
	}
	return nil
}

// undo compensates one loser's uncompensated writes, newest first, then
// appends its end record.
func undo(o Options, w *wal.Writer, ap Applier, id wal.TxID, t *txn) (int, error) {
	n := 0
	seq := t.maxSeq
	prevLSN := t.last
	// Only its writes below the frontier are installed (redo).
	cur, ok := t.lastPre, t.hasPre
	for ok {
		x := t.records[cur]
		if x == nil {
			// Records before analysisStart belong to a txn that was
			// durable-ended or whose writes lie wholly in the checkpoint;
			// analysisStart guarantees no loser reaches below it.
			return n, fmt.Errorf("recovery: txn %d: record at %d not in the analysed log", id, cur)
		}
		switch x.typ {
		case wal.Begin:
			ok = false
			continue
		case wal.CLR:
			cur = x.undoNext
			continue
		}
		if x.deferred {
			// Logged without its old value, and no cut logged it, yet
			// a checkpoint holds the write: the log lost the image.
			return n, base.CorruptionErrorf(o.WAL.Dir, int64(cur), "txn %d: the write at %d has no before-image in the log", id, cur)
		}
		if o.Hook != nil {
			o.Hook()
		}
		if err := failpoints.Hit(failpoints.RecoveryUndo); err != nil {
			return n, fmt.Errorf("recovery: undo txn %d: %w", id, err)
		}
		seq++
		clr := &wal.Record{
			Type:      wal.CLR,
			TxID:      id,
			Seq:       seq,
			PrevLSN:   prevLSN,
			Key:       x.key,
			Value:     x.old,
			Tombstone: !x.hasOld,
			UndoNext:  x.prev,
		}
		if failpoints.Skip(failpoints.MutCLRNoUndoNext) {
			clr.UndoNext = 0
		}
		var lsn wal.LSN
		if w != nil {
			var err error
			if lsn, err = w.Append(clr); err != nil {
				return n, fmt.Errorf("recovery: undo txn %d: %w", id, err)
			}
		}
		if err := ap.Redo(lsn, clr); err != nil {
			return n, err
		}
		n++
		prevLSN = lsn
		cur = x.prev
	}
	if w == nil {
		return n, nil
	}
	if _, err := w.Append(&wal.Record{Type: wal.End, TxID: id, Seq: seq, PrevLSN: prevLSN}); err != nil {
		return n, fmt.Errorf("recovery: end txn %d: %w", id, err)
	}
	return n, nil
}
