package pagetable

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

func TestAllocRetireReclaim(t *testing.T) {
	tb := New[int](1)
	a, b, c := tb.Alloc(), tb.Alloc(), tb.Alloc()
	if a != 1 || b != 2 || c != 3 {
		t.Fatalf("fresh PIDs = %d %d %d, want 1 2 3", a, b, c)
	}
	tb.Retire(b, 5)
	if got := tb.Alloc(); got != 4 {
		t.Fatalf("retired PID reused before its epoch was published: got %d", got)
	}
	if n := tb.Reclaim(4); n != 0 {
		t.Fatalf("Reclaim(4) moved %d PIDs retired in epoch 5", n)
	}
	if n := tb.Reclaim(5); n != 1 {
		t.Fatalf("Reclaim(5) moved %d, want 1", n)
	}
	if got := tb.Alloc(); got != b {
		t.Fatalf("Alloc after reclaim = %d, want %d", got, b)
	}
}

func TestSlotStoreLoad(t *testing.T) {
	tb := New[int](1)
	for _, pid := range []PID{1, chunkSize - 1, chunkSize, 5 * chunkSize, 1 << 27} {
		if tb.Load(pid) != nil {
			t.Fatalf("pid %d: state before store", pid)
		}
		v := int(pid)
		tb.Slot(pid).Store(&v)
		if got := tb.Load(pid); got == nil || *got != int(pid) {
			t.Fatalf("pid %d: load = %v", pid, got)
		}
	}
}

func TestConcurrentGrowth(t *testing.T) {
	tb := New[int](1)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10000; i++ {
				pid := tb.Alloc()
				v := int(pid)
				tb.Slot(pid).Store(&v)
				if got := tb.Load(pid); *got != int(pid) {
					t.Errorf("pid %d holds %d", pid, *got)
					return
				}
			}
		}()
	}
	wg.Wait()
	if tb.Next() != 40001 {
		t.Fatalf("next = %d, want 40001", tb.Next())
	}
}

// TestAllocCostIndependentOfFreeList is a hang detector, not a timing
// assertion: 1M allocate/free interleavings with 100k PIDs held must finish
// far inside the generous bound. An allocator that scans its free list per
// call (O(n) per write) takes many minutes here.
func TestAllocCostIndependentOfFreeList(t *testing.T) {
	tb := New[struct{}](1)
	held := make([]PID, 0, 100_000)
	for i := 0; i < 100_000; i++ {
		held = append(held, tb.Alloc())
	}
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Now()
	epoch := uint64(0)
	for i := 0; i < 1_000_000; i++ {
		j := rng.IntN(len(held))
		epoch++
		tb.Retire(held[j], epoch)
		if i%64 == 0 {
			tb.Reclaim(epoch)
		}
		held[j] = tb.Alloc()
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Fatalf("hang detector: 1M alloc/free took %v", d)
	}
	seen := make(map[PID]bool, len(held))
	for _, p := range held {
		if seen[p] {
			t.Fatalf("PID %d handed out twice", p)
		}
		seen[p] = true
	}
}

// TestRings: the ring word is per slot, stable, and absent for a PID whose
// chunk was never allocated.
func TestRings(t *testing.T) {
	tb := New[int](1)
	if tb.Rings(5) != nil {
		t.Fatal("ring word of an unmapped PID")
	}
	tb.Slot(5)
	w := tb.Rings(5)
	if w == nil || w != tb.Rings(5) || w == tb.Rings(6) {
		t.Fatal("ring word not one per slot")
	}
	w.Store(3)
	if tb.Slot(5).Rings.Load() != 3 {
		t.Fatal("Rings does not return the slot's word")
	}
}

// TestRef: Touched sets the reference bit; Unref reports in how many
// passes in a row the page was found referenced and clears the bit.
func TestRef(t *testing.T) {
	s := New[int](1).Slot(1)
	if s.Unref() != 0 {
		t.Fatal("a fresh slot is referenced")
	}
	s.Touched()
	s.Touched()
	if n := s.Unref(); n != 1 {
		t.Fatalf("first referenced pass: Unref = %d, want 1", n)
	}
	s.Touched()
	if n := s.Unref(); n != 2 {
		t.Fatalf("second referenced pass in a row: Unref = %d, want 2", n)
	}
	s.Touched()
	if n := s.Unref(); n != 2 {
		t.Fatalf("third referenced pass in a row: Unref = %d, want 2", n)
	}
	if n := s.Unref(); n != 0 {
		t.Fatalf("a pass with no read: Unref = %d, want 0", n)
	}
	s.Touched()
	if n := s.Unref(); n != 1 {
		t.Fatalf("read again after an unread pass: Unref = %d, want 1 (the run starts over)", n)
	}
}
