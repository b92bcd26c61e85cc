package cache

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/generation"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
	"github.com/bwkv/bwkv/tree"
)

// fakePage is one leaf of fakeEngine.
type fakePage struct {
	bytes      int64 // resident bytes (0: dropped)
	stub       bool
	dirty      bool
	referenced bool
	long       bool // a chain Shorten consolidates (halving the page)
}

// fakeEngine implements Pages and Tree over a map of pages: a full leaf
// of fullBytes becomes a stub of stubBytes, a stub is dropped. Its ring
// words are a real table's.
type fakeEngine struct {
	mu         sync.Mutex
	pages      map[pagetable.PID]*fakePage
	pt         *pagetable.Table[node.Page]
	inner      int64
	stubBytes  int64
	compacted  []pagetable.PID
	shortened  []pagetable.PID
	compactErr error
	forgotten  []pagetable.PID
	kicks      int
	bgErrs     int
	missed     int64 // MissedBytes
}

const (
	fullBytes = 100
	stubBytes = 10
)

// newFake returns n full leaves, PIDs 1 to n.
func newFake(n int) *fakeEngine {
	f := &fakeEngine{pages: map[pagetable.PID]*fakePage{}, pt: pagetable.New[node.Page](1)}
	for pid := pagetable.PID(1); pid <= pagetable.PID(n); pid++ {
		f.pages[pid] = &fakePage{bytes: fullBytes}
		f.pt.Slot(pid)
	}
	return f
}

// newCache returns the cache of env with f's pages as candidates, in PID
// order (as if each was just loaded).
func (f *fakeEngine) newCache(env Env) *Cache {
	c := New(env)
	for pid := pagetable.PID(1); pid <= pagetable.PID(len(f.pages)); pid++ {
		c.evictQ.offer(f, pid)
	}
	return c
}

func (f *fakeEngine) Rings(pid pagetable.PID) *atomic.Uint32 { return f.pt.Rings(pid) }

func (f *fakeEngine) Resident() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.inner
	for _, p := range f.pages {
		n += p.bytes
	}
	return n
}

func (f *fakeEngine) InnerResident() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inner
}

func (f *fakeEngine) Evict(pid pagetable.PID, dropStubs bool) tree.Evicted {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pages[pid]
	switch {
	case p == nil || p.bytes == 0 || p.dirty:
		return tree.EvictSkipped
	case p.referenced:
		p.referenced = false
		if p.long && !p.stub {
			return tree.EvictLongChain
		}
		return tree.EvictReferenced
	case p.stub && !dropStubs:
		return tree.EvictSkipped
	case p.stub:
		p.bytes = 0
		f.stubBytes -= stubBytes
		return tree.EvictDropped
	}
	p.stub, p.bytes = true, stubBytes
	f.stubBytes += stubBytes
	return tree.EvictStubbed
}

func (f *fakeEngine) Compact(pid pagetable.PID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.compacted = append(f.compacted, pid)
	return f.compactErr
}

// Shorten consolidates a long page: half its bytes were superseded
// versions, and the new base is dirty until a publish.
func (f *fakeEngine) Shorten(pid pagetable.PID) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shortened = append(f.shortened, pid)
	if p := f.pages[pid]; p != nil && p.long {
		p.long, p.dirty, p.bytes = false, true, p.bytes/2
	}
	return nil
}

func (f *fakeEngine) MissedBytes() int64 { return f.missed }

func (f *fakeEngine) StubBytes() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stubBytes
}

