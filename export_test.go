package bwkv

import (
	"errors"
	"time"

	"github.com/bwkv/bwkv/cache"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

// withHooks returns a copy of o (nil: zero Options) whose test hooks,
// copied too, set changes.
func withHooks(o *Options, set func(h *testHooks)) *Options {
	c := o.Clone()
	h := &testHooks{}
	h.init(c.testHooks)
	set(h)
	c.testHooks = h
	return c
}

// WithTestRecoveryHook returns a copy of o with which Open's recovery calls
// f before each undo step (tests crash the process there).
func WithTestRecoveryHook(o *Options, f func()) *Options {
	return withHooks(o, func(h *testHooks) { h.recovery = f })
}

// WithTestManifestRotateBytes returns a copy of o with which the DB
// rotates its manifest past n bytes (0: the default), so crash tests reach
// rotation.
func WithTestManifestRotateBytes(o *Options, n int64) *Options {
	return withHooks(o, func(h *testHooks) { h.manifestRotateBytes = n })
}

// WithTestGCVerify returns a copy of o with which the data-file GC
// cross-checks its chains and live-byte accounting against the disk at
// every rewrite (a mismatch is a background error). It is on anyway in
// race and invariants builds.
func WithTestGCVerify(o *Options) *Options {
	return withHooks(o, func(h *testHooks) { h.gcVerify = true })
}

// WithTestSettle returns a copy of o with which the checkpointer looks for
// an idle database every interval and settles it after idle (settle.go).
func WithTestSettle(o *Options, interval, idle time.Duration) *Options {
	return withHooks(o, func(h *testHooks) { h.settleInterval, h.settleIdle = interval, idle })
}

// SetTestCutHook installs a function db's checkpointer runs between a cut
// and its publish (nil: none).
func (db *DB) SetTestCutHook(f func()) {
	if f == nil {
		db.hooks.cut.Store(nil)
		return
	}
	db.hooks.cut.Store(&f)
}

// SetTestRollbackHook installs a function db's rollbacks call after each
// compensation (nil: none).
func (db *DB) SetTestRollbackHook(f func(n int)) {
	if f == nil {
		db.hooks.rollback.Store(nil)
		return
	}
	db.hooks.rollback.Store(&f)
}

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

// CacheHardBase is the cache's hard limit for a CacheBytes budget, without
// the unpublished frames (cache.HardBase).
func CacheHardBase(cacheBytes int64) int64 { return cache.HardBase(cacheBytes) }

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
