package bwkv

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/bwkv/bwkv/checkpoint"
	"github.com/bwkv/bwkv/manifest"
	"github.com/bwkv/bwkv/pool"
	"github.com/bwkv/bwkv/wal"
)

// durableLSN is the log position below which every record is durable.
func (db *DB) durableLSN() uint64 {
	if db.wal == nil {
		return ^uint64(0)
	}
	return uint64(db.wal.DurableLSN())
}

// degrade turns the DB read-only after an unrecoverable I/O error (a
// failed fsync of the log, the manifest or a data file: never retried and
// trusted, see fatalIO) and returns the error to hand the caller, which
// matches ErrReadOnly and wraps err. Background work stops at its next
// step (checkpoint.Checkpointer.Attempt, gc.Worker.Collect), writers stop waiting for it
// (backpressure), Close works, and reopening recovers every acknowledged
// commit from the log.
func (db *DB) degrade(err error) error {
	if db.degraded.CompareAndSwap(nil, &err) {
		db.readOnly.Store(true)
		db.backgroundError(err)
		db.log.Error("bwkv: unrecoverable I/O error; the database is read-only until reopened", "err", err)
		db.ckpt.Wake() // wake writers held by backpressure
	}
	return fmt.Errorf("%w: %w", ErrReadOnly, err)
}

// errReadOnly is the error a write to a read-only DB returns: ErrReadOnly,
// wrapping the cause when an I/O error degraded the DB.
func (db *DB) errReadOnly() error {
	if d := db.degraded.Load(); d != nil {
		return fmt.Errorf("%w: degraded by an earlier I/O error: %w", ErrReadOnly, *d)
	}
	return ErrReadOnly
}

// fatalIO reports whether a background step failed in a way that must
// degrade the DB: an fsync (of the log, the manifest or a data file) whose
// outcome is unknown. Other failures, such as a data-file write refused
// with ENOSPC, abandon the step, which a later one retries.
func fatalIO(err error) bool {
	return errors.Is(err, checkpoint.ErrLogSync) || errors.Is(err, wal.ErrFailed) ||
		errors.Is(err, manifest.ErrFailed) || errors.Is(err, pool.ErrSync)
}

// walOptions returns the log's options.
func (db *DB) walOptions() wal.Options {
	return wal.Options{
		FS:            db.fs,
		Dir:           filepath.Join(db.dir, walDir),
		SegmentBytes:  db.opts.WALSegmentBytes,
		Relaxed:       db.opts.Durability == DurabilityRelaxed,
		FlushInterval: db.opts.FlushInterval,
		BindLSN:       db.logBound,
		Spares:        db.walSpares(),
	}
}

// walSpareFiles is how many retired log segments a database keeps for
// reuse (wal.Options.Spares). A commit with DurabilitySync waits for an
// fdatasync of the newest segment (with DurabilityRelaxed the background
// flusher runs it); in a reused file that flushes the records alone,
// while the first write into a fallocated block also journals the block's
// conversion from unwritten (ext4). Measured: durable W4 +20-40%, relaxed
// W4 +7% (bench/results/s23-durable). Two spares cover the segments a
// checkpoint retires at once in steady writing; each holds a segment's
// worth of disk (WALSegmentBytes) while writes go on, and the idle settle
// and Close delete them.
const walSpareFiles = 2

// walSpares returns wal.Options.Spares: walSpareFiles when the log's
// format allows reuse (records bound to their LSN), else 0.
func (db *DB) walSpares() int {
	if !db.logBound {
		return 0
	}
	return walSpareFiles
}
