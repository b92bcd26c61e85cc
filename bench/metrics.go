package bench

import (
	"io/fs"
	"math"
	"path/filepath"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The runtime/metrics the harness reads. They cover the whole process, so
// they include the engine under test and the harness (whose timed loop does
// not allocate).
const (
	mGCCPU       = "/cpu/classes/gc/total:cpu-seconds"
	mTotalCPU    = "/cpu/classes/total:cpu-seconds"
	mGCPauses    = "/sched/pauses/total/gc:seconds"
	mAllocBytes  = "/gc/heap/allocs:bytes"
	mAllocObjs   = "/gc/heap/allocs:objects"
	mHeapObjects = "/memory/classes/heap/objects:bytes"
)

// RuntimeSample is one reading of the counters a phase is measured with.
type RuntimeSample struct {
	GCCPU, TotalCPU       float64
	AllocBytes, AllocObjs uint64
	pauseCounts           []uint64
	pauseBuckets          []float64
}

// ReadRuntime reads the counters.
func ReadRuntime() RuntimeSample {
	s := []metrics.Sample{
		{Name: mGCCPU}, {Name: mTotalCPU}, {Name: mGCPauses},
		{Name: mAllocBytes}, {Name: mAllocObjs},
	}
	metrics.Read(s)
	var r RuntimeSample
	r.GCCPU = floatValue(s[0])
	r.TotalCPU = floatValue(s[1])
	if s[2].Value.Kind() == metrics.KindFloat64Histogram {
		h := s[2].Value.Float64Histogram()
		r.pauseCounts = append([]uint64(nil), h.Counts...)
		r.pauseBuckets = h.Buckets
	}
	r.AllocBytes = uintValue(s[3])
	r.AllocObjs = uintValue(s[4])
	return r
}

func floatValue(s metrics.Sample) float64 {
	if s.Value.Kind() == metrics.KindFloat64 {
		return s.Value.Float64()
	}
	return 0
}

func uintValue(s metrics.Sample) uint64 {
	if s.Value.Kind() == metrics.KindUint64 {
		return s.Value.Uint64()
	}
	return 0
}

// RuntimeDelta is what happened between two samples.
type RuntimeDelta struct {
	GCCPUFraction float64 // GC CPU over all CPU available to the process
	GCPauseP99    time.Duration
	GCPauses      uint64
	GCPauseTotal  time.Duration // estimated from bucket midpoints
	AllocBytes    uint64
	AllocObjects  uint64
}

// Sub returns the delta from earlier sample a to r.
func (r RuntimeSample) Sub(a RuntimeSample) RuntimeDelta {
	var d RuntimeDelta
	if cpu := r.TotalCPU - a.TotalCPU; cpu > 0 {
		d.GCCPUFraction = (r.GCCPU - a.GCCPU) / cpu
	}
	d.AllocBytes = r.AllocBytes - a.AllocBytes
	d.AllocObjects = r.AllocObjs - a.AllocObjs
	if len(r.pauseCounts) == len(a.pauseCounts) && len(r.pauseCounts) > 0 {
		counts := make([]uint64, len(r.pauseCounts))
		var total uint64
		var sum float64
		for i := range counts {
			counts[i] = r.pauseCounts[i] - a.pauseCounts[i]
			total += counts[i]
			sum += float64(counts[i]) * bucketMid(r.pauseBuckets, i)
		}
		d.GCPauses = total
		d.GCPauseTotal = time.Duration(sum * 1e9)
		d.GCPauseP99 = time.Duration(histQuantile(counts, r.pauseBuckets, 0.99) * 1e9)
	}
	return d
}

func bucketMid(b []float64, i int) float64 {
	lo, hi := b[i], b[i+1]
	if math.IsInf(lo, -1) {
		lo = 0
	}
	if math.IsInf(hi, 1) {
		return lo
	}
	return (lo + hi) / 2
}

// histQuantile returns the upper bound of the bucket holding quantile q of a
// runtime/metrics histogram (its lower bound for the open last bucket);
// 0 for an empty one.
func histQuantile(counts []uint64, buckets []float64, q float64) float64 {
	var total uint64
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	target := uint64(math.Ceil(float64(total) * q))
	var acc uint64
	for i, c := range counts {
		acc += c
		if acc >= target && c > 0 {
			hi := buckets[i+1]
			if math.IsInf(hi, 1) {
				return buckets[i]
			}
			return hi
		}
	}
	return 0
}

// HeapPeak samples the live-heap size (heap objects, including not yet
// swept garbage) every interval and keeps the maximum; the peak of a run
// includes its prefill.
type HeapPeak struct {
	peak atomic.Uint64
	stop chan struct{}
	wg   sync.WaitGroup
}

// StartHeapPeak starts the sampler; Stop ends it.
func StartHeapPeak(interval time.Duration) *HeapPeak {
	h := &HeapPeak{stop: make(chan struct{})}
	h.sample()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
				h.sample()
			}
		}
	}()
	return h
}

func (h *HeapPeak) sample() {
	v := HeapInUse()
	for {
		old := h.peak.Load()
		if v <= old || h.peak.CompareAndSwap(old, v) {
			return
		}
	}
}

// Peak returns the largest sample so far.
func (h *HeapPeak) Peak() uint64 { h.sample(); return h.peak.Load() }

// Stop ends the sampler.
func (h *HeapPeak) Stop() {
	close(h.stop)
	h.wg.Wait()
}

// HeapInUse returns the bytes of heap objects (live and not yet swept).
func HeapInUse() uint64 {
	s := []metrics.Sample{{Name: mHeapObjects}}
	metrics.Read(s)
	return uintValue(s[0])
}

// DiskBytes returns the space allocated to the files under dir (st_blocks,
// so sparse preallocations count only as far as written), 0 if dir is gone.
func DiskBytes(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else {
			total += info.Size()
		}
		return nil
	})
	return total
}
