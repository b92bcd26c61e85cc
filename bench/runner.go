package bench

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"time"
)

// PrefillBatch is kv_bench's prefill transaction size.
const PrefillBatch = 1024

// RunOptions are the flags of `kvbench run` (kv_bench's, plus the cache
// budget, the value threshold and the seed).
type RunOptions struct {
	Engine         string
	Workload       string
	Threads        int
	KeySize        int
	ValueSize      int
	ValueKind      string // random or text (ParseValueKind)
	Compression    string // none, fast or good (ParseCompression)
	PrefillKeys    int
	WarmupSecs     int
	MeasureSecs    int
	Iterations     int // ops per run when MeasureSecs == 0 (kv_bench's -i)
	ScanLen        int
	ZipfTheta      float64
	ReadPath       string
	Durability     string
	Path           string
	NoCleanup      bool
	CacheBytes     int64
	ValueThreshold int
	Seed           uint64 // 0: from the clock
	Repeat         int    // recorded in the row (set by matrix)
	Progress       bool
	// SettleAfter, when > 0, adds the post-measure settle phase
	// (--settle-after): writes stop, the engine settles (SpaceSettler, or
	// Settle), and the directory is measured once its size has held for
	// settleStableSamples samples a second apart, or after SettleAfter
	// seconds, whichever comes first. 0 leaves it out.
	SettleAfter int
	// CPUProfile, when set, receives a CPU profile of the measure phase.
	CPUProfile string
	// MemProfile, when set, receives the allocation profile at the end of
	// the measure phase, and MemProfile+".base" the one at its start:
	// `go tool pprof -sample_index=alloc_space -diff_base X.base X` shows
	// the measure phase alone.
	MemProfile string
	// BlockProfile, when set, receives the blocking profile of the measure
	// phase (waits of 10 µs and more sampled: channels, locks, selects) and
	// BlockProfile+".mutex" the mutex contention profile (one in 10): where
	// workers wait rather than run.
	BlockProfile string
	// Trace, when set, receives a runtime execution trace of the measure
	// phase: `go tool trace -pprof=sched FILE` shows how long goroutines
	// waited for a CPU after being woken, which no profile above shows.
	Trace string
}

// DefaultRunOptions returns kv_bench's defaults where it has one.
func DefaultRunOptions() RunOptions {
	return RunOptions{
		Threads: 1, KeySize: 16, ValueSize: 1024, ValueKind: string(ValueRandom), Iterations: 10000, ScanLen: 100,
		ZipfTheta: 0.99, ReadPath: "snapshot", Durability: "relaxed",
		CacheBytes: 256 << 20, ValueThreshold: DefaultValueThreshold,
	}
}

