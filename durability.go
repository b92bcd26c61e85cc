package bwkv

import (
	"fmt"
	"path/filepath"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/recovery"
	"github.com/bwkv/bwkv/wal"
)

// testRecoveryHook, when set (by tests), runs before each undo step of
// recovery.
var testRecoveryHook func()

// durableLSN is the log position below which every record is durable.
func (db *DB) durableLSN() uint64 {
	if db.wal == nil {
		return ^uint64(0)
	}
	return uint64(db.wal.DurableLSN())
}

// degrade turns the DB read-only after an unrecoverable log error (a
// failed fsync is never retried and trusted) and returns the error to hand
// the caller.
func (db *DB) degrade(err error) error {
	if db.degraded.CompareAndSwap(nil, &err) {
		db.readOnly.Store(true)
		db.stats.bgErrors.Add(1)
		db.log.Error("bwkv: log failure; the database is read-only until reopened", "err", err)
	}
	return fmt.Errorf("%w: %v", ErrReadOnly, err)
}

// walOptions returns the log's options.
func (db *DB) walOptions() wal.Options {
	return wal.Options{
		FS:            db.fs,
		Dir:           filepath.Join(db.dir, walDir),
		SegmentBytes:  db.opts.WALSegmentBytes,
		Relaxed:       db.opts.Durability == DurabilityRelaxed,
		FlushInterval: db.opts.FlushInterval,
	}
}

// recover replays the log into the tree and undoes the losers (DESIGN §7).
func (db *DB) recover(exists bool, from, frontier wal.LSN) error {
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
	ro := recovery.Options{WAL: db.walOptions(), From: from, Frontier: frontier, Hook: testRecoveryHook, ReadOnly: db.opts.ReadOnly}
	w, res, err := recovery.Run(ro, redoer{db})
	if err != nil {
		return db.openErr(err)
	}
	db.wal = w
	db.mv.AdvanceTo(res.MaxTxID)
	db.mv.RetireAll()
	db.recovery = RecoveryStats{
		RecordsReplayed: uint64(res.RecordsReplayed),
		LosersUndone:    uint64(res.LosersUndone),
		CLRsWritten:     uint64(res.CLRsWritten),
		TornBytes:       uint64(res.TornBytes),
		Duration:        res.Duration,
	}
	return nil
}

// redoer installs replayed versions in the tree.
type redoer struct{ db *DB }

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
