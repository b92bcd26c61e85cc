package bench

import (
	"strings"
	"testing"
	"time"
)

func TestWaitStable(t *testing.T) {
	sizes := []int64{10, 20, 20, 30, 30, 30, 30}
	i := 0
	size := func() int64 {
		s := sizes[min(i, len(sizes)-1)]
		i++
		return s
	}
	got, stable := waitStable(size, time.Millisecond, 3, time.Now().Add(time.Minute))
	if got != 30 || !stable {
		t.Fatalf("waitStable = %d %v, want 30 true", got, stable)
	}
	if i != 7 {
		t.Fatalf("%d samples, want 7 (the size must hold for 3 samples after it changed)", i)
	}
	// A size that never holds still stops at the deadline with the last
	// sample.
	n := int64(0)
	grow := func() int64 { n++; return n }
	got, stable = waitStable(grow, time.Millisecond, 3, time.Now().Add(20*time.Millisecond))
	if stable || got != n {
		t.Fatalf("growing: %d %v (last sample %d)", got, stable, n)
	}
}

func TestSettleAfterFlag(t *testing.T) {
	o := DefaultRunOptions()
	o.Path, o.Workload, o.MeasureSecs = t.TempDir(), "W4", 1
	if err := o.Validate(); err != nil {
		t.Fatalf("default (settle off): %v", err)
	}
	o.SettleAfter = 60
	if err := o.Validate(); err != nil {
		t.Fatalf("--settle-after 60: %v", err)
	}
	o.SettleAfter = -1
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--settle-after") {
		t.Fatalf("--settle-after -1: %v", err)
	}
}

func TestParseProcIO(t *testing.T) {
	in := "rchar: 6976\nwchar: 300\nsyscr: 10\nsyscw: 2\nread_bytes: 0\nwrite_bytes: 8192\ncancelled_write_bytes: 4096\n"
	c, ok := parseProcIO([]byte(in))
	if !ok || c != (ProcIO{WChar: 300, WriteBytes: 8192, CancelledWriteBytes: 4096}) {
		t.Fatalf("parseProcIO = %+v %v", c, ok)
	}
	if _, ok := parseProcIO([]byte("rchar: 1\n")); ok {
		t.Fatal("no write_bytes line parsed as ok")
	}
	d := (ProcIO{WChar: 500, WriteBytes: 10000, CancelledWriteBytes: 4096}).Sub(c)
	if d != (ProcIO{WChar: 200, WriteBytes: 1808}) {
		t.Fatalf("Sub = %+v", d)
	}
}

// TestRunSettleAfter runs a short W4 with the post-measure settle on
// bbolt (no background work, so the directory holds still at once) and
// checks the space columns are filled.
func TestRunSettleAfter(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the settle window")
	}
	o := DefaultRunOptions()
	o.Engine, o.Workload, o.Path = "bbolt", "W4", t.TempDir()+"/db"
	o.KeySize, o.ValueSize, o.PrefillKeys, o.MeasureSecs, o.Threads = 32, 100, 2000, 1, 2
	o.SettleAfter = 30
	r, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.LogicalBytes != 2000*132 || r.SettledDiskBytes <= 0 || r.SettledSpaceAmp <= 0 {
		t.Fatalf("space columns: logical %d settled %d amp %.3f", r.LogicalBytes, r.SettledDiskBytes, r.SettledSpaceAmp)
	}
	if r.PostSettleSecs < settleStableSamples-1 || r.PostSettleSecs >= 30 {
		t.Fatalf("post_settle_secs %.2f, want the %d-sample window and no timeout", r.PostSettleSecs, settleStableSamples)
	}
	if r.UserBytes <= 2000*132 {
		t.Fatalf("user_bytes %d: the updates are not counted", r.UserBytes)
	}
	if _, ok := readProcIO(); ok && (r.WriteBytes == 0 || r.WriteAmp <= 0) {
		t.Fatalf("write_bytes %d write_amp %.3f with /proc/self/io readable", r.WriteBytes, r.WriteAmp)
	}
}
