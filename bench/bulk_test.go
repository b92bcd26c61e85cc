package bench

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// series builds windows of 500 records up to n whose latencies follow
// lat(records) with multiplicative noise.
func series(n int, seed uint64, lat func(records float64) float64) []BulkWindow {
	r := rand.New(rand.NewPCG(seed, 9))
	var ws []BulkWindow
	for rec := 500; rec <= n; rec += 500 {
		base := lat(float64(rec)) * (1 + 0.2*(r.Float64()-0.5))
		ws = append(ws, BulkWindow{
			Records: rec,
			Mean:    time.Duration(base),
			P50:     time.Duration(0.9 * base),
			P95:     time.Duration(2 * base),
			Max:     time.Duration(5 * base),
		})
	}
	return ws
}

func TestOLSSlope(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	ys := []float64{3, 5, 7, 9}
	if s := OLSSlope(xs, ys); !near(s, 2) {
		t.Fatalf("slope %v", s)
	}
	if OLSSlope([]float64{1}, []float64{1}) != 0 || OLSSlope([]float64{2, 2}, []float64{1, 3}) != 0 {
		t.Fatal("degenerate slopes")
	}
}

func TestBulkGateQuadraticFails(t *testing.T) {
	t.Log("seed 1")
	// O(n) per write: latency proportional to the records already in.
	ws := series(100000, 1, func(rec float64) float64 { return 1000 + 10*rec })
	s := Summarize(ws, 50*time.Microsecond, false)
	if s.Pass {
		t.Fatalf("quadratic series passed: %+v", s)
	}
	if s.Growth < 5 || s.Slope < 0.5 {
		t.Fatalf("growth %.2f slope %.3f: expected a clear failure", s.Growth, s.Slope)
	}
	if !strings.Contains(s.Reason, "growth") || !strings.Contains(s.Reason, "slope") {
		t.Fatalf("reason %q", s.Reason)
	}
}

func TestBulkGateFlatPasses(t *testing.T) {
	t.Log("seed 2")
	ws := series(2000000, 2, func(float64) float64 { return 3000 })
	s := Summarize(ws, 3*time.Microsecond, false)
	if !s.Pass || s.Growth > 1.3 || math.Abs(s.Slope) > 0.05 {
		t.Fatalf("flat series: %+v", s)
	}
	// A logarithmic index (B-tree depth) also passes.
	ws = series(2000000, 3, func(rec float64) float64 { return 1000 * math.Log2(rec) })
	if s := Summarize(ws, 10*time.Microsecond, false); !s.Pass {
		t.Fatalf("log series: %+v", s)
	}
}

func TestBulkGateCapFails(t *testing.T) {
	ws := series(10000, 4, func(float64) float64 { return 3000 })
	s := Summarize(ws, 3*time.Microsecond, true)
	if s.Pass || !strings.Contains(s.Reason, "cap") {
		t.Fatalf("capped run passed: %+v", s)
	}
	if s := Summarize(nil, 0, false); s.Pass {
		t.Fatal("no windows passed")
	}
}

func TestBulkStalls(t *testing.T) {
	ws := series(50000, 5, func(float64) float64 { return 3000 })
	ws[10].Max = 200 * time.Millisecond
	ws[20].Max = time.Second
	s := Summarize(ws, 3*time.Microsecond, false)
	// 5x base = 15 µs < 50 x 3 µs; only the two injected maxima are stalls.
	if s.Stalls != 2 {
		t.Fatalf("stalls %d", s.Stalls)
	}
}

func TestWindowOf(t *testing.T) {
	var lat []time.Duration
	for i := 100; i >= 1; i-- {
		lat = append(lat, time.Duration(i)*time.Microsecond)
	}
	w := windowOf(lat, 1000, 500, time.Second/10)
	if w.P50 != 50*time.Microsecond || w.P95 != 95*time.Microsecond || w.Max != 100*time.Microsecond {
		t.Fatalf("%+v", w)
	}
	if w.Mean != 50500*time.Nanosecond || !near(w.Ops, 5000) || w.Records != 1000 {
		t.Fatalf("%+v", w)
	}
}

// TestBulkQuadraticAdapterFails runs the real import on the quadratic
// fixture: its O(n) insert must trip the gate even at 20k records.
func TestBulkQuadraticAdapterFails(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds")
	}
	o := DefaultBulkOptions()
	o.Engine, o.Path, o.Records, o.Order = "quadratic", t.TempDir(), 20000, "random"
	var rows bytes.Buffer
	s, err := Bulk(o, &rows)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(s.SummaryLine(o, 0))
	if s.Pass {
		t.Fatalf("quadratic adapter passed the gate: %+v", s)
	}
	lines := strings.Split(strings.TrimSpace(rows.String()), "\n")
	if lines[0] != BulkWindowHeader || len(lines) != 1+20000/500 {
		t.Fatalf("%d lines, first %q", len(lines), lines[0])
	}
}
