package checkpoint

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwkv/bwkv/cache"
	"github.com/bwkv/bwkv/failpoints"
	"github.com/bwkv/bwkv/generation"
)

// retryAfterFailure is the pause before a failed checkpoint is attempted
// again (unless a write or a request comes first).
const retryAfterFailure = time.Second

// Stall bounds: a writer held by the throttle waits at most stallChecks
// times stallWait (10 s), so a checkpointer that keeps failing (a full
// disk) cannot hang writers forever; the stall count shows it.
const (
	stallChecks = 100
	stallWait   = 100 * time.Millisecond
)

// LoopEnv is how a Checkpointer reaches the engine. The fields read on
// every write (Gens, Cache, ReadOnly, CheckpointBytes) are concrete, so
// the throttle's fast path makes one indirect call (LogHead); the rest are
// the engine's steps, called from the checkpointer goroutine or on a
// stall.
type LoopEnv struct {
	Gens  *generation.Manager
	Cache *cache.Cache
	// LogHead returns the log's head (0 before the log is open): from the
	// hot generation's LogStart to it is the log the generation holds.
	LogHead func() uint64
	// CheckpointBytes is the hot generation's size that asks for a cut
	// (Options.CheckpointBytes): its frame bytes to write (Gen.Bytes) or
	// logFactor times it of log; writers wait at twice either.
	CheckpointBytes int64
	// ReadOnly is the engine's flag: opened read-only or degraded. A
	// writer never waits on a read-only DB.
	ReadOnly *atomic.Bool
	// Stop is closed when the DB closes: the loop returns, waiters and
	// held writers are released.
	Stop <-chan struct{}
	// ErrClosed is what Checkpoint and pending requests return after Stop.
	ErrClosed error

	// Degraded returns the error a write gets once an unrecoverable I/O
	// error degraded the DB, nil while healthy: nothing more is published.
	Degraded func() error
	// Cut seals the hot generation (nil: a sealed one is pending).
	Cut func() *generation.Gen
	// Publish publishes a sealed generation; on success it reports the
	// run's result through Published.
	Publish func(g *generation.Gen) error
	// CollectGarbage runs a GC round if one is due, or at once to the
	// settled targets when settle is set (a caller waits on a checkpoint),
	// and reports whether another should follow soon (gc.Worker.Collect).
	CollectGarbage func(settle bool) bool
	// GCRetry is the pause before a round that left work behind runs again
	// on a quiet database.
	GCRetry time.Duration
	// Settle runs every SettleInterval on the checkpointer goroutine (the
	// idle settler); it may call Attempt.
	Settle         func()
	SettleInterval time.Duration

	// BackgroundError counts and reports a failed checkpoint; Log gets its
	// warning.
	BackgroundError func(err error)
	Log             *slog.Logger
	// StallBegin and StallEnd, if set, run when a writer starts and stops
	// waiting in Throttle.
	StallBegin func()
	StallEnd   func(d time.Duration)
}

// Stats are a Checkpointer's counters since Open.
type Stats struct {
	Count, Bytes, FramesWritten, FramesSkipped uint64
	Blobs, BlobBytes, BlobsReused              uint64
	// FramesPlain counts frames stored plain because their page was hot.
	FramesPlain uint64
	// Installed is the frame bytes of the published generations.
	Installed uint64
	Duration  time.Duration
	Frontier  uint64
	// Stalls counts the writers the throttle held.
	Stalls uint64
}

// Checkpointer is the background checkpointer: its goroutine (Run), its
// mailbox (Kick, Checkpoint), its counters and the throttle writers pass
// (Throttle). Safe for concurrent use; Attempt and LoopEnv's steps run on
// Run's goroutine only.
type Checkpointer struct {
	env  LoopEnv
	req  chan chan error // Checkpoint: cut now, reply after the publish
	kick chan struct{}   // dirty bytes passed CheckpointBytes
	do   chan func()     // Do: run a step on the loop's goroutine

	count, bytes, framesWritten, framesSkipped, stalls atomic.Uint64
	framesPlain                                        atomic.Uint64
	blobs, blobBytes, blobsReused                      atomic.Uint64
	nanos, frontier, installed                         atomic.Uint64
	// analysisStart is the last publish's (the log below it is covered).
	analysisStart atomic.Uint64

	pubMu sync.Mutex
	// published is closed and replaced at each publish and by Wake
	// (throttled writers block on it). Guarded by pubMu.
	published chan struct{}
}

