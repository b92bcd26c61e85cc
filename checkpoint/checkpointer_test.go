package checkpoint

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwkv/bwkv/generation"
)

func TestCheckpointerMailbox(t *testing.T) {
	stop := make(chan struct{})
	var ro atomic.Bool
	ro.Store(true)
	errClosed := errors.New("closed")
	c := New(LoopEnv{Gens: generation.NewManager(1, 0), CheckpointBytes: 1 << 20, ReadOnly: &ro, Stop: stop, ErrClosed: errClosed})
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
