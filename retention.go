package bwkv

// retention is the tree's view of the transaction manager for
// consolidation (node.Retention). It reads db.mv at each call because
// Open replaces the manager after recovery.
type retention struct{ db *DB }

func (r retention) Low() uint64                         { return r.db.mv.Low() }
func (r retention) CommitTS(txid uint64) (uint64, bool) { return r.db.mv.CommitTS(txid) }
func (r retention) Readers(dst []uint64) ([]uint64, uint64) {
	return r.db.mv.Readers(dst)
}
