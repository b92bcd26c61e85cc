package bwkv

import "errors"

// SetTestRecoveryHook installs a function recovery calls before each undo
// step (tests crash the process there).
func SetTestRecoveryHook(f func()) { testRecoveryHook = f }

// SetTestCutHook installs a function the checkpointer runs between a cut
// and its publish.
func SetTestCutHook(f func()) { testCutHook = f }

// SetTestRollbackHook installs a function rollback calls after each
// compensation.
func SetTestRollbackHook(f func(n int)) { testRollbackHook = f }

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
