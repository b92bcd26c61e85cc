package bwkv

import (
	"math"

	"github.com/puzpuzpuz/xsync/v3"
)

// retention is the tree's view of the transaction manager for
// consolidation (node.Retention). It reads db.mv at each call because
// Open replaces the manager after recovery.
//
// While recovery runs (db.recovered set), every txid counts as unretired
// and the view is recovery's own: a txid is committed once the analysis
// has met its commit record, rolled back once it has met its end record
// (written only after every compensation), and no reader exists. So
// redo's consolidations keep each key's versions of transactions still
// open at that point of the log (a loser's, or one whose commit record
// lies further on) and its newest committed version, and drop the
// committed versions a newer one supersedes and the rolled-back versions
// with their CLRs. Without that, a key written n times since the last
// checkpoint held all n versions until recovery ended, and each
// consolidation of its page copied them all: recovery was quadratic in
// the log's length. Undo never needs a dropped version: it takes old
// values from the log.
type retention struct{ db *DB }

func (r retention) Low() uint64 { return r.db.mv.Low() }

// CommitTS returns, while recovering, the txid itself as the commit
// timestamp: Readers then reports no reader and the bound MaxUint64, so
// the timestamps are never compared with a reader's start and only
// committed versus not counts.
func (r retention) CommitTS(txid uint64) (uint64, bool) {
	if s := r.db.recovered.Load(); s != nil {
		return txid, s.committed.has(txid)
	}
	return r.db.mv.CommitTS(txid)
}

// RolledBack: while recovering, an end record met; afterwards, a rollback
// finished (mvcc.Manager.RolledBack). Without the latter a reader held
// open kept every rolled-back version of a key, with its CLR, until it
// closed: each rollback of a hot key made its leaf two versions longer.
func (r retention) RolledBack(txid uint64) bool {
	if s := r.db.recovered.Load(); s != nil {
		return s.ended.has(txid)
	}
	return r.db.mv.RolledBack(txid)
}

func (r retention) Readers(dst []uint64) ([]uint64, uint64) {
	if r.db.recovered.Load() != nil {
		return dst[:0], math.MaxUint64
	}
	return r.db.mv.Readers(dst)
}

// recoveredTxns is what recovery's analysis has met so far: the txids
// with a commit record, and those with an end record (rolled back).
type recoveredTxns struct{ committed, ended txidSet }

func newRecoveredTxns() *recoveredTxns {
	return &recoveredTxns{committed: newTxidSet(), ended: newTxidSet()}
}

// txidSet is a set of txids: a bit per txid, 64 to a map entry, so the
// dense txids of a log's transactions share entries. Safe for concurrent
// use.
type txidSet struct{ words *xsync.MapOf[uint64, uint64] }

func newTxidSet() txidSet { return txidSet{words: xsync.NewMapOf[uint64, uint64]()} }

func (s txidSet) add(txid uint64) {
	s.words.Compute(txid>>6, func(w uint64, _ bool) (uint64, bool) {
		return w | 1<<(txid&63), false
	})
}

func (s txidSet) has(txid uint64) bool {
	w, _ := s.words.Load(txid >> 6)
	return w&(1<<(txid&63)) != 0
}
