package bwkv_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/bwkv/bwkv"
)

// The model-based randomized test (docs/crash-safety.md, layer 1). Round counts come
// from BWKV_MODEL_SEEDS and BWKV_MODEL_OPS (CI defaults below); -model.seed
// replays one seed.
var modelSeed = flag.Uint64("model.seed", 0, "run only this model-test seed")

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

type kv = map[string]string

func cloneKV(m kv) kv {
	c := make(kv, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

type modelTxn struct {
	tx     *bwkv.Txn
	view   kv              // committed state at Begin + own writes
	writes map[string]bool // keys written (installed versions)
	own    kv              // own final values ("" with del marker below)
	dels   map[string]bool
	start  int // commit counter at Begin
	doomed bool
}

type modelSnap struct {
	s    *bwkv.Snapshot
	view kv
}

type model struct {
	t         *testing.T
	rng       *rand.Rand
	db        *bwkv.DB
	dir       string
	opts      bwkv.Options // what the DB was opened with (reopen uses them)
	reopens   int
	cur       kv
	commitSeq int
	lastWrite map[string]int // key -> commit counter of its last committed write
	txns      []*modelTxn
	snaps     []*modelSnap
	nkeys     int
	// big, if set (a small BlobThreshold), is the threshold a third of
	// the values pass, so they go to blob frames.
	big int
}

func (m *model) key() []byte {
	return []byte(fmt.Sprintf("key%04d", m.rng.IntN(m.nkeys)))
}

func (m *model) value() []byte {
	n := m.rng.IntN(40)
	if m.rng.IntN(20) == 0 {
		n = 0
	}
	if m.big > 0 && m.rng.IntN(3) == 0 {
		n = m.big + m.rng.IntN(40)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + m.rng.IntN(26))
	}
	return b
}

func (m *model) fail(format string, a ...any) {
	m.t.Helper()
	m.t.Fatalf(format, a...)
}

// conflicts reports whether a write of key by mt conflicts in the model:
// another live txn has a version of it, or it was committed after mt began.
func (m *model) conflicts(mt *modelTxn, key string) bool {
	if m.lastWrite[key] > mt.start {
		return true
	}
	for _, o := range m.txns {
		if o != mt && o.writes[key] {
			return true
		}
	}
	return false
}

func (m *model) txnWrite(mt *modelTxn, del bool) {
	k := m.key()
	v := m.value()
	var err error
	if del {
		err = mt.tx.Delete(k)
	} else {
		err = mt.tx.Put(k, v)
	}
	if mt.doomed {
		if !errors.Is(err, bwkv.ErrConflict) {
			m.fail("write on doomed txn: %v", err)
		}
		return
	}
	if m.conflicts(mt, string(k)) {
		if !errors.Is(err, bwkv.ErrConflict) {
			m.fail("write %q: got %v, want ErrConflict", k, err)
		}
		mt.doomed = true
		return
	}
	if err != nil {
		m.fail("write %q: %v", k, err)
	}
	mt.writes[string(k)] = true
	if del {
		delete(mt.view, string(k))
		mt.dels[string(k)] = true
		delete(mt.own, string(k))
	} else {
		mt.view[string(k)] = string(v)
		mt.own[string(k)] = string(v)
		delete(mt.dels, string(k))
	}
}

func (m *model) checkGet(name string, get func([]byte) ([]byte, error), view kv) {
	k := m.key()
	v, err := get(k)
	want, ok := view[string(k)]
	if !ok {
		if !errors.Is(err, bwkv.ErrNotFound) {
			m.fail("%s get %q = %q, %v; want not found\n%s", name, k, v, err, m.db.DescribeKey(k))
		}
		return
	}
	if err != nil || string(v) != want {
		m.fail("%s get %q = %q, %v; want %q\n%s", name, k, v, err, want, m.db.DescribeKey(k))
	}
}

func (m *model) checkScan(name string, newIter func(*bwkv.IterOptions) (*bwkv.Iter, error), view kv) {
	var o *bwkv.IterOptions
	var lo, hi []byte
	if m.rng.IntN(2) == 0 {
		lo, hi = m.key(), m.key()
		if m.rng.IntN(3) == 0 {
			lo = nil
		}
		if m.rng.IntN(3) == 0 {
			hi = nil
		}
		o = &bwkv.IterOptions{LowerBound: lo, UpperBound: hi}
	}
	var want []string
	for k := range view {
		if (lo == nil || k >= string(lo)) && (hi == nil || k < string(hi)) {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	it, err := newIter(o)
	if err != nil {
		m.fail("%s iter: %v", name, err)
	}
	defer it.Close()
	var got []string
	switch m.rng.IntN(4) {
	case 0: // forward
		for ok := it.First(); ok; ok = it.Next() {
			got = append(got, string(it.Key()))
			if string(it.Value()) != view[string(it.Key())] {
				m.fail("%s scan %q = %q want %q\n%s", name, it.Key(), it.Value(), view[string(it.Key())], m.db.DescribeKey(it.Key()))
			}
		}
	case 1: // reverse
		for ok := it.Last(); ok; ok = it.Prev() {
			got = append(got, string(it.Key()))
		}
		slices.Reverse(got)
	case 2: // SeekGE, up to five Next, then a Prev
		sk := m.key()
		i, _ := slices.BinarySearch(want, string(sk))
		ok := it.SeekGE(sk)
		for n, steps := 0, m.rng.IntN(6); ; n++ {
			if i >= len(want) {
				if ok {
					m.fail("%s SeekGE(%q)+%d at %q, want end", name, sk, n, it.Key())
				}
				// Past the end, Prev turns back to the last key.
				if ok = it.Prev(); len(want) == 0 {
					if ok {
						m.fail("%s Prev past the end of nothing = %q, want start", name, it.Key())
					}
				} else if !ok || string(it.Key()) != want[len(want)-1] {
					m.fail("%s Prev past the end after SeekGE(%q)+%d = %v %q, want %q", name, sk, n, ok, it.Key(), want[len(want)-1])
				}
				return
			}
			if !ok || string(it.Key()) != want[i] {
				m.fail("%s SeekGE(%q)+%d = %v %q, want %q", name, sk, n, ok, it.Key(), want[i])
			}
			if n == steps {
				break
			}
			ok = it.Next()
			i++
		}
		if ok = it.Prev(); i == 0 {
			if ok {
				m.fail("%s Prev from the first key %q = %q, want start", name, want[0], it.Key())
			}
		} else if !ok || string(it.Key()) != want[i-1] {
			m.fail("%s Prev after SeekGE(%q) and Next = %v %q, want %q", name, sk, ok, it.Key(), want[i-1])
		}
		return
	case 3: // SeekLT, up to five Prev, then a Next
		sk := m.key()
		i, _ := slices.BinarySearch(want, string(sk))
		i--
		ok := it.SeekLT(sk)
		for n, steps := 0, m.rng.IntN(6); ; n++ {
			if i < 0 {
				if ok {
					m.fail("%s SeekLT(%q)-%d at %q, want start", name, sk, n, it.Key())
				}
				// Before the start, Next turns back to the first key.
				if ok = it.Next(); len(want) == 0 {
					if ok {
						m.fail("%s Next before the start of nothing = %q, want end", name, it.Key())
					}
				} else if !ok || string(it.Key()) != want[0] {
					m.fail("%s Next before the start after SeekLT(%q)-%d = %v %q, want %q", name, sk, n, ok, it.Key(), want[0])
				}
				return
			}
			if !ok || string(it.Key()) != want[i] {
				m.fail("%s SeekLT(%q)-%d = %v %q, want %q", name, sk, n, ok, it.Key(), want[i])
			}
			if n == steps {
				break
			}
			ok = it.Prev()
			i--
		}
		if ok = it.Next(); i == len(want)-1 {
			if ok {
				m.fail("%s Next from the last key %q = %q, want end", name, want[i], it.Key())
			}
		} else if !ok || string(it.Key()) != want[i+1] {
			m.fail("%s Next after SeekLT(%q) and Prev = %v %q, want %q", name, sk, ok, it.Key(), want[i+1])
		}
		return
	}
	if it.Error() != nil {
		m.fail("%s scan error: %v", name, it.Error())
	}
	if !slices.Equal(got, want) {
		m.fail("%s scan [%q,%q) = %q, want %q", name, lo, hi, got, want)
	}
}

func (m *model) commit(i int) {
	mt := m.txns[i]
	m.txns = slices.Delete(m.txns, i, i+1)
	err := mt.tx.Commit()
	if mt.doomed {
		if !errors.Is(err, bwkv.ErrConflict) {
			m.fail("commit of doomed txn: %v", err)
		}
		return
	}
	if err != nil {
		m.fail("commit: %v", err)
	}
	if len(mt.writes) == 0 {
		return
	}
	m.commitSeq++
	for k := range mt.writes {
		m.lastWrite[k] = m.commitSeq
		if mt.dels[k] {
			delete(m.cur, k)
		} else if v, ok := mt.own[k]; ok {
			m.cur[k] = v
		}
	}
}

func (m *model) step() {
	switch r := m.rng.IntN(100); {
	case r < 15: // one-op put
		if len(m.txns) > 0 {
			// Avoid a blocked key: a one-op put retries conflicts, so
			// only use keys no open txn holds.
			k := m.key()
			for _, o := range m.txns {
				if o.writes[string(k)] {
					return
				}
			}
			v := m.value()
			if err := m.db.Put(k, v); err != nil {
				m.fail("put: %v", err)
			}
			m.commitSeq++
			m.cur[string(k)] = string(v)
			m.lastWrite[string(k)] = m.commitSeq
			return
		}
		k, v := m.key(), m.value()
		if err := m.db.Put(k, v); err != nil {
			m.fail("put: %v", err)
		}
		m.commitSeq++
		m.cur[string(k)] = string(v)
		m.lastWrite[string(k)] = m.commitSeq
	case r < 20: // one-op delete
		k := m.key()
		for _, o := range m.txns {
			if o.writes[string(k)] {
				return
			}
		}
		if err := m.db.Delete(k); err != nil {
			m.fail("delete: %v", err)
		}
		m.commitSeq++
		delete(m.cur, string(k))
		m.lastWrite[string(k)] = m.commitSeq
	case r < 28:
		m.checkGet("db", m.db.Get, m.cur)
	case r < 32:
		if len(m.txns) < 4 {
			tx, err := m.db.Begin()
			if err != nil {
				m.fail("begin: %v", err)
			}
			m.txns = append(m.txns, &modelTxn{tx: tx, view: cloneKV(m.cur), writes: map[string]bool{},
				own: kv{}, dels: map[string]bool{}, start: m.commitSeq})
		}
	case r < 50:
		if len(m.txns) > 0 {
			m.txnWrite(m.txns[m.rng.IntN(len(m.txns))], m.rng.IntN(4) == 0)
		}
	case r < 56:
		if len(m.txns) > 0 {
			mt := m.txns[m.rng.IntN(len(m.txns))]
			if mt.doomed {
				return
			}
			m.checkGet("txn", mt.tx.Get, mt.view)
		}
	case r < 60:
		if len(m.txns) > 0 {
			mt := m.txns[m.rng.IntN(len(m.txns))]
			if mt.doomed {
				return
			}
			m.checkScan("txn", mt.tx.NewIter, mt.view)
		}
	case r < 66:
		if len(m.txns) > 0 {
			m.commit(m.rng.IntN(len(m.txns)))
		}
	case r < 70:
		if len(m.txns) > 0 {
			i := m.rng.IntN(len(m.txns))
			mt := m.txns[i]
			m.txns = slices.Delete(m.txns, i, i+1)
			if err := mt.tx.Rollback(); err != nil {
				m.fail("rollback: %v", err)
			}
		}
	case r < 74:
		if len(m.snaps) < 4 {
			s, err := m.db.NewSnapshot()
			if err != nil {
				m.fail("snapshot: %v", err)
			}
			m.snaps = append(m.snaps, &modelSnap{s, cloneKV(m.cur)})
		}
	case r < 77:
		if len(m.snaps) > 0 {
			i := m.rng.IntN(len(m.snaps))
			if err := m.snaps[i].s.Close(); err != nil {
				m.fail("snapshot close: %v", err)
			}
			m.snaps = slices.Delete(m.snaps, i, i+1)
		}
	case r < 85:
		if len(m.snaps) > 0 {
			ms := m.snaps[m.rng.IntN(len(m.snaps))]
			m.checkGet("snapshot", ms.s.Get, ms.view)
		}
	case r < 93:
		if len(m.snaps) > 0 {
			ms := m.snaps[m.rng.IntN(len(m.snaps))]
			m.checkScan("snapshot", ms.s.NewIter, ms.view)
		} else {
			s, _ := m.db.NewSnapshot()
			m.checkScan("db", s.NewIter, m.cur)
			s.Close()
		}
	case r < 94:
		if err := m.db.Checkpoint(); err != nil {
			m.fail("checkpoint: %v", err)
		}
	case r < 95:
		// Checkpoints and GC rounds until none is due.
		if err := bwkv.CollectGarbage(m.db); err != nil {
			m.fail("gc: %v", err)
		}
	case r < 96 && m.rng.IntN(4) == 0:
		m.reopen()
	default:
		if err := m.db.Check(context.Background()); err != nil {
			m.fail("check: %v", err)
		}
	}
}

// reopen closes the DB with its txns and snapshots open and opens it
// again: Close rolls the open txns back (the model drops them: none
// committed), the handles left answer ErrClosed, and the reopened DB
// holds every committed write, whatever the durability mode (a clean
// Close loses nothing).
func (m *model) reopen() {
	m.reopens++
	m.checkStats()
	if err := m.db.Close(); err != nil {
		m.fail("close before reopen %d: %v", m.reopens, err)
	}
	k := m.key()
	for _, mt := range m.txns {
		if _, err := mt.tx.Get(k); !errors.Is(err, bwkv.ErrClosed) {
			m.fail("txn get after close: %v, want ErrClosed", err)
		}
		if err := mt.tx.Commit(); !errors.Is(err, bwkv.ErrClosed) {
			m.fail("txn commit after close: %v, want ErrClosed", err)
		}
	}
	for _, ms := range m.snaps {
		if _, err := ms.s.Get(k); !errors.Is(err, bwkv.ErrClosed) {
			m.fail("snapshot get after close: %v, want ErrClosed", err)
		}
	}
	m.txns, m.snaps = nil, nil
	o := m.opts
	db, err := bwkv.Open(m.dir, &o)
	if err != nil {
		m.fail("reopen %d: %v", m.reopens, err)
	}
	m.db = db
	s, err := db.NewSnapshot()
	if err != nil {
		m.fail("snapshot after reopen %d: %v", m.reopens, err)
	}
	m.checkScan("reopened", s.NewIter, m.cur)
	s.Close()
}

// checkStats fails on background trouble the DB counted since it opened.
// Background errors include a GC self-check failure (TestMain). A chain
// the GC could not merge, or one the junk accounting could not read or
// match, is no error for the user (frames are copied, junk uncounted),
// but with no fault injected only a bug makes one.
func (m *model) checkStats() {
	m.t.Helper()
	if st := m.db.Stats(); st.BackgroundErrors != 0 || st.GC.ConsolidateErrors != 0 || st.GC.AccountingUnread != 0 || st.GC.AccountingMismatched != 0 {
		m.fail("%d background errors, %d chains the GC could not merge, %d unread and %d mismatched chains in the junk accounting",
			st.BackgroundErrors, st.GC.ConsolidateErrors, st.GC.AccountingUnread, st.GC.AccountingMismatched)
	}
}

func runModel(t *testing.T, seed uint64, ops int, o bwkv.Options) {
	m := &model{
		t:         t,
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		cur:       kv{},
		lastWrite: map[string]int{},
		nkeys:     50 + int(seed%4)*100,
	}
	if o.BlobThreshold > 0 && o.BlobThreshold <= 256 {
		m.big = o.BlobThreshold
	}
	o.Durability = bwkv.DurabilityRelaxed
	// The model interleaves its txns on one goroutine: a write meeting
	// another open txn's version could only wait out its timeout, so it
	// fails at once (the waiting itself is tested in wait_test.go).
	o.LockTimeout = -1
	m.dir, m.opts = t.TempDir(), o
	db, err := bwkv.Open(m.dir, &o)
	if err != nil {
		t.Fatal(err)
	}
	m.db = db
	defer func() { m.db.Close() }()
	for i := 0; i < ops; i++ {
		m.step()
	}
	db = m.db
	for len(m.txns) > 0 {
		m.commit(0)
	}
	for _, s := range m.snaps {
		s.s.Close()
	}
	s, _ := db.NewSnapshot()
	m.checkScan("final", s.NewIter, m.cur)
	s.Close()
	if err := db.Check(context.Background()); err != nil {
		t.Fatalf("final check: %v", err)
	}
	m.checkStats()
}

var modelOptionSets = []struct {
	name string
	o    bwkv.Options
}{
	{"default", bwkv.Options{}},
	{"tiny-pages", bwkv.Options{PageSplitEntries: 4, DeltaChainMax: 1}},
	{"small-pages", bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 2}},
	// Every clean leaf is evicted as soon as the evictor runs, and cuts
	// come every few writes: reads keep reloading pages from data files.
	{"tiny-cache", bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 2, CheckpointBytes: 4096, CacheBytes: 1}},
	// Eager GC: tiny checkpoints, and every file not almost fully live
	// is rewritten after each publish.
	{"eager-gc", bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 2, CheckpointBytes: 8 << 10,
		DataFileBytes: 8 << 10, GCLiveRatio: 0.95, GCSpaceAmp: 1}},
	// Compressed frames read back through eviction (S2) and through GC
	// copies (zstd).
	{"s2-tiny-cache", bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 2, CheckpointBytes: 4096, CacheBytes: 1,
		Compression: bwkv.CompressionS2}},
	{"zstd-eager-gc", bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 2, CheckpointBytes: 8 << 10,
		DataFileBytes: 8 << 10, GCLiveRatio: 0.95, GCSpaceAmp: 1, Compression: bwkv.CompressionZstd}},
	// Tiny log segments: the log rotates every few transactions, cuts
	// recycle segments behind them, and each reopen replays across many.
	{"tiny-wal", bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 2, CheckpointBytes: 8 << 10,
		MaxKeySize: 16, MaxValueSize: 256, WALSegmentBytes: 4 << 10}},
	// Blob frames (a third of the values pass the threshold) read back
	// through eviction, reused by consolidations and moved by GC copies.
	{"blobs-eager-gc-tiny-cache", bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 2, CheckpointBytes: 8 << 10, CacheBytes: 1,
		DataFileBytes: 8 << 10, GCLiveRatio: 0.95, GCSpaceAmp: 1, BlobThreshold: 64}},
}

func TestModel(t *testing.T) {
	seeds := envInt("BWKV_MODEL_SEEDS", modelSeedsDefault)
	ops := envInt("BWKV_MODEL_OPS", 2000)
	if testing.Short() {
		seeds = 20
	}
	for _, set := range modelOptionSets {
		t.Run(set.name, func(t *testing.T) {
			// The sets run side by side: one seed keeps about one core
			// busy, and each set has its own databases.
			t.Parallel()
			if *modelSeed != 0 {
				runModel(t, *modelSeed, ops, set.o)
				return
			}
			n := seeds
			if set.o.BlobThreshold > 0 && raceEnabled && *modelSeed == 0 && os.Getenv("BWKV_MODEL_SEEDS") == "" {
				// The newest set keeps its race-run share small (the
				// run without the detector has the full count).
				n = min(n, 10)
				if testing.Short() {
					n = 6
				}
			}
			for s := uint64(1); s <= uint64(n); s++ {
				ok := t.Run(fmt.Sprint(s), func(t *testing.T) {
					runModel(t, s, ops, set.o)
				})
				if !ok {
					t.Fatalf("seed %d failed (replay: go test -run 'TestModel/%s' -model.seed %d)", s, set.name, s)
				}
			}
		})
	}
}
