package bwkv

import (
	"errors"
	"time"

	"github.com/bwkv/bwkv/pagetable"
)

// SetTestRecoveryHook installs a function recovery calls before each undo
// step (tests crash the process there).
func SetTestRecoveryHook(f func()) { testRecoveryHook = f }

// SetTestCutHook installs a function the checkpointer runs between a cut
// and its publish.
func SetTestCutHook(f func()) { testCutHook = f }

// SetTestRollbackHook installs a function rollback calls after each
// compensation.
func SetTestRollbackHook(f func(n int)) { testRollbackHook = f }

// ResidentSums returns the cache's accounted resident bytes and the sum
// over every mapped slot of its resident state's size (equal when the
// accounting is exact). Call it on a quiescent DB.
func (db *DB) ResidentSums() (accounted, actual int64) {
	for pid := pagetable.PID(1); pid < db.pt.Next(); pid++ {
		if p := db.pt.Load(pid); p != nil {
			actual += int64(p.Bytes())
		}
	}
	return db.pt.Resident(), actual
}

// CollectGarbage checkpoints and runs data-file GC rounds (each
// DB.Checkpoint ends with one) until none is due.
func CollectGarbage(db *DB) error {
	for i := 0; i < 100; i++ {
		if err := db.Checkpoint(); err != nil {
			return err
		}
		if !db.gc.due.Load() {
			return nil
		}
	}
	return errors.New("bwkv: GC still due after 100 rounds")
}

// SetTestGCVerify makes the data-file GC of DBs opened afterwards
// cross-check its chains and live-byte accounting against the disk at
// every rewrite; a mismatch is a background error.
func SetTestGCVerify(on bool) { testGCVerify = on }

// SetTestSettle sets how often the checkpointer of DBs opened afterwards
// looks for an idle database and how long it must be idle to settle
// (settle.go); the returned function restores the old values.
func SetTestSettle(interval, idle time.Duration) (restore func()) {
	oi, od := settleInterval, settleIdle
	settleInterval, settleIdle = interval, idle
	return func() { settleInterval, settleIdle = oi, od }
}