// env returns an Env over f and gens with the given budget.
func (f *fakeEngine) env(cacheBytes int64, gens *generation.Manager) Env {
	return Env{
		CacheBytes: cacheBytes,
		Recovering: func() bool { return false },
		Pages:      f,
		Tree:       f,
		Gens:       gens,
		Forget: func(pid pagetable.PID) {
			f.mu.Lock()
			f.forgotten = append(f.forgotten, pid)
			f.mu.Unlock()
		},
		KickCheckpoint: func() {
			f.mu.Lock()
			f.kicks++
			f.mu.Unlock()
		},
		BackgroundError: func(error) {
			f.mu.Lock()
			f.bgErrs++
			f.mu.Unlock()
		},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// dirtyHot accounts frames of bytes in gens' hot generation, as a write
// would.
func dirtyHot(gens *generation.Manager, bytes int) {
	pt := pagetable.New[node.Page](1)
	pid := pt.Alloc()
	gens.Touch(pt.Slot(pid), pid, nil, 1, bytes, false)
}

// runUntil runs c's evictor, calls c.Check (as each write and load
// does) until done (or fails after 5 s) and stops the evictor.
func runUntil(t *testing.T, c *Cache, done func() bool) {
	t.Helper()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.Run(stop)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for c.Check(); !done(); c.Check() {
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatal("the evictor did not finish")
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
}

func TestHardBase(t *testing.T) {
	if got := HardBase(0); got != HardFloor {
		t.Errorf("HardBase(0) = %d, want %d", got, HardFloor)
	}
	if got, want := HardBase(1<<20), int64(2<<20+4<<20); got != want {
		t.Errorf("HardBase(1 MiB) = %d, want %d", got, want)
	}
}

// TestBudget checks the budget math: unpublished frames (hot and sealed)
// raise the budget and the hard limit, and inner pages do not count.
func TestBudget(t *testing.T) {
	f := newFake(10) // 1000 bytes of leaves
	f.inner = 5000
	gens := generation.NewManager(1, 0)
	c := f.newCache(f.env(900, gens))
	if c.leafResident() != 1000 || !c.overBudget() {
		t.Fatalf("leafResident %d, overBudget %v: want 1000, true", c.leafResident(), c.overBudget())
	}
	dirtyHot(gens, 60)
	if g := gens.Cut(func() uint64 { return 0 }); g == nil {
		t.Fatal("cut failed")
	}
	dirtyHot(gens, 50)
	if c.unpublished() != 110 || c.budget() != 1010 || c.overBudget() {
		t.Errorf("unpublished %d, budget %d, overBudget %v: want 110, 1010, false", c.unpublished(), c.budget(), c.overBudget())
	}
	if got, want := c.hardLimit(), HardBase(900)+110; got != want {
		t.Errorf("hardLimit %d, want %d", got, want)
	}
}

// TestAdmit: while the cache fills every page is admitted; once it is
// full, a stub's page only after two reuse distances in a row (bytes of
// pages read from disk between two misses of it) under CacheBytes, not
// after one, which a spread-out load gives by chance; a leaf with nothing
// in memory never.
func TestAdmit(t *testing.T) {
	f := newFake(10) // 1000 bytes of leaves
	c := f.newCache(f.env(1000, generation.NewManager(1, 0)))
	s := node.DiskStub(&delta.Base{}, 1, 0, node.DiskChain{}).Stub
	for pid := pagetable.PID(1); pid <= 3; pid++ {
		f.pages[pid].bytes = 0 // 700 resident, under 1000 less a quarter: filling
	}
	if !c.Admit(s) || !c.Admit(nil) {
		t.Fatal("a filling cache refuses a page")
	}
	f.pages[1].bytes = fullBytes // 800 resident: full
	if c.Admit(nil) {
		t.Fatal("a full cache admits a leaf with nothing in memory")
	}
	for i, step := range []struct {
		clock int64
		want  bool
	}{
		{0, false},     // no miss before
		{500, false},   // one short distance (500)
		{900, true},    // two in a row (500, 400)
		{950, true},    // and on
		{5000, false},  // a long one
		{5100, false},  // one short after it
		{5200, true},   // two
		{10000, false}, // long again
	} {
		f.missed = step.clock
		if got := c.Admit(s); got != step.want {
			t.Fatalf("miss %d at clock %d: admit %v, want %v", i, step.clock, got, step.want)
		}
	}
}

// TestMustWait checks the hard limit: writers wait only while a publish
// can clean something, and then the checkpointer is asked for a cut.
func TestMustWait(t *testing.T) {
	f := newFake(1)
	gens := generation.NewManager(1, 0)
	c := f.newCache(f.env(0, gens))
	f.inner = HardBase(0) * 2 // inner pages never count
	if c.MustWait() {
		t.Fatal("MustWait under the hard limit")
	}
	f.pages[1].bytes = HardBase(0) + 1
	if c.MustWait() || c.TakePressure() || f.kicks != 0 {
		t.Fatal("MustWait with nothing to publish")
	}
	dirtyHot(gens, 1)
	if c.MustWait() {
		t.Fatal("MustWait at the hard limit (unpublished frames raise it)")
	}
	f.pages[1].bytes = HardBase(0) + 2
	if !c.MustWait() || f.kicks != 1 {
		t.Fatalf("MustWait over the hard limit: kicks %d", f.kicks)
	}
	if !c.TakePressure() || c.TakePressure() {
		t.Error("TakePressure did not report and clear the pressure")
	}
}

// TestEvictorLoop runs the evictor against the fake: it stubs leaves until
// it is under the budget less 10%, gives a referenced page a second
// chance, and drops stubs only while they hold a quarter of the budget.
func TestEvictorLoop(t *testing.T) {
	f := newFake(20) // 2000 bytes
	f.pages[1].referenced = true
	gens := generation.NewManager(1, 0)
	c := f.newCache(f.env(1000, gens))
	// Target 900: 13 stubs (90 bytes saved each) bring 2000 to 830.
	runUntil(t, c, func() bool { return c.leafResident() <= 900 })
	if got := c.Stats().Evictions; got != 13 {
		t.Errorf("evictions %d, want 13", got)
	}
	if f.pages[1].stub || f.pages[1].referenced {
		t.Error("the referenced page was not given a second chance")
	}
	if f.kicks != 0 || c.TakePressure() {
		t.Error("pressure without dirty pages")
	}

	// A budget of 30 (target 27): the first pass stubs all four pages
	// (40 bytes); stubs hold over a quarter of the budget, so the next
	// pass drops two of them (and the ledger forgets them).
	f2 := newFake(4)
	c2 := f2.newCache(f2.env(30, gens))
	runUntil(t, c2, func() bool { return c2.leafResident() <= 27 })
	if got := c2.Stats().Evictions; got != 6 || c2.leafResident() != 20 || len(f2.forgotten) != 2 {
		t.Errorf("evictions %d, resident %d, forgotten %v: want 6, 20, two pages", got, c2.leafResident(), f2.forgotten)
	}
}

// TestEvictorShortens: over the budget, a page in steady use whose chain
// is long (the tree reports EvictLongChain) is consolidated (Shorten), not
// given a plain second chance nor evicted; an unread long page is evicted
// as usual.
func TestEvictorShortens(t *testing.T) {
	f := newFake(10) // 1000 bytes
	for pid := pagetable.PID(1); pid <= 4; pid++ {
		f.pages[pid].referenced, f.pages[pid].long = true, true
	}
	f.pages[5].long = true // long but not read: evicted
	gens := generation.NewManager(1, 0)
	c := f.newCache(f.env(800, gens))
	// Target 720: four shortened pages free 200 bytes, one stub 90.
	runUntil(t, c, func() bool { return c.leafResident() <= 720 })
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.shortened) != 4 || c.Stats().Shortened != 4 {
		t.Fatalf("shortened %v (counted %d), want pages 1-4", f.shortened, c.Stats().Shortened)
	}
	for pid := pagetable.PID(1); pid <= 4; pid++ {
		if p := f.pages[pid]; p.stub || p.bytes != fullBytes/2 {
			t.Errorf("page %d: stub %v, %d bytes: want consolidated in memory", pid, p.stub, p.bytes)
		}
	}
	if !f.pages[5].stub || c.Stats().Evictions != 1 {
		t.Errorf("the unread long page: stub %v, evictions %d: want it evicted (1)", f.pages[5].stub, c.Stats().Evictions)
	}
}

// TestEvictorPressure: when what is left over the budget is dirty, the
// evictor asks the checkpointer for a cut.
func TestEvictorPressure(t *testing.T) {
	f := newFake(20)
	for _, p := range f.pages {
		p.dirty = true
	}
	gens := generation.NewManager(1, 0)
	dirtyHot(gens, 1)
	c := f.newCache(f.env(1000, gens))
	runUntil(t, c, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.kicks > 0
	})
	if !c.TakePressure() || c.Stats().Evictions != 0 {
		t.Errorf("pressure not set, or dirty pages evicted (%d)", c.Stats().Evictions)
	}
}

// TestCompaction: WantCompact wakes the worker, which consolidates and
// reports a failure as a background error.
func TestCompaction(t *testing.T) {
	f := newFake(1)
	f.compactErr = errors.New("boom")
	c := f.newCache(f.env(1<<20, generation.NewManager(1, 0)))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.Run(stop)
	}()
	c.WantCompact(1)
	deadline := time.Now().Add(5 * time.Second)
	for c.Stats().Compactions == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if c.Stats().Compactions != 1 || len(f.compacted) != 1 || f.bgErrs != 1 {
		t.Errorf("compactions %d, compacted %v, background errors %d", c.Stats().Compactions, f.compacted, f.bgErrs)
	}
}

