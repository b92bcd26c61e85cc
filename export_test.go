package bwkv

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/bwkv/bwkv/cache"
	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/gc"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
	"github.com/bwkv/bwkv/tree"
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

// WithTestRecoveryDBHook returns a copy of o with which Open's recovery
// calls f with the opening DB before each undo step.
func WithTestRecoveryDBHook(o *Options, f func(db *DB)) *Options {
	return withHooks(o, func(h *testHooks) { h.recoveryDB = f })
}

// LeafEntries returns how many versions the in-memory leaf holding key
// holds, its base's entries and its chain's deltas, of every key, CLRs
// and the versions they mask included.
func (db *DB) LeafEntries(key []byte) (int, error) {
	p, err := db.tree.Leaf(key)
	if err != nil || p == nil {
		return 0, err
	}
	return p.Base.Len() + p.Len, nil
}

// DescribeKey lists, for a failure message, the versions of key its
// in-memory leaf holds (chain, then base, newest first) with each txid's
// status, and the lowest unretired txid.
func (db *DB) DescribeKey(key []byte) string {
	p, err := db.tree.Leaf(key)
	if err != nil || p == nil {
		return fmt.Sprintf("no leaf (%v)", err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "low %d, stub %v, chain %d deltas, base %d entries\n", db.mv.Low(), p.Stub != nil, p.Len, p.Base.Len())
	status := func(id uint64) string {
		t, ok := db.mv.Lookup(id)
		if !ok {
			return "retired"
		}
		c, _ := db.mv.CommitTS(id)
		return fmt.Sprintf("state %d, commit ts %d, rolled back %v", t.State(), c, db.mv.RolledBack(id))
	}
	line := func(where string, txid uint64, seq uint32, flags delta.Flags, val []byte) {
		fmt.Fprintf(&sb, "  %s txid %d seq %d flags %d value %q (%s)\n", where, txid, seq, flags, val, status(txid))
	}
	for d := p.Head; d != nil; d = d.Next {
		if string(d.Key) == string(key) {
			line("chain", d.TxID, d.Seq, d.Flags, d.Value)
		}
	}
	for i := p.Base.Search(key); i < p.Base.Len() && p.Base.KeyEqual(i, key); i++ {
		e := p.Base.At(i)
		line("base", e.TxID, e.Seq, e.Flags, e.Value)
	}
	return sb.String()
}

// WithTestManifestRotateBytes returns a copy of o with which the DB
// rotates its manifest past n bytes (0: the default), so crash tests reach
// rotation.
func WithTestManifestRotateBytes(o *Options, n int64) *Options {
	return withHooks(o, func(h *testHooks) { h.manifestRotateBytes = n })
}

// WithTestFormatVersion returns a copy of o with which a new database
// records format version v (an older format's database).
func WithTestFormatVersion(o *Options, v uint64) *Options {
	return withHooks(o, func(h *testHooks) { h.formatVersion = v })
}

// WithTestGCVerify returns a copy of o with which the data-file GC
// cross-checks its chains and live-byte accounting against the disk at
// every rewrite (a mismatch is a background error). It is on anyway in
// race and invariants builds.
func WithTestGCVerify(o *Options) *Options {
	return withHooks(o, func(h *testHooks) { h.gcVerify = true })
}

// WithTestGCNoConsolidate returns a copy of o with which GC rewrites copy
// every live frame as it is, consolidating no chain (the baseline).
func WithTestGCNoConsolidate(o *Options) *Options {
	return withHooks(o, func(h *testHooks) { h.gcNoConsolidate = true })
}

// WithTestNoCarry returns a copy of o whose writers' consolidations are
// all whole ones, written as bases (tree.Config.Carry off).
func WithTestNoCarry(o *Options) *Options {
	return withHooks(o, func(h *testHooks) { h.noCarry = true })
}

// WithTestNoShorten returns a copy of o whose evictor never consolidates
// the chain of a page in use (tree.Config.ReadChain 0).
func WithTestNoShorten(o *Options) *Options {
	return withHooks(o, func(h *testHooks) { h.noShorten = true })
}

// WithTestNoEvict returns a copy of o whose background evictor evicts and
// consolidates nothing (cache.Env.NoEvict): the test makes stubs itself.
func WithTestNoEvict(o *Options) *Options {
	return withHooks(o, func(h *testHooks) { h.noEvict = true })
}

// WithTestHotAfter returns a copy of o whose checkpoints take a page as
// hot (its frames stored plain) when its durable head is younger than d;
// d < 0: no page is hot.
func WithTestHotAfter(o *Options, d time.Duration) *Options {
	return withHooks(o, func(h *testHooks) { h.hotAfter = d })
}

// WithTestGCPaused returns a copy of o with which the DB runs no GC round
// until SetTestGCPaused(false).
func WithTestGCPaused(o *Options) *Options {
	return withHooks(o, func(h *testHooks) { h.gcPaused.Store(true) })
}

// SetTestGCPaused pauses or resumes db's GC rounds.
func (db *DB) SetTestGCPaused(paused bool) { db.hooks.gcPaused.Store(paused) }

// SetTestFrameReadHook installs a function db's chain reads call after
// each frame they read, with the page and the frame's address (nil: none).
func (db *DB) SetTestFrameReadHook(f func(pid, addr uint64)) {
	if f == nil {
		db.hooks.frameRead.Store(nil)
		return
	}
	db.hooks.frameRead.Store(&f)
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

// SetTestCutImagesHook installs a function each cut calls with the
// number of before-images it logged before its gate (inGate false), then
// with the number it logged inside it (nil: none). The first call runs
// on the cutting goroutine with no lock held: it may write.
func (db *DB) SetTestCutImagesHook(f func(inGate bool, n int)) {
	if f == nil {
		db.hooks.cutImages.Store(nil)
		return
	}
	db.hooks.cutImages.Store(&f)
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
		if !db.gc.worker.Due() {
			return nil
		}
	}
	return errors.New("bwkv: GC still due after 100 rounds")
}

// GCVictims returns how many data files the GC's policy would take as
// victims now (gc.Choose over the manifest's files).
func GCVictims(db *DB) int {
	files, _, _ := db.man.Files()
	return len(gc.Choose(files, db.gc.policy, nil))
}

// GCVictimsAll returns the number of data files the GC's policy makes
// victims with no round budget: the victims of all the rounds due now.
func GCVictimsAll(db *DB) int {
	files, _, _ := db.man.Files()
	p := db.gc.policy
	p.RoundBytes = math.MaxInt64
	return len(gc.Choose(files, p, nil))
}

// GCFiles returns each data file's live and total frame bytes, from the
// manifest's accounting.
func GCFiles(db *DB) (live, total []int64) {
	files, _, _ := db.man.Files()
	for _, f := range files {
		live, total = append(live, f.Live), append(total, f.Total)
	}
	return live, total
}

// GCDue reports whether a GC round is due.
func GCDue(db *DB) bool { return db.gc.worker.Due() }

// EvictAll evicts every leaf of db it can, as the cache's evictor would
// (a leaf becomes a stub, then is dropped), so that the next touch of a
// key reads its leaf from the data files. It returns the leaves evicted.
func EvictAll(db *DB) int { return db.evictLeaves(true) }

// StubAll turns every clean full leaf of db into a stub (node.Stub) and
// returns how many it turned.
func StubAll(db *DB) int { return db.evictLeaves(false) }

func (db *DB) evictLeaves(drop bool) int {
	n := 0
	for pid := pagetable.PID(1); pid < db.pt.Next(); pid++ {
		for i := 0; i < 3; i++ { // a first call may only clear the reference bit
			r := db.tree.Evict(pid, drop)
			if r == tree.EvictDropped && db.gc.ledger != nil {
				db.gc.ledger.Forget(uint64(pid))
			}
			if r == tree.EvictDropped || r == tree.EvictStubbed && !drop {
				n++
			}
			if r != tree.EvictReferenced && r != tree.EvictLongChain && (r != tree.EvictStubbed || !drop) {
				break
			}
		}
	}
	return n
}

// LedgerChain returns the addresses of the durable chain the GC's ledger
// holds for page pid (nil: none).
func (db *DB) LedgerChain(pid uint64) []uint64 {
	c, ok := db.gc.ledger.Stored(pid)
	if !ok {
		return nil
	}
	out := make([]uint64, len(c))
	for i, e := range c {
		out[i] = e.Addr
	}
	return out
}

// LedgerChainsAgree compares each chain the GC's ledger holds at its
// page's durable head with the chain read from disk (addresses, sizes and
// blob references). It returns how many such chains it compared and the
// first that differs.
func (db *DB) LedgerChainsAgree() (int, error) {
	n := 0
	for pid := pagetable.PID(1); pid < db.pt.Next(); pid++ {
		held, ok := db.gc.ledger.Stored(uint64(pid))
		head, durable := db.man.Page(uint64(pid))
		if !ok || !durable || held.Head() != head {
			continue
		}
		disk, err := db.readChain(pid, head, nil)
		if err != nil {
			return n, err
		}
		if !slices.EqualFunc(held, disk, func(a, b gc.Extent) bool {
			return a.Addr == b.Addr && a.Size == b.Size && slices.Equal(a.Blobs, b.Blobs)
		}) {
			return n, fmt.Errorf("page %d: ledger chain %v, disk chain %v", pid, held, disk)
		}
		n++
	}
	return n, nil
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

// WALJoined is the number of transactions counted among the log's writers
// about to commit (wal.Writer.Join) that have not left.
func WALJoined(db *DB) int64 { return db.wal.Joined() }

// MarkHot records contention on key's hot stripe now (hot.go).
func MarkHot(db *DB, key []byte) { db.markHot(stripeOf(key)) }

// IsHot reports whether key's stripe counts as contended.
func IsHot(db *DB, key []byte) bool { return db.isHot(stripeOf(key)) }

// StripeFree reports whether nobody holds key's stripe.
func StripeFree(db *DB, key []byte) bool {
	s := stripeOf(key)
	if !db.tryStripe(s) {
		return false
	}
	db.releaseStripe(s)
	return true
}

// TryStripe takes key's hot stripe if it is free; ReleaseStripe frees it;
// TakeStripe waits for it as an Update does before Begin.
func TryStripe(db *DB, key []byte) bool  { return db.tryStripe(stripeOf(key)) }
func ReleaseStripe(db *DB, key []byte)   { db.releaseStripe(stripeOf(key)) }
func TakeStripe(db *DB, key []byte) bool { return db.takeStripe(stripeOf(key), nil) }
func StripeSpins() int                   { return stripeSpins }

// YieldOn reports whether a stripe taker of db whose first StripeSpins
// yields took spent goes on yielding instead of blocking.
func YieldOn(db *DB, spent time.Duration) bool { return db.yieldOn(spent) }

// IdleYield is the time per yield below which a durable DB's stripe taker
// stops yielding.
func IdleYield() time.Duration { return idleYield }

// Pause is the backoff wait of Update and the one-op writes.
func Pause(d time.Duration, done <-chan struct{}) bool { return pause(d, done) }

// SetTestStripeSpinHook installs a function a hot-stripe taker calls
// before each of its yields, with the yield's number (nil: none).
func (db *DB) SetTestStripeSpinHook(f func(i int)) {
	if f == nil {
		db.hooks.stripeSpin.Store(nil)
		return
	}
	db.hooks.stripeSpin.Store(&f)
}

// TreeLarge reports whether the tree splits leaves by the small size
// (sizeLeaves: the data far outgrows the cache).
func TreeLarge(db *DB) bool { return db.tree.Large() }

// LeavesLarge is sizeLeaves' rule (leavesLarge).
func LeavesLarge(was bool, live, cache int64) bool { return leavesLarge(was, live, cache) }

// PeekStub searches page pid's durable chain for key as a point access of
// its stub does (through the stub's chain index, or with unindexed the
// whole chain from the stub's head): the newest version's value (found
// false: the chain holds no version of key, or a tombstone) and the frames
// read. The page must be a stub.
func PeekStub(db *DB, pid uint64, key []byte, unindexed bool) (val []byte, found bool, frames int, err error) {
	p := db.pt.Slot(pagetable.PID(pid)).Load()
	if p == nil || p.Stub == nil {
		return nil, false, 0, fmt.Errorf("page %d is not a stub", pid)
	}
	chain := &p.Stub.Chain
	if unindexed || !chain.Indexed() {
		chain = nil
	}
	pk, err := db.peekPage(pagetable.PID(pid), p.Base.Addr, key, chain, 0)
	if err != nil || pk.Disk.Len() == 0 || pk.Disk.FlagsAt(0)&delta.Tombstone != 0 {
		return nil, false, pk.Frames, err
	}
	return pk.Disk.ValueAt(0), true, pk.Frames, nil
}

// PeekStubVersions is PeekStub returning every version of key the peek
// found, newest first (nil: a tombstone); with settle, the peek may end
// at the first version below the database's lowest unretired txid.
func PeekStubVersions(db *DB, pid uint64, key []byte, unindexed, settle bool) (vals [][]byte, frames int, err error) {
	p := db.pt.Slot(pagetable.PID(pid)).Load()
	if p == nil || p.Stub == nil {
		return nil, 0, fmt.Errorf("page %d is not a stub", pid)
	}
	chain := &p.Stub.Chain
	if unindexed || !chain.Indexed() {
		chain = nil
	}
	var low uint64
	if settle {
		low = db.mv.Low()
	}
	pk, err := db.peekPage(pagetable.PID(pid), p.Base.Addr, key, chain, low)
	if err != nil {
		return nil, pk.Frames, err
	}
	for i := range pk.Disk.Len() {
		var v []byte
		if pk.Disk.FlagsAt(i)&delta.Tombstone == 0 {
			v = pk.Disk.ValueAt(i)
		}
		vals = append(vals, v)
	}
	return vals, pk.Frames, nil
}

// TreeMissedBytes returns the bytes the tree's loads and peeks have read
// from disk (tree.Tree.MissedBytes).
func TreeMissedBytes(db *DB) int64 { return db.tree.MissedBytes() }

// StubIndexed reports how many delta frames page pid's stub indexes (-1:
// not a stub or no index).
func StubIndexed(db *DB, pid uint64) int {
	p := db.pt.Slot(pagetable.PID(pid)).Load()
	if p == nil || p.Stub == nil || !p.Stub.Chain.Indexed() {
		return -1
	}
	return len(p.Stub.Chain.Frames)
}

// PeekRereads counts the indexed peeks read again from the chain's head.
func PeekRereads(db *DB) uint64 { return db.stats.peekRereads.Load() }

// SetTestPeekMutants arms the peek mutants (hooks.go): skip skips the
// frames a chain index names for the key, noReread returns an indexed
// read's error instead of reading the chain again.
func (db *DB) SetTestPeekMutants(skip, noReread bool) {
	db.hooks.peekSkipIndexed.Store(skip)
	db.hooks.peekNoReread.Store(noReread)
}

// SetTestCheckListingHook installs a function Check calls between its
// first look at the manifest's data files and its listing of the
// directory (nil: none).
func (db *DB) SetTestCheckListingHook(f func()) {
	if f == nil {
		db.hooks.checkListing.Store(nil)
		return
	}
	db.hooks.checkListing.Store(&f)
}

// LedgerWalks returns how many page chains the GC's ledger has read from
// disk because it did not hold them (gc.Ledger.Walks).
func (db *DB) LedgerWalks() uint64 { return db.gc.ledger.Walks() }

// TxnID returns tx's txid.
func TxnID(tx *Txn) uint64 { return tx.st.ID }

// LowestUnretired returns the lowest txid not yet retired (mvcc.Manager.Low).
func LowestUnretired(db *DB) uint64 { return db.mv.Low() }

// SetTestNoAhead turns a forward scan's cache warming for its next leaf
// off (or back on): the baseline it is measured against.
func (db *DB) SetTestNoAhead(off bool) { db.hooks.noAhead.Store(off) }

// CarriedConsolidations counts the consolidations that made a carried
// base (tree.Stats.Carried).
func CarriedConsolidations(db *DB) uint64 { return db.tree.Stats().Carried }
