package bench

import (
	"time"
)

// SpaceSettler is implemented by an adapter whose settle after the
// measure phase (--settle-after) does more than its Settle after the
// prefill: the steps a user takes to bring the engine's directory to its
// settled size once writes stop. An adapter without it is settled with
// Settle.
type SpaceSettler interface {
	SettleSpace() error
}

// The post-measure settle waits for the directory size to hold still:
// sampled every settleSampleEvery, settled once settleStableSamples
// samples in a row found the size of the first. The window (10 s) is
// longer than bwkv's idle settling, which starts 5 to 6 s after the last
// write (docs/crash-safety.md), so a settle that has yet to start is not
// taken for a settled directory; every engine waits the same window.
const (
	settleSampleEvery   = time.Second
	settleStableSamples = 10
)

// settleSpace runs the engine's settle step, then waits until the size of
// dir holds still or limit has passed since the start, and returns the
// last size measured.
func settleSpace(eng Engine, dir string, limit time.Duration) (int64, error) {
	deadline := time.Now().Add(limit)
	var err error
	if s, ok := eng.(SpaceSettler); ok {
		err = s.SettleSpace()
	} else {
		err = eng.Settle()
	}
	if err != nil {
		return 0, err
	}
	size, _ := waitStable(func() int64 { return DiskBytes(dir) }, settleSampleEvery, settleStableSamples, deadline)
	return size, nil
}

// waitStable samples size every interval until samples samples in a row
// equal the one before them (stable) or the next sample would fall after
// deadline, and returns the last sample.
func waitStable(size func() int64, every time.Duration, samples int, deadline time.Time) (last int64, stable bool) {
	last = size()
	for same := 0; same < samples; {
		if time.Now().Add(every).After(deadline) {
			return last, false
		}
		time.Sleep(every)
		if s := size(); s == last {
			same++
		} else {
			last, same = s, 0
		}
	}
	return last, true
}
