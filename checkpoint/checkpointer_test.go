package checkpoint

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwkv/bwkv/generation"
	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

func TestCheckpointerMailbox(t *testing.T) {
	stop := make(chan struct{})
	var ro atomic.Bool
	ro.Store(true)
	errClosed := errors.New("closed")
	c := New(LoopEnv{Gens: generation.NewManager(1, 0), LogHead: func() uint64 { return 0 }, CheckpointBytes: 1 << 20, ReadOnly: &ro, Stop: stop, ErrClosed: errClosed})
	c.Kick()
	c.Kick() // never blocks
	c.AfterWrite()
	c.Throttle() // read-only: never waits
	if s := c.Stats(); s.Stalls != 0 {
		t.Fatalf("stalls %d, want 0", s.Stalls)
	}
	c.Published(Result{Bytes: 10, Frames: 2, Frontier: 7, AnalysisStart: 5}, 3)
	s := c.Stats()
	if s.Count != 1 || s.Bytes != 10 || s.FramesWritten != 2 || s.Installed != 3 || s.Frontier != 7 || c.AnalysisStart() != 5 {
		t.Fatalf("stats after a publish: %+v, analysis start %d", s, c.AnalysisStart())
	}
	close(stop)
	done := make(chan error, 1)
	go func() { done <- c.Checkpoint() }()
	select {
	case err := <-done:
		if err != errClosed {
			t.Fatalf("Checkpoint after Stop: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second): // a hang detector only
		t.Fatal("Checkpoint after Stop hangs")
	}
}

func TestCheckpointerWake(t *testing.T) {
	c := New(LoopEnv{})
	ch := c.publishedCh()
	c.Wake()
	select {
	case <-ch:
	default:
		t.Fatal("Wake did not release the waiters")
	}
	if c.publishedCh() == ch {
		t.Fatal("Wake did not renew the channel")
	}
}

// TestThrottleWithoutPublish: a writer waits while the hot generation
// holds 2x CheckpointBytes even when no publish or GC round runs (the
// checkpointer has not cut the generation yet, as on a loaded machine),
// asks for the cut itself (the writes that would ask are the ones
// waiting), and goes on once a publish follows the cut. Before, it
// waited only during a publish, and the log grew past its bound under
// load (TestBoundedWAL with two CPU hogs: 4-5 segments).
func TestThrottleWithoutPublish(t *testing.T) {
	gens := generation.NewManager(1, 0)
	var ro atomic.Bool
	c := New(LoopEnv{Gens: gens, LogHead: func() uint64 { return 0 }, CheckpointBytes: 100, ReadOnly: &ro, Stop: make(chan struct{})})
	var slot pagetable.Slot[node.Page]
	gens.Touch(&slot, 1, nil, 1, 200, false)
	throttledUntilCut(t, c, gens, func() uint64 { return 0 })
	if s := c.Stats(); s.Stalls != 1 {
		t.Fatalf("stalls %d, want 1", s.Stalls)
	}
}

// TestLogTrigger: a hot generation whose frame bytes stay small (a page
// rewritten over and over counts about once) is still due for a cut once
// it holds logFactor x CheckpointBytes of log, and writers wait at twice
// that, so the log stays bounded whatever Gen.Bytes says.
func TestLogTrigger(t *testing.T) {
	gens := generation.NewManager(1, 0)
	gens.StartLog(1000)
	var head atomic.Uint64
	head.Store(1000)
	var ro atomic.Bool
	c := New(LoopEnv{Gens: gens, LogHead: head.Load, CheckpointBytes: 100, ReadOnly: &ro, Stop: make(chan struct{})})
	kicked := func() bool {
		select {
		case <-c.kick:
			return true
		default:
			return false
		}
	}
	head.Store(1000 + logFactor*100 - 1)
	c.AfterWrite()
	if c.Due() || kicked() {
		t.Fatal("due below logFactor x CheckpointBytes of log")
	}
	head.Add(1)
	c.AfterWrite()
	if !c.Due() || !kicked() {
		t.Fatal("not due at logFactor x CheckpointBytes of log")
	}
	c.Throttle() // below twice that: no wait
	if s := c.Stats(); s.Stalls != 0 {
		t.Fatalf("stalls %d below 2x, want 0", s.Stalls)
	}
	head.Store(1000 + 2*logFactor*100)
	// The cut opens a generation whose log starts at the frontier.
	throttledUntilCut(t, c, gens, head.Load)
	if c.Due() {
		t.Fatal("the new hot generation is due with no log")
	}
}

// throttledUntilCut checks that a writer passing c's throttle now waits
// and asks for a cut, and goes on once the cut (frontier: the log head)
// is published.
func throttledUntilCut(t *testing.T, c *Checkpointer, gens *generation.Manager, frontier func() uint64) {
	t.Helper()
	done := make(chan struct{})
	go func() { c.Throttle(); close(done) }()
	select {
	case <-c.kick:
	case <-time.After(10 * time.Second): // a hang detector only
		t.Fatal("the waiting writer did not ask for a cut")
	}
	select {
	case <-done:
		t.Fatal("Throttle returned while the hot generation holds twice what makes it due")
	default:
	}
	if gens.Cut(frontier) == nil {
		t.Fatal("no cut")
	}
	c.Published(Result{}, 0)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Throttle still waits after the cut's publish")
	}
}
