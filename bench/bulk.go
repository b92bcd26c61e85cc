package bench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Gate thresholds of the bulk import (bench/README.md): the tail may grow at most
// 2x from the first tenth of the import to the last, and the mean latency may
// grow at most like records^0.2.
const (
	MaxGrowth = 2.0
	MaxSlope  = 0.2
	// StallFactor: a window whose max latency exceeds this many times the
	// median op latency of the whole import counts as a stall.
	StallFactor = 50
)

// BulkOptions are the flags of `kvbench bulk`.
type BulkOptions struct {
	Engine         string
	Path           string
	Records        int
	KeySize        int
	ValueSize      int
	ValueKind      string // random or text (ParseValueKind)
	Compression    string // none, fast or good (ParseCompression)
	Order          string // "seq" (ascending keys) or "random" (a seeded permutation)
	TxnSize        int
	Window         int
	Durability     string
	MaxSecs        float64 // wall-clock cap; reaching it fails the gate
	Seed           uint64
	CacheBytes     int64
	ValueThreshold int
	NoCleanup      bool
	Progress       bool
}

// DefaultBulkOptions are the harness's defaults.
func DefaultBulkOptions() BulkOptions {
	return BulkOptions{
		Records: 100000, KeySize: 32, ValueSize: 1024, ValueKind: string(ValueRandom), Order: "seq", TxnSize: 1,
		Window: 500, Durability: "relaxed", MaxSecs: 600, Seed: 1,
		CacheBytes: 256 << 20, ValueThreshold: 8192,
	}
}

// BulkWindow is one per-window CSV row.
type BulkWindow struct {
	Records   int           // records done at the end of the window
	Ops       float64       // records per second over the window's wall time
	P50, P95  time.Duration // per-op (put or commit) latency
	Max, Mean time.Duration
	HeapInUse uint64
	GCPause   time.Duration // GC stop-the-world time during the window
	DiskBytes int64
}

// BulkWindowHeader is the per-window CSV header.
const BulkWindowHeader = "engine,order,txn_size,durability,records,window_ops,p50_us,p95_us,max_us,mean_us,heap_inuse_bytes,gc_pause_us,disk_bytes"

// BulkSummary is the import's verdict.
type BulkSummary struct {
	Windows  int
	Growth   float64 // median p95 of the last 10% of windows / of the first 10%
	Slope    float64 // of log(window mean latency) against log(records done)
	Stalls   int
	MedianOp time.Duration
	Capped   bool // the wall-clock cap ended the import
	Pass     bool
	Reason   string
}

// Summarize computes the verdict from the windows. medianOp is the median
// latency of every op of the import (for the stall rule).
func Summarize(ws []BulkWindow, medianOp time.Duration, capped bool) BulkSummary {
	s := BulkSummary{Windows: len(ws), MedianOp: medianOp, Capped: capped}
	if len(ws) == 0 {
		s.Reason = "no complete window"
		return s
	}
	k := max(1, len(ws)/10)
	p95 := func(part []BulkWindow) float64 {
		xs := make([]float64, len(part))
		for i, w := range part {
			xs[i] = float64(w.P95)
		}
		return Median(xs)
	}
	if first := p95(ws[:k]); first > 0 {
		s.Growth = p95(ws[len(ws)-k:]) / first
	}
	xs, ys := make([]float64, 0, len(ws)), make([]float64, 0, len(ws))
	for _, w := range ws {
		if w.Records > 0 && w.Mean > 0 {
			xs = append(xs, math.Log(float64(w.Records)))
			ys = append(ys, math.Log(float64(w.Mean)))
		}
	}
	s.Slope = OLSSlope(xs, ys)
	for _, w := range ws {
		if medianOp > 0 && w.Max > StallFactor*medianOp {
			s.Stalls++
		}
	}
	var reasons []string
	if s.Growth > MaxGrowth {
		reasons = append(reasons, fmt.Sprintf("growth %.2f > %.1f", s.Growth, MaxGrowth))
	}
	if s.Slope > MaxSlope {
		reasons = append(reasons, fmt.Sprintf("slope %.3f > %.1f", s.Slope, MaxSlope))
	}
	if capped {
		reasons = append(reasons, "wall-clock cap reached")
	}
	s.Pass = len(reasons) == 0
	s.Reason = strings.Join(reasons, "; ")
	return s
}

