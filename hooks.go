package bwkv

import (
	"sync/atomic"
	"time"

	"github.com/bwkv/bwkv/internal/invariants"
	"github.com/bwkv/bwkv/manifest"
)

// testHooks are the test knobs of one DB. They live on the DB, not in
// package variables, so two DBs of one process (or parallel tests) never
// see each other's. Tests set them through export_test.go: the ones read
// while the DB opens through Options.testHooks, the ones a test changes
// on a live DB (cut, rollback) through setters, as atomics because the
// background goroutines read them. A zero testHooks changes nothing.
type testHooks struct {
	// recovery, when set, runs before each undo step of recovery.
	recovery func()
	// recoveryDB, when set, runs before each undo step of recovery with
	// the opening DB (tests inspect its tree there).
	recoveryDB func(db *DB)
	// manifestRotateBytes, when positive, is the manifest size past
	// which the DB rotates it, so crash tests reach rotation.
	manifestRotateBytes int64
	// gcVerify makes every GC rewrite cross-check the GC's bookkeeping
	// against the disk (gc.Env.Verify). Invariants and race builds (the
	// test suite, prod_test.sh) verify whatever it says: verifyGC.
	gcVerify bool
	// settleInterval and settleIdle, when positive, replace the idle
	// settling's period and idle time (settle.go), so tests settle in
	// milliseconds.
	settleInterval, settleIdle time.Duration
	// gcNoConsolidate makes GC rewrites copy every live frame as it is
	// (gc.Env.NoConsolidate): the baseline consolidation is measured
	// against.
	gcNoConsolidate bool
	// hotAfter, when not zero, replaces hotAfter (db.go); negative: no
	// page is hot, every checkpoint frame is compressed where that pays.
	hotAfter time.Duration
	// noCarry makes every writer's consolidation a whole one, written as
	// a base (tree.Config.Carry off): the baseline carried bases are
	// measured against.
	noCarry bool
	// noShorten stops the evictor consolidating the long chains of pages
	// in use (tree.Config.ReadChain 0), for tests that build chains.
	noShorten bool
	// noEvict keeps the background evictor idle (cache.Env.NoEvict).
	noEvict bool
	// formatVersion, when not zero, is the format version a new database
	// records instead of manifest.FormatVersion (tests of older formats).
	formatVersion uint64

	// cut, when set, runs between a cut and its publish.
	cut atomic.Pointer[func()]
	// cutImages, when set, runs with the number of before-images a cut
	// logged before its gate (inGate false) and then inside it (true).
	cutImages atomic.Pointer[func(inGate bool, n int)]
	// rollback, when set, runs after each compensation of a rollback with
	// the number installed so far.
	rollback atomic.Pointer[func(n int)]
	// gcPaused, while set, skips the GC rounds (they stay due).
	gcPaused atomic.Bool
	// frameRead, when set, runs after each frame a chain read reads
	// (readChain), with the page and the frame's address.
	frameRead atomic.Pointer[func(pid, addr uint64)]
	// stripeSpin, when set, runs before each yield of a hot-stripe taker
	// (takeStripe) with the yield's number.
	stripeSpin atomic.Pointer[func(i int)]
	// checkListing, when set, runs in Check between its first look at
	// the manifest's files and its listing of the directory.
	checkListing atomic.Pointer[func()]
	// peekSkipIndexed and peekNoReread are mutants of a peek through a
	// chain index (peekPage): the first skips the frames the index names
	// for the key, the second returns an indexed read's error instead of
	// reading the chain again from its head.
	peekSkipIndexed, peekNoReread atomic.Bool
	// noAhead turns off a forward scan's warming of the caches for its
	// next leaf (Iter.startAhead, tree.Ahead): the baseline it is
	// measured against.
	noAhead atomic.Bool
}

// init copies the knobs an Options carries (nil: none) into h.
func (h *testHooks) init(from *testHooks) {
	if from == nil {
		return
	}
	h.recovery = from.recovery
	h.recoveryDB = from.recoveryDB
	h.manifestRotateBytes = from.manifestRotateBytes
	h.gcVerify = from.gcVerify
	h.settleInterval, h.settleIdle = from.settleInterval, from.settleIdle
	h.gcNoConsolidate = from.gcNoConsolidate
	h.hotAfter = from.hotAfter
	h.noShorten = from.noShorten
	h.noEvict = from.noEvict
	h.noCarry = from.noCarry
	h.formatVersion = from.formatVersion
	h.gcPaused.Store(from.gcPaused.Load())
	h.frameRead.Store(from.frameRead.Load())
	h.stripeSpin.Store(from.stripeSpin.Load())
	h.cut.Store(from.cut.Load())
	h.rollback.Store(from.rollback.Load())
}

// newFormat returns the format version a new database records: the
// hook's if set, else manifest.FormatVersion.
func (h *testHooks) newFormat() uint64 {
	if h.formatVersion != 0 {
		return h.formatVersion
	}
	return manifest.FormatVersion
}

// hotAfterOr returns the hot-page age to use: the hook's if set, else d.
func (h *testHooks) hotAfterOr(d time.Duration) time.Duration {
	if h.hotAfter != 0 {
		return h.hotAfter
	}
	return d
}

// readChainOr returns tree.Config.ReadChain: 0 if the hook says no
// shortening, else n.
func (h *testHooks) readChainOr(n int) int {
	if h.noShorten {
		return 0
	}
	return n
}

// verifyGC reports whether GC rewrites cross-check their bookkeeping.
func (h *testHooks) verifyGC() bool { return h.gcVerify || invariants.Enabled }

// runCut runs the cut hook, if any.
func (h *testHooks) runCut() {
	if f := h.cut.Load(); f != nil {
		(*f)()
	}
}

// runCutImages runs the cut-images hook, if any.
func (h *testHooks) runCutImages(inGate bool, n int) {
	if f := h.cutImages.Load(); f != nil {
		(*f)(inGate, n)
	}
}

// runFrameRead runs the frame-read hook, if any.
func (h *testHooks) runFrameRead(pid, addr uint64) {
	if f := h.frameRead.Load(); f != nil {
		(*f)(pid, addr)
	}
}

// runStripeSpin runs the stripe-spin hook, if any.
func (h *testHooks) runStripeSpin(i int) {
	if f := h.stripeSpin.Load(); f != nil {
		(*f)(i)
	}
}

// runRollback runs the rollback hook, if any.
func (h *testHooks) runRollback(n int) {
	if f := h.rollback.Load(); f != nil {
		(*f)(n)
	}
}

// settleTimes returns the idle settling's period and idle time.
func (h *testHooks) settleTimes() (interval, idle time.Duration) {
	interval, idle = settleInterval, settleIdle
	if h.settleInterval > 0 {
		interval = h.settleInterval
	}
	if h.settleIdle > 0 {
		idle = h.settleIdle
	}
	return interval, idle
}