// Validate reports every bad field at once.
func (o *RunOptions) Validate() error {
	var errs []error
	if o.Path == "" {
		errs = append(errs, errors.New("--path is empty"))
	}
	if o.Threads <= 0 {
		errs = append(errs, errors.New("--threads must be > 0"))
	}
	if o.KeySize < 16 || o.ValueSize < 16 {
		errs = append(errs, errors.New("--key-size and --value-size must be >= 16"))
	}
	if _, err := ParseValueKind(o.ValueKind); err != nil {
		errs = append(errs, err)
	}
	if err := ParseCompression(o.Compression); err != nil {
		errs = append(errs, err)
	}
	if o.ZipfTheta <= 0 || o.ZipfTheta >= 1 {
		errs = append(errs, errors.New("--zipf-theta must be in (0, 1)"))
	}
	if o.MeasureSecs <= 0 && o.Iterations <= 0 {
		errs = append(errs, errors.New("--measure-secs or --iterations must be > 0"))
	}
	if o.ScanLen <= 0 {
		errs = append(errs, errors.New("--scan-len must be > 0"))
	}
	if o.SettleAfter < 0 {
		errs = append(errs, errors.New("--settle-after must be >= 0 (0: no post-measure settle)"))
	}
	if _, err := LookupWorkload(o.Workload); err != nil {
		errs = append(errs, err)
	}
	if _, err := ParseReadPath(o.ReadPath); err != nil {
		errs = append(errs, err)
	}
	if _, err := ParseDurability(o.Durability); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// prefillKeys is kv_bench's rule: every workload needs a prefill; without
// --prefill-keys the iteration count is used.
func (o *RunOptions) prefillKeys() int {
	if o.PrefillKeys > 0 {
		return o.PrefillKeys
	}
	return max(o.Iterations, 1)
}

// splitRange gives thread tid its [start, start+len) share of total.
func splitRange(total, n, tid int) (start, length int) {
	base, rem := total/n, total%n
	start = tid*base + min(tid, rem)
	length = base
	if tid < rem {
		length++
	}
	return start, length
}

// Run executes one `kvbench run`: open, prefill (untimed), settle, warm up,
// measure, and returns the row. The directory must not exist or be empty;
// it is removed afterwards unless NoCleanup.
func Run(o RunOptions) (*Result, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	w, _ := LookupWorkload(o.Workload)
	readPath, _ := ParseReadPath(o.ReadPath)
	dur, _ := ParseDurability(o.Durability)
	if ents, err := os.ReadDir(o.Path); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("path %q already exists and is not empty", o.Path)
	}
	if err := os.MkdirAll(o.Path, 0o755); err != nil {
		return nil, err
	}
	if !o.NoCleanup {
		defer os.RemoveAll(o.Path)
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	nkeys := o.prefillKeys()
	chooser, err := NewChooser(w.Distribution, uint64(nkeys), o.ZipfTheta)
	if err != nil {
		return nil, err
	}

	heap := StartHeapPeak(20 * time.Millisecond)
	defer heap.Stop()
	eng, err := Open(o.Engine, Config{
		Dir: o.Path, Durability: dur, CacheBytes: o.CacheBytes,
		ValueThreshold: o.ValueThreshold, KeySize: o.KeySize, ValueSize: o.ValueSize,
		Compression: o.Compression,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", o.Engine, err)
	}
	closed := false
	defer func() {
		if !closed {
			eng.Close()
		}
	}()

	ioStart, ioOK := readProcIO()
	t0 := time.Now()
	values, err := NewValues(ValueKind(o.ValueKind), o.ValueSize, o.Seed)
	if err != nil {
		return nil, err
	}
	if err := PrefillValues(eng, nkeys, o.Threads, o.KeySize, values, o.Progress); err != nil {
		return nil, fmt.Errorf("prefill: %w", err)
	}
	prefillSecs := time.Since(t0).Seconds()
	t0 = time.Now()
	if err := eng.Settle(); err != nil {
		return nil, fmt.Errorf("settle: %w", err)
	}
	settleSecs := time.Since(t0).Seconds()

	m, err := measure(eng, w, chooser, readPath, o, values)
	if err != nil {
		return nil, err
	}

	info := eng.Info()
	disk := DiskBytes(o.Path)
	var settledDisk int64
	var postSettleSecs float64
	if o.SettleAfter > 0 {
		t0 = time.Now()
		settledDisk, err = settleSpace(eng, o.Path, time.Duration(o.SettleAfter)*time.Second)
		if err != nil {
			return nil, fmt.Errorf("post-measure settle: %w", err)
		}
		postSettleSecs = time.Since(t0).Seconds()
	}
	// Before Close: a close's own flush is not part of the run.
	var ioDelta ProcIO
	if ioOK {
		syncAll()
		end, ok := readProcIO()
		if ioOK = ok; ok {
			ioDelta = end.Sub(ioStart)
		}
	}
	if err := eng.Close(); err != nil {
		return nil, fmt.Errorf("close: %w", err)
	}
	closed = true

	r := &Result{
		Engine: o.Engine, WorkloadID: w.ID, Mode: w.Mode, Durability: dur.String(),
		Threads: o.Threads, KeySize: o.KeySize, ValueSize: o.ValueSize, PrefillKeys: nkeys,
		SharedKeyspace: true, Distribution: w.Distribution, ZipfTheta: o.ZipfTheta,
		ReadPct: w.ReadPct, UpdatePct: w.UpdatePct, ScanPct: w.ScanPct, ScanLen: o.ScanLen,
		ReadPath: readPath.String(), WarmupSecs: o.WarmupSecs, MeasureSecs: o.MeasureSecs,
		TotalOp: m.total, ErrOp: m.errs, OkOp: m.total - m.errs,
		P50: m.lat.Log2.Quantile(0.50), P95: m.lat.Log2.Quantile(0.95),
		P99: m.lat.Log2.Quantile(0.99), P999: m.lat.Log2.Quantile(0.999),
		ElapsedUs: uint64(m.elapsed / time.Microsecond),
		HDRP50:    m.lat.HDRMicros(50), HDRP99: m.lat.HDRMicros(99), HDRP999: m.lat.HDRMicros(99.9),
		HDRMax:        float64(m.lat.HDR.Max()) / 1e3,
		GCCPUFraction: m.rt.GCCPUFraction, GCPauseP99Us: float64(m.rt.GCPauseP99) / 1e3,
		GCPauses: m.rt.GCPauses, PeakHeapBytes: heap.Peak(), DiskBytes: disk,
		GoVersion: runtime.Version(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		EngineDurability: info.Durability, UpdateMode: info.UpdateMode,
		CacheBytes: o.CacheBytes, ValueThreshold: o.ValueThreshold, Seed: o.Seed,
		Repeat: o.Repeat, PrefillSecs: prefillSecs, SettleSecs: settleSecs,
	}
	if m.elapsed > 0 {
		r.Ops = float64(m.total) / m.elapsed.Seconds()
	}
	if m.total > 0 {
		r.AllocBytesPerOp = float64(m.rt.AllocBytes) / float64(m.total)
		r.CPUUsPerOp = float64(m.cpu.Microseconds()) / float64(m.total)
		r.AllocObjectsPerOp = float64(m.rt.AllocObjects) / float64(m.total)
	}
	pair := int64(o.KeySize + o.ValueSize)
	if logical := int64(nkeys) * pair; logical > 0 {
		r.SpaceAmp = float64(disk) / float64(logical)
		// Every workload overwrites ids of the prefill: the live keys at
		// the end are the prefill's.
		r.LogicalBytes = logical
		if settledDisk > 0 {
			r.SettledDiskBytes = settledDisk
			r.SettledSpaceAmp = float64(settledDisk) / float64(logical)
		}
	}
	r.PostSettleSecs = postSettleSecs
	r.ValueKind, r.Compression = o.ValueKind, o.Compression
	if r.Compression == "" {
		r.Compression = "none"
	}
	r.UserBytes = uint64(int64(nkeys)*pair) + m.userBytes
	if ioOK {
		r.WriteBytes, r.WChar, r.CancelledWriteBytes = ioDelta.WriteBytes, ioDelta.WChar, ioDelta.CancelledWriteBytes
		if r.UserBytes > 0 {
			r.WriteAmp = float64(r.WriteBytes) / float64(r.UserBytes)
		}
	}
	return r, nil
}

// Prefill loads ids [0, n) in transactions of PrefillBatch keys, the id
// range split between threads as kv_bench does. A conflict (possible only
// where an engine's conflict detection is coarser than a key) retries the
// batch.
func Prefill(eng Engine, n, threads, keySize, valueSize int, progress bool) error {
	return PrefillValues(eng, n, threads, keySize, &Values{vals: [][]byte{FillValue(valueSize)}}, progress)
}

// PrefillValues is Prefill with the value of id drawn from values.
func PrefillValues(eng Engine, n, threads, keySize int, values *Values, progress bool) error {
	bar := NewProgress(progress, int64(n), "prefill")
	defer bar.Done()
	errs := make([]error, threads)
	var wg sync.WaitGroup
	for tid := 0; tid < threads; tid++ {
		wg.Add(1)
		go func(tid int) {
			defer wg.Done()
			start, length := splitRange(n, threads, tid)
			var key []byte
			for lo := start; lo < start+length; lo += PrefillBatch {
				hi := min(lo+PrefillBatch, start+length)
				var err error
				for attempt := 0; attempt < 10; attempt++ {
					if err = putRange(eng, lo, hi, keySize, values, &key); err == nil {
						break
					}
				}
				if err != nil {
					errs[tid] = err
					return
				}
				bar.Add(int64(hi - lo))
			}
		}(tid)
	}
	wg.Wait()
	return errors.Join(errs...)
}

func putRange(eng Engine, lo, hi, keySize int, values *Values, key *[]byte) error {
	b, err := eng.Begin()
	if err != nil {
		return err
	}
	for id := lo; id < hi; id++ {
		*key = AppendKey((*key)[:0], uint64(id), keySize)
		if err := b.Put(*key, values.At(uint64(id))); err != nil {
			b.Rollback()
			return err
		}
	}
	return b.Commit()
}

type measured struct {
	total, errs uint64
	userBytes   uint64 // key+value bytes of the updates that succeeded, warm-up included
	elapsed     time.Duration
	cpu         time.Duration // process CPU (user+system) during the phase
	lat         *Latency
	rt          RuntimeDelta
}

// worker is one goroutine's reused state: nothing in the timed loop
// allocates on the harness side.
type worker struct {
	rng             *rand.Rand
	key, lo, hi     []byte
	buf             []byte
	values          *Values
	lat             *Latency
	total, errs     uint64
	userBytes       uint64 // key+value bytes of successful updates (warm-up included)
	firstErrLogged  bool
	eng             Engine
	w               Workload
	chooser         Chooser
	path            ReadPath
	keySize, scanLn int
}

func (wk *worker) op(timed bool) {
	start := time.Now()
	kind := wk.w.PickOp(wk.rng)
	id := wk.chooser.Next(wk.rng)
	var err error
	switch kind {
	case OpRead:
		wk.key = AppendKey(wk.key[:0], id, wk.keySize)
		wk.buf, err = wk.eng.Read(wk.buf[:0], wk.key, wk.path)
	case OpUpdate:
		wk.key = AppendKey(wk.key[:0], id, wk.keySize)
		v := wk.values.At(id + wk.total)
		if err = wk.eng.Update(wk.key, v); err == nil {
			wk.userBytes += uint64(len(wk.key) + len(v))
		}
	case OpScan:
		wk.lo = AppendPrefix(wk.lo[:0], id)
		wk.hi = PrefixUpperBound(wk.hi[:0], wk.lo)
		_, err = wk.eng.Scan(wk.lo, wk.hi, wk.scanLn, wk.path)
	}
	if !timed {
		return
	}
	wk.lat.Record(time.Since(start))
	wk.total++
	if err != nil {
		wk.errs++
		if !wk.firstErrLogged && !errors.Is(err, ErrNotFound) && !isConflict(err) {
			wk.firstErrLogged = true
			fmt.Fprintf(os.Stderr, "kvbench: first error of a worker: %v\n", err)
		}
	}
}

// conflictErrs are the adapters' conflict sentinels (registered in init),
// so unexpected errors can be told apart from expected conflicts in logs.
var conflictErrs []error

func isConflict(err error) bool {
	for _, c := range conflictErrs {
		if errors.Is(err, c) {
			return true
		}
	}
	return false
}

func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func measure(eng Engine, w Workload, chooser Chooser, path ReadPath, o RunOptions, values *Values) (measured, error) {
	workers := make([]*worker, o.Threads)
	for tid := range workers {
		workers[tid] = &worker{
			rng:     rand.New(rand.NewPCG(o.Seed, uint64(tid)*0x9E3779B97F4A7C15+1)),
			key:     make([]byte, 0, o.KeySize+16),
			lo:      make([]byte, 0, 16),
			hi:      make([]byte, 0, 16),
			buf:     make([]byte, 0, o.ValueSize+64),
			values:  values,
			lat:     NewLatency(),
			eng:     eng,
			w:       w,
			chooser: chooser,
			path:    path,
			keySize: o.KeySize,
			scanLn:  o.ScanLen,
		}
	}

	// Warm-up: every worker runs untimed ops until the warm-up deadline.
	if o.WarmupSecs > 0 {
		bar := TimedProgress(o.Progress, time.Duration(o.WarmupSecs)*time.Second, "warmup")
		deadline := time.Now().Add(time.Duration(o.WarmupSecs) * time.Second)
		var wg sync.WaitGroup
		for _, wk := range workers {
			wg.Add(1)
			go func(wk *worker) {
				defer wg.Done()
				for time.Now().Before(deadline) {
					wk.op(false)
				}
			}(wk)
		}
		wg.Wait()
		bar.Done()
	}

	// Measure: the clock starts when the workers are released together and
	// stops after the last one returns (kv_bench's elapsed_us).
	var bar *Progress
	if o.MeasureSecs > 0 {
		bar = TimedProgress(o.Progress, time.Duration(o.MeasureSecs)*time.Second, "measure")
	} else {
		bar = NewProgress(o.Progress, int64(o.Iterations), "measure")
	}
	release := make(chan struct{})
	var wg sync.WaitGroup
	var deadline time.Time
	for tid, wk := range workers {
		wg.Add(1)
		_, quota := splitRange(o.Iterations, o.Threads, tid)
		go func(wk *worker, quota int) {
			defer wg.Done()
			<-release
			if o.MeasureSecs > 0 {
				for time.Now().Before(deadline) {
					wk.op(true)
				}
				return
			}
			for i := 0; i < quota; i++ {
				wk.op(true)
				if i&1023 == 1023 {
					bar.Add(1024)
				}
			}
		}(wk, quota)
	}
	runtime.GC() // start every engine's measurement from a collected heap
	if o.MemProfile != "" {
		if err := writeProfile("allocs", o.MemProfile+".base"); err != nil {
			return measured{}, err
		}
	}
	if o.CPUProfile != "" {
		f, err := startRecording(o.CPUProfile, pprof.StartCPUProfile)
		if err != nil {
			return measured{}, err
		}
		defer f.Close()
	}
	if o.BlockProfile != "" {
		runtime.SetBlockProfileRate(int((10 * time.Microsecond).Nanoseconds()))
		runtime.SetMutexProfileFraction(10)
	}
	if o.Trace != "" {
		f, err := startRecording(o.Trace, trace.Start)
		if err != nil {
			return measured{}, err
		}
		defer f.Close()
	}
	before := ReadRuntime()
	cpuBefore := processCPU()
	start := time.Now()
	deadline = start.Add(time.Duration(o.MeasureSecs) * time.Second)
	close(release)
	wg.Wait()
	elapsed := time.Since(start)
	cpu := processCPU() - cpuBefore
	after := ReadRuntime()
	if o.CPUProfile != "" {
		pprof.StopCPUProfile()
	}
	if o.Trace != "" {
		trace.Stop()
	}
	if o.BlockProfile != "" {
		runtime.SetBlockProfileRate(0)
		runtime.SetMutexProfileFraction(0)
		if err := writeProfile("block", o.BlockProfile); err != nil {
			return measured{}, err
		}
		if err := writeProfile("mutex", o.BlockProfile+".mutex"); err != nil {
			return measured{}, err
		}
	}
	bar.Done()
	if o.MemProfile != "" {
		if err := writeProfile("allocs", o.MemProfile); err != nil {
			return measured{}, err
		}
	}

	m := measured{elapsed: elapsed, cpu: cpu, lat: NewLatency(), rt: after.Sub(before)}
	for _, wk := range workers {
		m.total += wk.total
		m.errs += wk.errs
		m.userBytes += wk.userBytes
		m.lat.Merge(wk.lat)
	}
	return m, nil
}

// startRecording creates name and starts a recorder writing to it (the CPU
// profile, the execution trace). The caller stops the recorder, then closes
// the file; on error nothing is left open.
func startRecording(name string, start func(io.Writer) error) (*os.File, error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