// OLSSlope is the least-squares slope of ys against xs (0 if undefined).
func OLSSlope(xs, ys []float64) float64 {
	n := float64(len(xs))
	if len(xs) < 2 {
		return 0
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx /= n
	my /= n
	var sxy, sxx float64
	for i := range xs {
		sxy += (xs[i] - mx) * (ys[i] - my)
		sxx += (xs[i] - mx) * (xs[i] - mx)
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}

// BulkOrder returns the ids of an import of n records in the given order:
// "seq" is ascending key order (prefix group by group), "random" a seeded
// permutation.
func BulkOrder(n int, order string, seed uint64) ([]uint32, error) {
	ids := make([]uint32, 0, n)
	switch order {
	case "seq":
		for g := 0; g < PrefixGroups; g++ {
			for id := g; id < n; id += PrefixGroups {
				ids = append(ids, uint32(id))
			}
		}
	case "random":
		for id := 0; id < n; id++ {
			ids = append(ids, uint32(id))
		}
		r := rand.New(rand.NewPCG(seed, 0x5eed))
		r.Shuffle(n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	default:
		return nil, fmt.Errorf("invalid --order %q (supported: seq, random)", order)
	}
	return ids, nil
}

// Validate reports every bad field at once.
func (o *BulkOptions) Validate() error {
	var errs []error
	if o.Path == "" {
		errs = append(errs, errors.New("--path is empty"))
	}
	if o.Records <= 0 || o.Records > math.MaxUint32 {
		errs = append(errs, errors.New("--records must be in 1..2^32-1"))
	}
	if o.KeySize < 16 || o.ValueSize < 1 {
		errs = append(errs, errors.New("--key-size must be >= 16 and --value-size >= 1"))
	}
	if _, err := ParseValueKind(o.ValueKind); err != nil {
		errs = append(errs, err)
	}
	if err := ParseCompression(o.Compression); err != nil {
		errs = append(errs, err)
	}
	if o.TxnSize <= 0 || o.Window <= 0 {
		errs = append(errs, errors.New("--txn-size and --window must be > 0"))
	}
	if o.Order != "seq" && o.Order != "random" {
		errs = append(errs, fmt.Errorf("invalid --order %q (supported: seq, random)", o.Order))
	}
	if _, err := ParseDurability(o.Durability); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Bulk runs the embedder import: every put and every commit is timed, one
// row per window of Window records goes to rowsOut (CSV, header first), and
// the summary is returned. The import stops early at the wall-clock cap,
// which fails the gate.
func Bulk(o BulkOptions, rowsOut io.Writer) (BulkSummary, error) {
	if err := o.Validate(); err != nil {
		return BulkSummary{}, err
	}
	dur, _ := ParseDurability(o.Durability)
	ids, err := BulkOrder(o.Records, o.Order, o.Seed)
	if err != nil {
		return BulkSummary{}, err
	}
	if ents, err := os.ReadDir(o.Path); err == nil && len(ents) > 0 {
		return BulkSummary{}, fmt.Errorf("path %q already exists and is not empty", o.Path)
	}
	if err := os.MkdirAll(o.Path, 0o755); err != nil {
		return BulkSummary{}, err
	}
	if !o.NoCleanup {
		defer os.RemoveAll(o.Path)
	}
	eng, err := Open(o.Engine, Config{
		Dir: o.Path, Durability: dur, CacheBytes: o.CacheBytes,
		ValueThreshold: o.ValueThreshold, KeySize: o.KeySize, ValueSize: o.ValueSize,
		Compression: o.Compression,
	})
	if err != nil {
		return BulkSummary{}, fmt.Errorf("open %s: %w", o.Engine, err)
	}
	defer eng.Close()

	fmt.Fprintln(rowsOut, BulkWindowHeader)
	bar := NewProgress(o.Progress, int64(o.Records), "import")
	defer bar.Done()
	values, err := NewValues(ValueKind(o.ValueKind), o.ValueSize, o.Seed)
	if err != nil {
		return BulkSummary{}, err
	}
	key := make([]byte, 0, o.KeySize+16)
	all := NewLatency()
	winLat := make([]time.Duration, 0, o.Window+o.Window/o.TxnSize+2)
	var windows []BulkWindow
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	lastPause := ms.PauseTotalNs
	start := time.Now()
	winStart := start
	capped := false
	limit := time.Duration(o.MaxSecs * float64(time.Second))

	var batch Batch
	inBatch := 0
	done := 0
	record := func(d time.Duration) {
		winLat = append(winLat, d)
		all.Record(d)
	}
	commit := func() error {
		t := time.Now()
		err := batch.Commit()
		record(time.Since(t))
		batch, inBatch = nil, 0
		return err
	}
	for _, id := range ids {
		if batch == nil {
			if batch, err = eng.Begin(); err != nil {
				return BulkSummary{}, err
			}
		}
		key = AppendKey(key[:0], uint64(id), o.KeySize)
		t := time.Now()
		err := batch.Put(key, values.At(uint64(id)))
		record(time.Since(t))
		if err != nil {
			batch.Rollback()
			return BulkSummary{}, fmt.Errorf("put record %d: %w", done, err)
		}
		inBatch++
		done++
		if inBatch == o.TxnSize {
			if err := commit(); err != nil {
				return BulkSummary{}, fmt.Errorf("commit at record %d: %w", done, err)
			}
		}
		if done%o.Window == 0 {
			now := time.Now()
			runtime.ReadMemStats(&ms)
			w := windowOf(winLat, done, o.Window, now.Sub(winStart))
			w.HeapInUse = ms.HeapInuse
			w.GCPause = time.Duration(ms.PauseTotalNs - lastPause)
			w.DiskBytes = DiskBytes(o.Path)
			lastPause = ms.PauseTotalNs
			windows = append(windows, w)
			fmt.Fprintf(rowsOut, "%s,%s,%d,%s,%d,%.1f,%.2f,%.2f,%.2f,%.2f,%d,%.1f,%d\n",
				o.Engine, o.Order, o.TxnSize, dur, w.Records, w.Ops, us(w.P50), us(w.P95), us(w.Max), us(w.Mean),
				w.HeapInUse, us(w.GCPause), w.DiskBytes)
			bar.Set(int64(done))
			winLat = winLat[:0]
			if limit > 0 && time.Since(start) > limit {
				capped = true
				break
			}
			winStart = time.Now() // the row bookkeeping above is not part of the next window
		}
	}
	if batch != nil && !capped {
		if err := commit(); err != nil {
			return BulkSummary{}, fmt.Errorf("final commit: %w", err)
		}
	} else if batch != nil {
		batch.Rollback()
	}
	return Summarize(windows, time.Duration(all.HDR.ValueAtQuantile(50)), capped), nil
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// windowOf computes a window's latency figures; lat is sorted in place.
func windowOf(lat []time.Duration, records, window int, wall time.Duration) BulkWindow {
	w := BulkWindow{Records: records}
	if wall > 0 {
		w.Ops = float64(window) / wall.Seconds()
	}
	if len(lat) == 0 {
		return w
	}
	var sum time.Duration
	for _, d := range lat {
		sum += d
	}
	w.Mean = sum / time.Duration(len(lat))
	slices.Sort(lat)
	at := func(q float64) time.Duration {
		i := int(math.Ceil(q*float64(len(lat)))) - 1
		return lat[min(max(i, 0), len(lat)-1)]
	}
	w.P50, w.P95, w.Max = at(0.50), at(0.95), lat[len(lat)-1]
	return w
}

// SummaryLine is the one line `kvbench bulk` prints.
func (s BulkSummary) SummaryLine(o BulkOptions, elapsed time.Duration) string {
	verdict := "PASS"
	if !s.Pass {
		verdict = "FAIL (" + s.Reason + ")"
	}
	return fmt.Sprintf("engine=%s records=%d order=%s txn_size=%d durability=%s windows=%d growth=%.2f slope=%.3f stalls=%d median_op_us=%.2f capped=%t elapsed_s=%.1f gate=%s",
		o.Engine, o.Records, o.Order, o.TxnSize, o.Durability, s.Windows, s.Growth, s.Slope, s.Stalls,
		us(s.MedianOp), s.Capped, elapsed.Seconds(), verdict)
}
