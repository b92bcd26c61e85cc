package bwkv

import (
	"errors"
	"time"

	"github.com/bwkv/bwkv/node"
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

// SetTestManifestRotateBytes makes DBs opened afterwards rotate their
// manifest past n bytes (0: the default), so crash tests reach rotation.
func SetTestManifestRotateBytes(n int64) { testManifestRotateBytes = n }

// KeyVersions returns how many versions of key its leaf holds in memory
// (chain and base, CLR-masked ones excluded).
func (db *DB) KeyVersions(key []byte) (int, error) {
	p, err := db.tree.Leaf(key)
	if err != nil || p == nil {
		return 0, err
	}
	n := 0
	p.Versions(key, func(node.Version) bool { n++; return true })
	return n, nil
}

// TxnWaiting reports whether tx is blocked waiting for another txn's lock.
func TxnWaiting(tx *Txn) bool { return tx.st.Waiting() }

// LedgerPages returns how many pages the GC ledger holds a chain for and
// how many pages are resident (full or stub).
func (db *DB) LedgerPages() (ledger, resident int) {
	if db.gc.ledger != nil {
		ledger = db.gc.ledger.Len()
	}
	for pid := pagetable.PID(1); pid < db.pt.Next(); pid++ {
		if db.pt.Load(pid) != nil {
			resident++
		}
	}
	return ledger, resident
}

// ManifestStateCopies returns how many whole-state copies the manifest
// made since Open.
func (db *DB) ManifestStateCopies() int64 { return db.man.Stats().StateCopies }

// SetTestSettle sets how often the checkpointer of DBs opened afterwards
// looks for an idle database and how long it must be idle to settle
// (settle.go); the returned function restores the old values.
func SetTestSettle(interval, idle time.Duration) (restore func()) {
	oi, od := settleInterval, settleIdle
	settleInterval, settleIdle = interval, idle
	return func() { settleInterval, settleIdle = oi, od }
}
