package bench

import (
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// ProgressAuto reports whether progress bars should be drawn: only when
// stderr is a terminal (never in CI logs or in matrix children).
func ProgressAuto() bool { return term.IsTerminal(int(os.Stderr.Fd())) }

// Progress is a bar on stderr fed from an atomic counter by a ticker, so the
// goroutines doing the work only pay an atomic add. A disabled Progress
// still counts but draws nothing.
type Progress struct {
	n    atomic.Int64
	bar  *progressbar.ProgressBar
	stop chan struct{}
	wg   sync.WaitGroup
}

// NewProgress starts a bar of total units with a rate display.
func NewProgress(enabled bool, total int64, desc string) *Progress {
	return newProgress(enabled, total, desc, true)
}

func newProgress(enabled bool, total int64, desc string, rate bool) *Progress {
	p := &Progress{stop: make(chan struct{})}
	if !enabled {
		return p
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100 * time.Millisecond),
	}
	if rate {
		opts = append(opts, progressbar.OptionShowIts())
	}
	p.bar = progressbar.NewOptions64(total, opts...)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				_ = p.bar.Set64(p.n.Load())
			}
		}
	}()
	return p
}

// Add counts n more units done.
func (p *Progress) Add(n int64) { p.n.Add(n) }

// Set sets the units done.
func (p *Progress) Set(n int64) { p.n.Store(n) }

// Done removes the bar.
func (p *Progress) Done() {
	if p.bar == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	_ = p.bar.Set64(p.n.Load())
	_ = p.bar.Finish()
}

// TimedProgress draws a bar that fills over d (warm-up and measure phases);
// stop it with Done.
func TimedProgress(enabled bool, d time.Duration, desc string) *Progress {
	secs := int64(d / time.Second)
	if secs < 1 {
		secs = 1
	}
	p := newProgress(enabled, secs, desc+" (s)", false)
	if p.bar == nil {
		return p
	}
	start := time.Now()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.n.Store(int64(time.Since(start) / time.Second))
			}
		}
	}()
	return p
}