// New returns a Checkpointer; Run starts its loop.
func New(env LoopEnv) *Checkpointer {
	return &Checkpointer{env: env, req: make(chan chan error), kick: make(chan struct{}, 1), do: make(chan func()), published: make(chan struct{})}
}

func (c *Checkpointer) publishedCh() chan struct{} {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	return c.published
}

// Wake releases the writers Throttle holds, to check again (after a
// publish, a GC round, or when the DB degrades).
func (c *Checkpointer) Wake() {
	c.pubMu.Lock()
	close(c.published)
	c.published = make(chan struct{})
	c.pubMu.Unlock()
}

// Kick asks for a cut; it never blocks.
func (c *Checkpointer) Kick() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// logFactor: a hot generation holding logFactor x CheckpointBytes of log
// is due for a cut whatever its frame bytes. Frame bytes alone do not
// bound the log (nor the redo after a crash): a page rewritten many
// times in one generation counts about once (Gen.Bytes), while each of
// its updates logs its new and old values. Under a skewed load, whose hot
// pages are consolidated many times per generation, the log asks for the
// cut; under updates spread over many pages, the frame bytes usually do.
const logFactor = 1

// overBy reports whether the hot generation holds at least n x
// CheckpointBytes of frame bytes, or n x logFactor x CheckpointBytes of
// log. O(1).
func (c *Checkpointer) overBy(hot *generation.Gen, n int64) bool {
	if hot.Bytes() >= n*c.env.CheckpointBytes {
		return true
	}
	head := c.env.LogHead()
	return head > hot.LogStart && head-hot.LogStart >= uint64(n*logFactor*c.env.CheckpointBytes)
}

// Due reports whether the hot generation is due for a cut (its frame
// bytes or its log, overBy). O(1).
func (c *Checkpointer) Due() bool { return c.overBy(c.env.Gens.Hot(), 1) }

// AfterWrite runs after each frame-producing write: it asks for a cut
// when the hot generation is due. O(1).
func (c *Checkpointer) AfterWrite() {
	if c.env.Gens.Sealed() == nil && c.Due() {
		c.Kick()
	}
}

// Throttle makes a writer wait, before it takes any lock, while the hot
// generation holds twice what makes it due (overBy), which means the
// checkpointer lags: a publish or a GC round is running, or it has not
// yet been scheduled to cut the generation it was asked for at 1x, as on
// a loaded machine; the log cannot be recycled meanwhile. It also waits
// while resident pages exceed the cache's hard limit (dirty pages the
// evictor cannot drop until a checkpoint publishes them). The wait is
// bounded (stallChecks x stallWait).
func (c *Checkpointer) Throttle() {
	if c.env.ReadOnly.Load() || !c.mustWait() {
		return // the path of nearly every write: no allocation
	}
	c.stall()
}

// stall is Throttle's wait, entered once mustWait held.
func (c *Checkpointer) stall() {
	c.stalls.Add(1)
	start := time.Now()
	if f := c.env.StallBegin; f != nil {
		f()
	}
	if f := c.env.StallEnd; f != nil {
		defer func() { f(time.Since(start)) }()
	}
	for i := 0; i < stallChecks; i++ {
		if i > 0 && (c.env.ReadOnly.Load() || !c.mustWait()) {
			return
		}
		ch := c.publishedCh()
		// Ask for the cut: the writes that would (AfterWrite) are the
		// ones waiting here.
		c.Kick()
		select {
		case <-ch:
		case <-c.env.Stop:
			return
		case <-time.After(stallWait):
		}
	}
}

// mustWait reports whether a writer must wait for the next publish. O(1).
func (c *Checkpointer) mustWait() bool {
	if c.overBy(c.env.Gens.Hot(), 2) {
		return true
	}
	return c.env.Cache != nil && c.env.Cache.MustWait()
}

// Checkpoint asks the loop for a cut now and waits for its publish (and
// the GC round after it).
func (c *Checkpointer) Checkpoint() error {
	done := make(chan error, 1)
	select {
	case c.req <- done:
	case <-c.env.Stop:
		return c.env.ErrClosed
	}
	select {
	case err := <-done:
		return err
	case <-c.env.Stop:
		return c.env.ErrClosed
	}
}

