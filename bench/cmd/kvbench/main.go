// Command kvbench benchmarks bwkv side by side with Pebble, Badger and bbolt
// (kv_bench-compatible `run`, `matrix`, `report`) and runs the bulk-import
// tail gate (`bulk`). See bench/README.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bwkv/bwkv/bench"
)

const usage = `usage: kvbench <command> [flags]

commands:
  run     one engine, one workload (kv_bench flags); prints one line, appends a CSV row
  matrix  every engine x case, each run in a fresh child process; then the report
  report  wins / median ratios per peer, CV gates, chart, from CSV files
  bulk    the embedder bulk-import tail gate (exit 1 when it fails)

engines compiled in: %s
run 'kvbench <command> -h' for the flags of a command.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintf(os.Stderr, usage, strings.Join(bench.Engines(), ", "))
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = cmdRun(os.Args[2:])
	case "matrix":
		err = cmdMatrix(os.Args[2:])
	case "report":
		err = cmdReport(os.Args[2:])
	case "bulk":
		err = cmdBulk(os.Args[2:])
	case "-h", "--help", "help":
		fmt.Fprintf(os.Stdout, usage, strings.Join(bench.Engines(), ", "))
		return
	default:
		fmt.Fprintf(os.Stderr, "kvbench: unknown command %q\n"+usage, os.Args[1], strings.Join(bench.Engines(), ", "))
		os.Exit(2)
	}
	var gate gateError
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.As(err, &gate):
		os.Exit(1)
	default:
		fmt.Fprintf(os.Stderr, "kvbench %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// gateError marks a completed run whose verdict is a failure (already
// printed): exit 1 without a second message.
type gateError struct{ msg string }

func (g gateError) Error() string { return g.msg }

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("kvbench "+name, flag.ContinueOnError)
	return fs
}

func cmdRun(args []string) error {
	o := bench.DefaultRunOptions()
	fs := newFlags("run")
	fs.StringVar(&o.Engine, "engine", "bwkv", "engine: "+strings.Join(bench.Engines(), ", "))
	fs.StringVar(&o.Workload, "workload", "", "W1, W2, W2y, W3, W4, W5 or W6")
	fs.IntVar(&o.Threads, "threads", o.Threads, "worker goroutines")
	fs.IntVar(&o.KeySize, "key-size", o.KeySize, "key bytes (>= 16)")
	fs.IntVar(&o.ValueSize, "value-size", o.ValueSize, "value bytes (>= 16)")
	fs.StringVar(&o.ValueKind, "value-kind", o.ValueKind, "value content: random (incompressible) or text (JSON-like records)")
	fs.StringVar(&o.Compression, "compression", "none", "none, fast (bwkv S2, Pebble Fastest, Badger Snappy) or good (bwkv zstd, Pebble Good, Badger ZSTD); bbolt has none")
	fs.IntVar(&o.PrefillKeys, "prefill-keys", 0, "keys loaded before the run (0: --iterations)")
	fs.IntVar(&o.WarmupSecs, "warmup-secs", 0, "untimed warm-up seconds")
	fs.IntVar(&o.MeasureSecs, "measure-secs", 0, "timed seconds (0: run --iterations ops)")
	fs.IntVar(&o.Iterations, "iterations", o.Iterations, "ops when --measure-secs is 0 (kv_bench -i)")
	fs.IntVar(&o.ScanLen, "scan-len", o.ScanLen, "pairs per scan")
	fs.Float64Var(&o.ZipfTheta, "zipf-theta", o.ZipfTheta, "theta of W2 and W2y")
	fs.StringVar(&o.ReadPath, "read-path", o.ReadPath, "snapshot or rw_txn")
	fs.StringVar(&o.Durability, "durability", o.Durability, "relaxed or durable")
	fs.StringVar(&o.Path, "path", "", "database directory (must not exist or be empty)")
	fs.BoolVar(&o.NoCleanup, "no-cleanup", false, "keep the database directory")
	resultFile := fs.String("result-file", "benchmark_results.csv", "CSV file the row is appended to")
	fs.Int64Var(&o.CacheBytes, "cache-bytes", o.CacheBytes, "cache budget of every engine")
	fs.IntVar(&o.ValueThreshold, "value-threshold", o.ValueThreshold, "value-separation threshold where an engine has one")
	fs.Uint64Var(&o.Seed, "seed", 0, "RNG seed (0: from the clock; recorded in the row)")
	fs.IntVar(&o.Repeat, "repeat", 0, "repeat number recorded in the row (set by matrix)")
	fs.BoolVar(&o.Progress, "progress", bench.ProgressAuto(), "progress bars on stderr")
	fs.IntVar(&o.SettleAfter, "settle-after", 0, "post-measure settle: stop writes, settle the engine, measure the directory once its size holds for 10 s or after this many seconds (0: off)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the measure phase")
	fs.StringVar(&o.MemProfile, "memprofile", "", "write allocation profiles at the start (FILE.base) and end (FILE) of the measure phase")
	fs.StringVar(&o.BlockProfile, "blockprofile", "", "write the blocking (FILE) and mutex contention (FILE.mutex) profiles of the measure phase")
	fs.StringVar(&o.Trace, "trace", "", "write a runtime execution trace of the measure phase (go tool trace -pprof=sched|sync|syscall FILE)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r, err := bench.Run(o)
	if err != nil {
		return err
	}
	if err := bench.AppendCSV(*resultFile, r); err != nil {
		return fmt.Errorf("failed to write result file %s: %w", *resultFile, err)
	}
	fmt.Println(r.StdoutLine(*resultFile))
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func cmdMatrix(args []string) error {
	o, rc, suite, err := parseMatrix(args)
	if err != nil {
		return err
	}
	plan := o.Plan()
	if suite != "" {
		for _, c := range o.Cases {
			fmt.Fprintf(os.Stderr, "kvbench matrix: suite %s: %s: %s, threads %v, %s, %d keys\n",
				suite, c.Name, strings.Join(c.Workloads, ","), c.Threads, c.Durability, c.PrefillKeys)
		}
	}
	fmt.Fprintf(os.Stderr, "kvbench matrix: %d runs, estimated %v (warm-up %d s + measure %d s + prefill per run); results appended to %s\n",
		len(plan), o.Estimate(plan), o.WarmupSecs, o.MeasureSecs, o.ResultFile)
	merr := bench.Matrix(o, os.Stdout)
	rerr := writeReport([]string{o.ResultFile}, o.OutDir, rc)
	return errors.Join(merr, rerr)
}

// suiteFixed are the matrix flags a suite's cases set: giving one with
// --suite is an error, not silently ignored.
func suiteFixed() []string {
	return []string{"workloads", "threads", "durability", "prefill-keys", "profiles"}
}

// parseMatrix turns the matrix flags into options, the report config and
// the suite name ("" without --suite).
func parseMatrix(args []string) (bench.MatrixOptions, reportConfig, string, error) {
	fs := newFlags("matrix")
	engines := fs.String("engines", strings.Join(bench.PeerEngines(), ","), "engines, comma-separated")
	var wls []string
	for _, w := range bench.Workloads {
		wls = append(wls, w.ID)
	}
	suite := fs.String("suite", "", "a predefined set of cases ("+strings.Join(bench.SuiteNames(), ", ")+
		"; see bench/README.md) instead of --workloads, --threads, --profiles, --prefill-keys and --durability")
	workloads := fs.String("workloads", strings.Join(wls, ","), "workloads, comma-separated")
	threads := fs.String("threads", "1,2", "thread counts, comma-separated")
	profiles := fs.String("profiles", "P2", "profiles (P1..P4 or KEY/VALUE), comma-separated")
	o := bench.MatrixOptions{}
	fs.IntVar(&o.PrefillKeys, "prefill-keys", 200000, "keys loaded before each run")
	fs.IntVar(&o.WarmupSecs, "warmup-secs", 3, "untimed warm-up seconds per run")
	fs.IntVar(&o.MeasureSecs, "measure-secs", 20, "timed seconds per run")
	fs.IntVar(&o.Repeats, "repeats", 3, "repeats (engine order rotated per repeat)")
	fs.StringVar(&o.ReadPath, "read-path", "snapshot", "snapshot or rw_txn")
	fs.StringVar(&o.Durability, "durability", "relaxed", "relaxed or durable")
	fs.StringVar(&o.Path, "path", "", "base directory for the runs' databases (required)")
	fs.StringVar(&o.ResultFile, "result-file", "matrix_results.csv", "CSV file the rows are appended to")
	fs.StringVar(&o.OutDir, "out", "kvbench-report", "directory for report.md and chart.png")
	fs.Int64Var(&o.CacheBytes, "cache-bytes", 256<<20, "cache budget of every engine (with --suite: of the cases that do not pin their own)")
	fs.IntVar(&o.ValueThresh, "value-threshold", bench.DefaultValueThreshold, "value-separation threshold (a suite case may set its own)")
	fs.BoolVar(&o.Progress, "progress", bench.ProgressAuto(), "progress bar on stderr")
	ro := reportFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, reportConfig{}, "", err
	}
	if o.Path == "" {
		return o, reportConfig{}, "", errors.New("--path is required")
	}
	o.Engines = splitList(*engines)
	for _, e := range o.Engines {
		if !contains(bench.Engines(), e) {
			return o, reportConfig{}, "", fmt.Errorf("unknown engine %q (compiled in: %s)", e, strings.Join(bench.Engines(), ", "))
		}
	}
	var err error
	if *suite != "" {
		err = useSuite(fs, &o, *suite)
	} else {
		err = parseCross(&o, *workloads, *threads, *profiles)
	}
	if err != nil {
		return o, reportConfig{}, "", err
	}
	if abs, err := filepath.Abs(o.ResultFile); err == nil {
		o.ResultFile = abs
	}
	return o, ro.get(), *suite, nil
}

// useSuite sets o.Cases to the named suite's, refusing the flags the
// suite sets.
func useSuite(fs *flag.FlagSet, o *bench.MatrixOptions, name string) error {
	var clash []string
	fs.Visit(func(f *flag.Flag) {
		if contains(suiteFixed(), f.Name) {
			clash = append(clash, "--"+f.Name)
		}
	})
	if len(clash) > 0 {
		return fmt.Errorf("--suite %s sets the cases: drop %s (or run without --suite)", name, strings.Join(clash, ", "))
	}
	cases, err := bench.Suite(name)
	if err != nil {
		return fmt.Errorf("--suite: %w", err)
	}
	o.Cases = cases
	return nil
}

// parseCross fills the one cross product of the flags (no --suite).
func parseCross(o *bench.MatrixOptions, workloads, threads, profiles string) error {
	o.Workloads = splitList(workloads)
	for _, w := range o.Workloads {
		if _, err := bench.LookupWorkload(w); err != nil {
			return err
		}
	}
	for _, t := range splitList(threads) {
		n, err := strconv.Atoi(t)
		if err != nil || n <= 0 {
			return fmt.Errorf("invalid --threads entry %q", t)
		}
		o.Threads = append(o.Threads, n)
	}
	for _, p := range splitList(profiles) {
		pr, err := bench.ParseProfile(p)
		if err != nil {
			return err
		}
		o.Profiles = append(o.Profiles, pr)
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

type reportFlagSet struct {
	target, baselines, p99, chart *string
	cvOps, cvP99                  *float64
}

func reportFlags(fs *flag.FlagSet) reportFlagSet {
	d := bench.DefaultReportOptions()
	return reportFlagSet{
		target:    fs.String("target", d.Target, "engine compared with each baseline"),
		baselines: fs.String("baselines", "", "baselines, comma-separated (default: every other engine)"),
		p99:       fs.String("p99", d.P99, "p99 column for the table and chart: hdr (exact) or log2 (kv_bench)"),
		chart:     fs.String("chart", "chart.png", "chart file name inside --out (.png or .svg)"),
		cvOps:     fs.Float64("max-cv-ops", d.MaxCVOps, "throughput CV gate"),
		cvP99:     fs.Float64("max-cv-p99", d.MaxCVP99, "p99 CV gate"),
	}
}

type reportConfig struct {
	opts  bench.ReportOptions
	chart string
}

func (r reportFlagSet) get() reportConfig {
	o := bench.DefaultReportOptions()
	o.Target, o.Baselines, o.P99 = *r.target, splitList(*r.baselines), *r.p99
	o.MaxCVOps, o.MaxCVP99 = *r.cvOps, *r.cvP99
	return reportConfig{opts: o, chart: *r.chart}
}

func cmdReport(args []string) error {
	fs := newFlags("report")
	out := fs.String("out", "kvbench-report", "directory for report.md and the chart")
	ro := reportFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errors.New("usage: kvbench report [flags] RESULTS.csv [...]")
	}
	return writeReport(fs.Args(), *out, ro.get())
}

func writeReport(files []string, out string, rc reportConfig) error {
	var rows []bench.Result
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		rs, err := bench.ReadCSV(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		rows = append(rows, rs...)
	}
	if len(rows) == 0 {
		return errors.New("no result rows")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	var sb strings.Builder
	if err := bench.WriteReport(&sb, rows, rc.opts); err != nil {
		return err
	}
	charts, err := bench.WriteChart(filepath.Join(out, rc.chart), rows, rc.opts)
	if err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	for _, c := range charts {
		fmt.Fprintf(&sb, "![chart](%s)\n", filepath.Base(c))
	}
	if err := os.WriteFile(filepath.Join(out, "report.md"), []byte(sb.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(sb.String())
	fmt.Fprintf(os.Stderr, "kvbench report: wrote %s and %s\n", filepath.Join(out, "report.md"), strings.Join(charts, ", "))
	return nil
}

func cmdBulk(args []string) error {
	o := bench.DefaultBulkOptions()
	fs := newFlags("bulk")
	fs.StringVar(&o.Engine, "engine", "bwkv", "engine: "+strings.Join(bench.Engines(), ", "))
	fs.IntVar(&o.Records, "records", o.Records, "records to import")
	fs.IntVar(&o.KeySize, "key-size", o.KeySize, "key bytes")
	fs.IntVar(&o.ValueSize, "value-size", o.ValueSize, "value bytes")
	fs.StringVar(&o.ValueKind, "value-kind", o.ValueKind, "value content: random (incompressible) or text (JSON-like records)")
	fs.StringVar(&o.Compression, "compression", "none", "none, fast (bwkv S2, Pebble Fastest, Badger Snappy) or good (bwkv zstd, Pebble Good, Badger ZSTD); bbolt has none")
	fs.StringVar(&o.Order, "order", o.Order, "seq (ascending keys) or random")
	fs.IntVar(&o.TxnSize, "txn-size", o.TxnSize, "records per transaction (1, 100, 1000)")
	fs.IntVar(&o.Window, "window", o.Window, "records per window row")
	fs.StringVar(&o.Durability, "durability", o.Durability, "relaxed or durable")
	fs.StringVar(&o.Path, "path", "", "database directory (must not exist or be empty)")
	fs.Float64Var(&o.MaxSecs, "max-secs", o.MaxSecs, "wall-clock cap in seconds; reaching it fails the gate (0: none)")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the random order")
	fs.Int64Var(&o.CacheBytes, "cache-bytes", o.CacheBytes, "cache budget")
	fs.IntVar(&o.ValueThreshold, "value-threshold", o.ValueThreshold, "value-separation threshold")
	fs.BoolVar(&o.NoCleanup, "no-cleanup", false, "keep the database directory")
	fs.BoolVar(&o.Progress, "progress", bench.ProgressAuto(), "progress bar on stderr")
	resultFile := fs.String("result-file", "bulk_windows.csv", "per-window CSV (overwritten)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := os.Create(*resultFile)
	if err != nil {
		return err
	}
	defer f.Close()
	if o.MaxSecs > 0 {
		// Hang detector: the cap is checked between windows; an operation
		// that never returns is caught here and fails like the cap.
		hard := time.Duration(o.MaxSecs*float64(time.Second)) + time.Minute
		time.AfterFunc(hard, func() {
			fmt.Printf("engine=%s records=%d gate=FAIL (hung: no window completed within the cap + 60s)\n", o.Engine, o.Records)
			os.Exit(1)
		})
	}
	start := time.Now()
	s, err := bench.Bulk(o, f)
	if err != nil {
		return err
	}
	fmt.Println(s.SummaryLine(o, time.Since(start)))
	fmt.Fprintf(os.Stderr, "kvbench bulk: per-window rows in %s\n", *resultFile)
	if !s.Pass {
		return gateError{s.Reason}
	}
	return nil
}
