package bwkv

import (
	"fmt"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/manifest"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/recovery"
	"github.com/bwkv/bwkv/wal"
)

// Recovery: redo of the log past the checkpoint, then undo of the losers
// (docs/crash-safety.md).

// recover replays the log into the tree and undoes the losers (recovery
// package doc). st is the manifest state: where the log is read from, and
// how far it was durable at the last publish.
func (db *DB) recover(exists bool, st *manifest.State) error {
	from, frontier := wal.LSN(st.AnalysisStart), wal.LSN(st.Frontier)
	if !exists {
		w, err := wal.Open(db.walOptions(), 0)
		if err != nil {
			return fmt.Errorf("bwkv: open %s: %w", db.dir, err)
		}
		db.wal = w
		return nil
	}
	db.recovering.Store(true)
	defer db.recovering.Store(false)
	db.recovered.Store(newRecoveredTxns())
	// After RetireAll every recovered txid is below Low, and retention no
	// longer asks about them.
	defer db.recovered.Store(nil)
	ro := recovery.Options{
		WAL: db.walOptions(), From: from, Frontier: frontier, Synced: wal.LSN(st.LogSynced),
		TruncateDamaged: db.opts.WALRecovery == WALRecoveryTruncateDamaged,
		Hook:            db.hooks.recovery, ReadOnly: db.opts.ReadOnly,
	}
	if f, g := db.hooks.recoveryDB, db.hooks.recovery; f != nil {
		ro.Hook = func() {
			if g != nil {
				g()
			}
			f(db)
		}
	}
	w, res, err := recovery.Run(ro, redoer{db})
	if err != nil {
		return db.openErr(err)
	}
	if res.Damage != nil {
		db.recovery.DroppedBytes = uint64(res.DroppedBytes)
		db.recovery.Damage = res.Damage.Error()
		db.log.Error("bwkv: damaged log truncated (WALRecoveryTruncateDamaged): commits after the damage are lost",
			"damage", db.recovery.Damage, "keptUpTo", uint64(res.End), "droppedBytes", res.DroppedBytes)
		db.logEnd, db.logCut = res.End, true
	}
	db.wal = w
	db.mv.AdvanceTo(res.MaxTxID)
	db.mv.RetireAll()
	db.recovery.RecordsReplayed = uint64(res.RecordsReplayed)
	db.recovery.LosersUndone = uint64(res.LosersUndone)
	db.recovery.CLRsWritten = uint64(res.CLRsWritten)
	db.recovery.TornBytes = uint64(res.TornBytes)
	db.recovery.Duration = res.Duration
	return nil
}

// redoer installs replayed versions in the tree.
type redoer struct{ db *DB }

// Committed implements recovery.Applier.
func (r redoer) Committed(id wal.TxID) { r.db.recovered.Load().committed.add(uint64(id)) }

// Ended implements recovery.Applier.
func (r redoer) Ended(id wal.TxID) { r.db.recovered.Load().ended.add(uint64(id)) }

// Redo implements recovery.Applier.
func (r redoer) Redo(lsn wal.LSN, rec *wal.Record) error {
	var flags delta.Flags
	val := rec.Value
	switch rec.Type {
	case wal.Put, wal.Update:
	case wal.Delete:
		flags, val = delta.Tombstone, nil
	case wal.CLR:
		flags = delta.CLR
		if rec.Tombstone {
			flags |= delta.Tombstone
		}
	default:
		return nil
	}
	txid, seq := uint64(rec.TxID), rec.Seq
	return r.db.tree.Write(rec.Key, func(p *node.Page) (*delta.Delta, error) {
		if p.Has(rec.Key, txid, seq) {
			return nil, nil
		}
		d := delta.New(rec.Key, val, txid, seq, flags)
		d.LSN = uint64(lsn)
		return d, nil
	})
}
