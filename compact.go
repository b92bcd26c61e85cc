package bwkv

import "context"

// compactMaxSweeps bounds Compact while writes go on: after this many
// passes over the whole page table it returns even if writers keep
// giving leaves new chains (an idle database needs at most three: the
// rest of the sweep it started in, one that consolidates, one that finds
// nothing).
const compactMaxSweeps = 4

// Compact brings the database to its settled state now, the state an
// idle database reaches on its own 5 to 6 s after its last write: it
// checkpoints what is dirty, consolidates every resident leaf whose delta
// chain holds deltas into one new base, checkpoints those pages
// (compressed with the database's codec), rotates and recycles the log
// segment the checkpoints cover, and runs data-file GC rounds until no
// file is due. Afterwards reads find no delta chain to walk and the
// directory holds about its live data (versions an open snapshot or
// transaction still needs stay). Call it after a bulk load, before a
// read-mostly phase or a backup.
//
// Reads and writes go on meanwhile; Compact works in bounded steps on
// the checkpointer's goroutine, so checkpoints are not held up. Leaves
// that writers touch during the call may keep new chains: Compact stops
// after a few passes over the tree whatever writers do. It returns
// ctx's error if ctx ends first (the work done so far stands), ErrClosed
// after Close, and ErrReadOnly for a read-only or degraded database; a
// checkpoint or log failure is returned as it is.
func (db *DB) Compact(ctx context.Context) error {
	if err := db.checkOpen(); err != nil {
		return err
	}
	if db.readOnly.Load() {
		return db.errReadOnly()
	}
	sweeps := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var done, wrapped bool
		var err error
		if derr := db.ckpt.Do(func() { done, wrapped, err = db.settleStep(settleSquashPages) }); derr != nil {
			return derr
		}
		if err != nil {
			return err
		}
		if wrapped {
			sweeps++
		}
		if done || sweeps >= compactMaxSweeps {
			return nil
		}
	}
}