// TestReadOnly: without a goroutine, Check evicts a bounded batch itself,
// except during recovery, and WantCompact queues nothing.
func TestReadOnly(t *testing.T) {
	f := newFake(100) // 10000 bytes
	recovering := true
	env := f.env(1000, generation.NewManager(1, 0))
	env.ReadOnly = true
	env.Recovering = func() bool { return recovering }
	c := f.newCache(env)
	c.WantCompact(1)
	if c.compactQ.len() != 0 {
		t.Error("read-only WantCompact queued a request")
	}
	c.Check()
	if c.Stats().Evictions != 0 {
		t.Fatal("evicted during recovery")
	}
	recovering = false
	c.Check()
	if got := c.Stats().Evictions; got != 64 {
		t.Errorf("read-only Check evicted %d, want a batch of 64", got)
	}
}

// TestCandidateRing: an offer de-duplicates, take is FIFO, and a PID can
// be offered again once taken; the two rings' bits are independent. 1M
// offers over 100k PIDs with interleaved takes must finish fast: a hang
// detector (a per-offer scan of the ring would take minutes), not a
// benchmark.
func TestCandidateRing(t *testing.T) {
	pt := pagetable.New[node.Page](1)
	for p := pagetable.PID(1); p <= 100_000; p++ {
		pt.Slot(p) // offers take mapped PIDs only
	}
	r, cr := ring{bit: inEvict}, ring{bit: inCompact}
	for _, p := range []pagetable.PID{5, 3, 5, 9, 3} {
		r.offer(pt, p)
	}
	cr.offer(pt, 5)
	if n, cn := r.len(), cr.len(); n != 3 || cn != 1 {
		t.Fatalf("candidates %d, compaction requests %d; want 3, 1", n, cn)
	}
	r.offer(pt, 1<<20) // never mapped: ignored
	for _, want := range []pagetable.PID{5, 3, 9} {
		if got, ok := r.take(pt); !ok || got != want {
			t.Fatalf("take %d %v, want %d", got, ok, want)
		}
	}
	if _, ok := r.take(pt); ok {
		t.Fatal("take from an empty ring")
	}
	if got := pt.Rings(5).Load(); got != inCompact {
		t.Fatalf("PID 5's ring word %b after its eviction take, want %b", got, inCompact)
	}
	r.offer(pt, 5)
	if got, ok := r.take(pt); !ok || got != 5 {
		t.Fatalf("re-offered PID: %d %v", got, ok)
	}
	start := time.Now()
	for i := 0; i < 1_000_000; i++ {
		r.offer(pt, pagetable.PID(1+i%100_000))
		if i%3 == 0 {
			r.take(pt)
		}
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("1M offers took %v: a per-offer step is not O(1)", d)
	}
	if n := r.len(); n > 100_000 {
		t.Fatalf("%d candidates for 100k PIDs: duplicates", n)
	}
}
