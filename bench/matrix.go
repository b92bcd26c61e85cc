package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Profile is a key/value size pair (bench/README.md: P1 16/128, P2 32/1024,
// P3 32/4096, P4 32/16384).
type Profile struct{ KeySize, ValueSize int }

// Profiles are the harness's named profiles.
var Profiles = map[string]Profile{
	"P1": {16, 128}, "P2": {32, 1024}, "P3": {32, 4096}, "P4": {32, 16384},
}

// ParseProfile accepts a name (P2) or key/value sizes (32/1024).
func ParseProfile(s string) (Profile, error) {
	s = strings.TrimSpace(s)
	if p, ok := Profiles[strings.ToUpper(s)]; ok {
		return p, nil
	}
	k, v, ok := strings.Cut(s, "/")
	if ok {
		ki, err1 := strconv.Atoi(k)
		vi, err2 := strconv.Atoi(v)
		if err1 == nil && err2 == nil && ki > 0 && vi > 0 {
			return Profile{ki, vi}, nil
		}
	}
	return Profile{}, fmt.Errorf("invalid profile %q (P1..P4 or KEY/VALUE)", s)
}

// MatrixOptions are the flags of `kvbench matrix`.
type MatrixOptions struct {
	Engines     []string
	Workloads   []string
	Threads     []int
	Profiles    []Profile
	PrefillKeys int
	WarmupSecs  int
	MeasureSecs int
	Repeats     int
	ReadPath    string
	Durability  string
	Path        string // base directory; each run gets a fresh subdirectory
	ResultFile  string
	OutDir      string // report.md and chart.png
	CacheBytes  int64
	ValueThresh int
	Exe         string // the kvbench binary the children run (default: this one)
	Progress    bool
	// Cases are a suite's cross products (Suite). Nil: the plan is the one
	// cross product of Workloads, Threads and Profiles at PrefillKeys,
	// Durability and CacheBytes.
	Cases []MatrixCase
}

// MatrixCase is one cross product of a plan: workloads x threads x
// profiles, at one prefill, durability and cache budget.
type MatrixCase struct {
	Name        string // what the case measures, for the plan's listing
	Workloads   []string
	Threads     []int
	Profiles    []Profile
	PrefillKeys int
	Durability  string
	CacheBytes  int64 // 0: MatrixOptions.CacheBytes (--cache-bytes)
	// ValueKind and Compression are the runs' --value-kind and
	// --compression ("": random and none); ValueThreshold their
	// --value-threshold (0: MatrixOptions.ValueThresh).
	ValueKind      string
	Compression    string
	ValueThreshold int
}

// MatrixRun is one child run of the plan.
type MatrixRun struct {
	Repeat      int
	Engine      string
	Workload    string
	Threads     int
	Profile     Profile
	Durability  string
	PrefillKeys int
	CacheBytes  int64
	// ValueKind, Compression: "" is random and none. ValueThreshold is the
	// run's --value-threshold.
	ValueKind      string
	Compression    string
	ValueThreshold int
}

// Dir is the run's database directory name under MatrixOptions.Path. It
// names every field that tells two runs of a plan apart, so the runs of a
// suite never share a directory.
func (m MatrixRun) Dir() string {
	return fmt.Sprintf("r%d-%s-t%d-%d_%d-%s-n%d-c%s-%s-%s-vt%d-%s", m.Repeat, m.Workload, m.Threads,
		m.Profile.KeySize, m.Profile.ValueSize, m.Durability, m.PrefillKeys, sizeTag(m.CacheBytes),
		orDefault(m.ValueKind, "random"), orDefault(m.Compression, "none"), m.ValueThreshold, m.Engine)
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// sizeTag writes n in MiB ("256MiB") when it is a whole number of MiB,
// else in bytes: one spelling per value.
func sizeTag(n int64) string {
	if n != 0 && n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + "MiB"
	}
	return strconv.FormatInt(n, 10)
}

// SuiteNames lists the names `kvbench matrix --suite` accepts.
func SuiteNames() []string { return []string{"quick", "full"} }

// Suite returns the cases of the named suite; an unknown name is an error
// that lists the valid ones.
func Suite(name string) ([]MatrixCase, error) {
	switch name {
	case "quick": // the standard matrix, relaxed: full's first case
		return fullSuite()[:1], nil
	case "full":
		return fullSuite(), nil
	}
	return nil, fmt.Errorf("unknown suite %q (valid: %s)", name, strings.Join(SuiteNames(), ", "))
}

// fullSuite is the perf issue's case list (bench/README.md, "kvbench
// matrix --suite full"): the standard matrix relaxed and durable, durable
// W4 at 2 and 16 threads, a data set 8x the cache budget, the large-value
// profiles P3 and P4 (the same ~200 MiB of values as P2's 200k keys),
// compressible values with each engine's zstd off and on, and value
// separation at 1 KiB (Pebble's blob files, bwkv's BlobThreshold).
func fullSuite() []MatrixCase {
	all := []string{"W1", "W2", "W2y", "W3", "W4", "W5", "W6"}
	p2 := []Profile{{32, 1024}} // P2
	mixed := []string{"W1", "W3", "W4", "W6"}
	return []MatrixCase{
		{Name: "standard, relaxed", Workloads: all, Threads: []int{1, 2}, Profiles: p2,
			PrefillKeys: 200000, Durability: "relaxed"},
		{Name: "standard, durable", Workloads: all, Threads: []int{1, 2}, Profiles: p2,
			PrefillKeys: 200000, Durability: "durable"},
		{Name: "durable W4, group commit", Workloads: []string{"W4"}, Threads: []int{2, 16}, Profiles: p2,
			PrefillKeys: 100000, Durability: "durable"},
		{Name: "larger than the cache", Workloads: []string{"W1", "W4", "W6"}, Threads: []int{2}, Profiles: p2,
			PrefillKeys: 2000000, Durability: "relaxed", CacheBytes: 256 << 20},
		{Name: "large values P3", Workloads: all, Threads: []int{2}, Profiles: []Profile{{32, 4096}},
			PrefillKeys: 50000, Durability: "relaxed"},
		{Name: "large values P4", Workloads: all, Threads: []int{2}, Profiles: []Profile{{32, 16384}},
			PrefillKeys: 12500, Durability: "relaxed"},
		{Name: "text values, zstd off", Workloads: mixed, Threads: []int{2}, Profiles: p2,
			PrefillKeys: 200000, Durability: "relaxed", ValueKind: "text", Compression: "none"},
		{Name: "text values, zstd on", Workloads: mixed, Threads: []int{2}, Profiles: p2,
			PrefillKeys: 200000, Durability: "relaxed", ValueKind: "text", Compression: "good"},
		{Name: "value separation at 1 KiB", Workloads: all, Threads: []int{2}, Profiles: p2,
			PrefillKeys: 200000, Durability: "relaxed", ValueThreshold: 1024},
	}
}

// cases are the plan's cross products: o.Cases, or the one the flags give.
func (o *MatrixOptions) cases() []MatrixCase {
	if len(o.Cases) > 0 {
		return o.Cases
	}
	return []MatrixCase{{Workloads: o.Workloads, Threads: o.Threads, Profiles: o.Profiles,
		PrefillKeys: o.PrefillKeys, Durability: o.Durability, CacheBytes: o.CacheBytes, ValueThreshold: o.ValueThresh}}
}

// Rotate returns engines rotated left by r (the order of repeat r).
func Rotate(engines []string, r int) []string {
	n := len(engines)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range engines {
		out[i] = engines[(i+r)%n]
	}
	return out
}

// Plan lists the runs in execution order: repeat, then case, profile,
// threads and workload, then the engines in the repeat's rotated order.
// Each run carries its case's durability, prefill and cache budget.
func (o *MatrixOptions) Plan() []MatrixRun {
	var plan []MatrixRun
	for r := 0; r < o.Repeats; r++ {
		order := Rotate(o.Engines, r)
		for _, c := range o.cases() {
			cache := c.CacheBytes
			if cache == 0 {
				cache = o.CacheBytes
			}
			vt := c.ValueThreshold
			if vt == 0 {
				vt = o.ValueThresh
			}
			for _, p := range c.Profiles {
				for _, t := range c.Threads {
					for _, w := range c.Workloads {
						for _, e := range order {
							plan = append(plan, MatrixRun{Repeat: r, Engine: e, Workload: w, Threads: t, Profile: p,
								Durability: c.Durability, PrefillKeys: c.PrefillKeys, CacheBytes: cache,
								ValueKind: c.ValueKind, Compression: c.Compression, ValueThreshold: vt})
						}
					}
				}
			}
		}
	}
	return plan
}

// Rough costs of a run beside its warm-up and measure phases, for
// Estimate: the prefill rate (200k P2 keys take 1.5 to 6 s in results/)
// and process start, settle and close.
const (
	estPrefillKeysPerSec = 50000
	estRunOverheadSecs   = 2
)

// Estimate is a rough duration of plan: per run the warm-up and measure
// seconds, the prefill at ~50k keys/s and ~2 s of start, settle and close.
func (o *MatrixOptions) Estimate(plan []MatrixRun) time.Duration {
	var secs float64
	for _, m := range plan {
		secs += float64(o.WarmupSecs+o.MeasureSecs+estRunOverheadSecs) + float64(m.PrefillKeys)/estPrefillKeysPerSec
	}
	return time.Duration(secs * float64(time.Second)).Round(time.Second)
}

// childArgs are the `kvbench run` arguments of one run.
func (o *MatrixOptions) childArgs(m MatrixRun, dir string) []string {
	return []string{
		"run",
		"--engine", m.Engine, "--workload", m.Workload,
		"--threads", strconv.Itoa(m.Threads),
		"--key-size", strconv.Itoa(m.Profile.KeySize), "--value-size", strconv.Itoa(m.Profile.ValueSize),
		"--prefill-keys", strconv.Itoa(m.PrefillKeys),
		"--warmup-secs", strconv.Itoa(o.WarmupSecs), "--measure-secs", strconv.Itoa(o.MeasureSecs),
		"--read-path", o.ReadPath, "--durability", m.Durability,
		"--cache-bytes", strconv.FormatInt(m.CacheBytes, 10),
		"--value-threshold", strconv.Itoa(m.ValueThreshold),
		"--value-kind", orDefault(m.ValueKind, "random"), "--compression", orDefault(m.Compression, "none"),
		"--repeat", strconv.Itoa(m.Repeat),
		"--result-file", o.ResultFile,
		"--path", dir,
		"--progress=false",
	}
}

// Matrix runs the plan, each run in a fresh child process (`kvbench run`)
// and a fresh directory under o.Path, so no engine inherits another's heap,
// page cache warmth in the process, or goroutines. Each child's stdout line
// is copied to out. A failed child is reported and the matrix goes on; the
// error lists every failure.
func Matrix(o MatrixOptions, out io.Writer) error {
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		o.Exe = exe
	}
	if err := os.MkdirAll(o.Path, 0o755); err != nil {
		return err
	}
	plan := o.Plan()
	bar := NewProgress(o.Progress, int64(len(plan)), "matrix")
	var failures []error
	start := time.Now()
	for i, m := range plan {
		dir := filepath.Join(o.Path, m.Dir())
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		args := o.childArgs(m, dir)
		cmd := exec.Command(o.Exe, args...)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintf(out, "[%d/%d %s] %s\n", i+1, len(plan), time.Since(start).Round(time.Second), sc.Text())
		}
		if err := cmd.Wait(); err != nil {
			failures = append(failures, fmt.Errorf("%s %s t%d %s n%d r%d: %w", m.Engine, m.Workload, m.Threads,
				m.Durability, m.PrefillKeys, m.Repeat, err))
			fmt.Fprintf(out, "[%d/%d] FAILED: %s %s\n", i+1, len(plan), o.Exe, strings.Join(args, " "))
		}
		os.RemoveAll(dir) // a child killed mid-run leaves its directory
		bar.Add(1)
	}
	bar.Done()
	return errors.Join(failures...)
}
