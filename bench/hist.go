package bench

import (
	"math"
	"math/bits"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Log2Buckets is kv_bench's number of latency buckets.
const Log2Buckets = 64

// Log2Hist is kv_bench's latency histogram: bucket i counts operations whose
// latency in whole microseconds (at least 1) has floor(log2) = i. A quantile
// reports the lower bound 2^i of its bucket, so p99 values are powers of two
// and comparable with published kv_bench numbers.
type Log2Hist [Log2Buckets]uint64

// Log2Bucket is the bucket of a latency of us microseconds.
func Log2Bucket(us uint64) int {
	if us < 1 {
		us = 1
	}
	return bits.Len64(us) - 1
}

// Record adds one latency.
func (h *Log2Hist) Record(d time.Duration) { h[Log2Bucket(uint64(d/time.Microsecond))]++ }

// Merge adds o into h.
func (h *Log2Hist) Merge(o *Log2Hist) {
	for i := range h {
		h[i] += o[i]
	}
}

// Quantile returns kv_bench's quantile q (0..1) in microseconds: 0 when
// empty, else 2^i for the first bucket i where the running count reaches
// ceil(total*q) (bucket 0 reports 1).
func (h *Log2Hist) Quantile(q float64) uint64 {
	var total uint64
	for _, c := range h {
		total += c
	}
	if total == 0 {
		return 0
	}
	target := uint64(math.Ceil(float64(total) * q))
	var acc uint64
	for i, c := range h {
		acc += c
		if acc >= target {
			return uint64(1) << uint(i)
		}
	}
	return uint64(1) << (Log2Buckets - 1)
}

// Latency records one operation into both histograms: kv_bench's log2-µs
// buckets and an HDR histogram of nanoseconds (3 significant digits, 1 ns to
// 100 s) for exact percentiles. One Latency per goroutine; Record does not
// allocate.
type Latency struct {
	Log2 Log2Hist
	HDR  *hdrhistogram.Histogram
}

const hdrMax = int64(100 * time.Second)

// NewLatency returns empty histograms.
func NewLatency() *Latency {
	return &Latency{HDR: hdrhistogram.New(1, hdrMax, 3)}
}

// Record adds one latency to both histograms.
func (l *Latency) Record(d time.Duration) {
	l.Log2.Record(d)
	v := int64(d)
	if v < 1 {
		v = 1
	}
	if v > hdrMax {
		v = hdrMax
	}
	_ = l.HDR.RecordValue(v) // in range by the clamps above
}

// Merge adds o into l.
func (l *Latency) Merge(o *Latency) {
	l.Log2.Merge(&o.Log2)
	l.HDR.Merge(o.HDR)
}

// HDRMicros returns the HDR percentile p (0..100) in microseconds.
func (l *Latency) HDRMicros(p float64) float64 {
	return float64(l.HDR.ValueAtQuantile(p)) / 1e3
}