// Do runs f on the checkpointer goroutine, between two attempts, and
// returns once f has returned; f may call Attempt and the LoopEnv steps.
// It returns ErrClosed, without running f, if the loop stops first.
func (c *Checkpointer) Do(f func()) error {
	done := make(chan struct{})
	select {
	case c.do <- func() { f(); close(done) }:
	case <-c.env.Stop:
		return c.env.ErrClosed
	}
	<-done // the loop runs f to its end before it looks at Stop again
	return nil
}

// Run is the checkpointer goroutine; it returns when Stop is closed.
// After each attempt it runs the GC (CollectGarbage), so no other
// manifest commit interleaves with a round.
func (c *Checkpointer) Run() {
	var waiters []chan error
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	settle := time.NewTicker(c.env.SettleInterval)
	defer settle.Stop()
	for {
		select {
		case <-c.env.Stop:
			for _, w := range waiters {
				w <- c.env.ErrClosed
			}
			return
		case w := <-c.req:
			waiters = append(waiters, w)
		case <-c.kick:
		case <-retry.C:
		case <-settle.C:
			c.env.Settle()
			continue
		case f := <-c.do:
			f()
			continue
		}
		err := c.Attempt(len(waiters) > 0)
		if err != nil && c.env.Degraded() == nil {
			c.env.BackgroundError(err)
			c.env.Log.Warn("bwkv: checkpoint failed; will retry", "err", err)
			retry.Reset(retryAfterFailure)
		}
		if c.env.CollectGarbage(len(waiters) > 0) && err == nil {
			retry.Reset(c.env.GCRetry)
		}
		for _, w := range waiters {
			w <- err
		}
		waiters = waiters[:0]
	}
}

// Attempt publishes a pending sealed generation (a failed earlier
// attempt) and then, if force or due (CheckpointBytes, or the cache's
// pressure), cuts and publishes the hot one. Checkpointer goroutine only.
func (c *Checkpointer) Attempt(force bool) error {
	if err := c.env.Degraded(); err != nil {
		// Nothing more is published after an unrecoverable I/O error:
		// the next open recovers from the log.
		return err
	}
	gens := c.env.Gens
	if g := gens.Sealed(); g != nil {
		if err := c.env.Publish(g); err != nil {
			return err
		}
	}
	pressure := c.env.Cache.TakePressure() && gens.Hot().Frames() > 0
	if !force && !pressure && !c.Due() {
		return nil
	}
	if err := failpoints.Hit(failpoints.CheckpointCut); err != nil {
		return fmt.Errorf("bwkv: checkpoint: %w", err)
	}
	g := c.env.Cut()
	if g == nil {
		return errors.New("bwkv: checkpoint: a sealed generation is pending")
	}
	if err := c.env.Degraded(); err != nil {
		// The cut itself failed (its before-images were not logged).
		return err
	}
	return c.env.Publish(g)
}

// Published records a publish of installed frame bytes that res
// describes and wakes the throttled writers (LoopEnv.Publish calls it).
func (c *Checkpointer) Published(res Result, installed uint64) {
	c.count.Add(1)
	c.bytes.Add(uint64(res.Bytes))
	c.framesWritten.Add(uint64(res.Frames))
	c.blobs.Add(uint64(res.Blobs))
	c.blobBytes.Add(uint64(res.BlobBytes))
	c.blobsReused.Add(uint64(res.BlobsReused))
	c.framesSkipped.Add(uint64(res.Skipped))
	c.framesPlain.Add(uint64(res.Hot))
	c.installed.Add(installed)
	c.nanos.Add(uint64(res.Duration))
	c.frontier.Store(res.Frontier)
	c.analysisStart.Store(res.AnalysisStart)
	c.Wake()
}

// AnalysisStart returns the last publish's analysis start: the log below
// it is covered (0 before the first publish of this Open).
func (c *Checkpointer) AnalysisStart() uint64 { return c.analysisStart.Load() }

// Stats returns the counters.
func (c *Checkpointer) Stats() Stats {
	return Stats{
		Count:         c.count.Load(),
		Bytes:         c.bytes.Load(),
		FramesWritten: c.framesWritten.Load(),
		FramesSkipped: c.framesSkipped.Load(),
		FramesPlain:   c.framesPlain.Load(),
		Blobs:         c.blobs.Load(),
		BlobBytes:     c.blobBytes.Load(),
		BlobsReused:   c.blobsReused.Load(),
		Installed:     c.installed.Load(),
		Duration:      time.Duration(c.nanos.Load()),
		Frontier:      c.frontier.Load(),
		Stalls:        c.stalls.Load(),
	}
}
