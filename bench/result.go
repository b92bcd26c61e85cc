package bench

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// KVBenchHeader is kv_bench's CSV header: the 27 columns every row starts
// with, so kv_bench tooling reads our files unchanged.
const KVBenchHeader = "engine,workload_id,mode,durability_mode,threads,key_size,value_size,prefill_keys," +
	"shared_keyspace,distribution,zipf_theta,read_pct,update_pct,scan_pct,scan_len,read_path,warmup_secs," +
	"measure_secs,total_op,ok_op,err_op,ops,p50_us,p95_us,p99_us,p999_us,elapsed_us"

// ExtraHeader lists the columns kvbench appends after kv_bench's 27.
const ExtraHeader = "hdr_p50_us,hdr_p99_us,hdr_p999_us,hdr_max_us,gc_cpu_fraction,gc_pause_p99_us,gc_pauses," +
	"peak_heap_bytes,alloc_bytes_per_op,alloc_objects_per_op,disk_bytes,space_amp,go_version,gomaxprocs," +
	"engine_durability,update_mode,cache_bytes,value_threshold,seed,repeat,prefill_secs,settle_secs,cpu_us_per_op," +
	"logical_bytes,settled_disk_bytes,settled_space_amp,write_bytes,user_bytes,write_amp,wchar_bytes," +
	"cancelled_write_bytes,post_settle_secs,value_kind,compression"

// Header is the full CSV header of a kvbench result file.
const Header = KVBenchHeader + "," + ExtraHeader

// Result is one `kvbench run`: one CSV row.
type Result struct {
	Engine         string
	WorkloadID     string
	Mode           string
	Durability     string
	Threads        int
	KeySize        int
	ValueSize      int
	PrefillKeys    int
	SharedKeyspace bool
	Distribution   string
	ZipfTheta      float64
	ReadPct        int
	UpdatePct      int
	ScanPct        int
	ScanLen        int
	ReadPath       string
	WarmupSecs     int
	MeasureSecs    int
	TotalOp        uint64
	OkOp           uint64
	ErrOp          uint64
	Ops            float64
	P50, P95       uint64 // kv_bench log2 buckets, µs
	P99, P999      uint64
	ElapsedUs      uint64

	HDRP50, HDRP99, HDRP999, HDRMax float64 // exact, µs
	GCCPUFraction                   float64
	GCPauseP99Us                    float64
	GCPauses                        uint64
	PeakHeapBytes                   uint64
	AllocBytesPerOp                 float64
	AllocObjectsPerOp               float64
	DiskBytes                       int64
	SpaceAmp                        float64
	GoVersion                       string
	GOMAXPROCS                      int
	EngineDurability                string
	UpdateMode                      string
	CacheBytes                      int64
	ValueThreshold                  int
	Seed                            uint64
	Repeat                          int
	PrefillSecs, SettleSecs         float64
	// CPUUsPerOp is the process's user+system CPU time during the measure
	// phase (getrusage; background work included) per op: a cost that a
	// busy machine disturbs less than ops/s.
	CPUUsPerOp float64

	// The space columns (bench/README.md, "Space and write
	// amplification"). LogicalBytes is live keys x (key+value) at the
	// end; SettledDiskBytes the directory after the post-measure settle
	// (--settle-after; 0 when it is off) and SettledSpaceAmp it over
	// LogicalBytes. WriteBytes, WChar and CancelledWriteBytes are the
	// process's /proc/self/io counters over the run (open to the end of
	// the settle; 0 where /proc/self/io is unavailable); UserBytes the
	// key+value bytes the workload committed, prefill and warm-up
	// included; WriteAmp is WriteBytes / UserBytes. PostSettleSecs is the
	// length of the post-measure settle.
	LogicalBytes, SettledDiskBytes int64
	SettledSpaceAmp                float64
	WriteBytes, UserBytes          uint64
	WriteAmp                       float64
	WChar, CancelledWriteBytes     uint64
	PostSettleSecs                 float64
	// ValueKind and Compression are --value-kind and --compression.
	ValueKind, Compression string
}

// StdoutLine is the one line `kvbench run` prints (kv_bench's format).
func (r *Result) StdoutLine(resultFile string) string {
	return fmt.Sprintf("engine=%s workload=%s mode=%s durability=%s threads=%d total_op=%d ok_op=%d err_op=%d ops=%.2f p99_us=%d result_file=%s",
		r.Engine, r.WorkloadID, r.Mode, r.Durability, r.Threads, r.TotalOp, r.OkOp, r.ErrOp, r.Ops, r.P99, resultFile)
}

// clean makes a free-text field safe for the plain (unquoted) CSV kv_bench
// writes: commas and line breaks become spaces.
func clean(s string) string {
	return strings.NewReplacer(",", " ", "\n", " ", "\r", " ").Replace(s)
}

// Fields returns the row in Header order.
func (r *Result) Fields() []string {
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	i := strconv.Itoa
	f := func(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	return []string{
		clean(r.Engine), clean(r.WorkloadID), clean(r.Mode), r.Durability, i(r.Threads), i(r.KeySize),
		i(r.ValueSize), i(r.PrefillKeys), strconv.FormatBool(r.SharedKeyspace), r.Distribution,
		f(r.ZipfTheta, 4), i(r.ReadPct), i(r.UpdatePct), i(r.ScanPct), i(r.ScanLen), r.ReadPath,
		i(r.WarmupSecs), i(r.MeasureSecs), u(r.TotalOp), u(r.OkOp), u(r.ErrOp),
		u(uint64(r.Ops)), // kv_bench writes ops as an integer
		u(r.P50), u(r.P95), u(r.P99), u(r.P999), u(r.ElapsedUs),

		f(r.HDRP50, 2), f(r.HDRP99, 2), f(r.HDRP999, 2), f(r.HDRMax, 2),
		f(r.GCCPUFraction, 4), f(r.GCPauseP99Us, 1), u(r.GCPauses), u(r.PeakHeapBytes),
		f(r.AllocBytesPerOp, 1), f(r.AllocObjectsPerOp, 2), strconv.FormatInt(r.DiskBytes, 10),
		f(r.SpaceAmp, 3), clean(r.GoVersion), i(r.GOMAXPROCS), clean(r.EngineDurability),
		clean(r.UpdateMode), strconv.FormatInt(r.CacheBytes, 10), i(r.ValueThreshold),
		u(r.Seed), i(r.Repeat), f(r.PrefillSecs, 2), f(r.SettleSecs, 2), f(r.CPUUsPerOp, 3),
		strconv.FormatInt(r.LogicalBytes, 10), strconv.FormatInt(r.SettledDiskBytes, 10),
		f(r.SettledSpaceAmp, 3), u(r.WriteBytes), u(r.UserBytes), f(r.WriteAmp, 3), u(r.WChar),
		u(r.CancelledWriteBytes), f(r.PostSettleSecs, 2), clean(r.ValueKind), clean(r.Compression),
	}
}

// AppendCSV appends r to path, writing the header first when the file is
// new or empty.
func AppendCSV(path string, r *Result) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	w := bufio.NewWriter(f)
	if st.Size() == 0 {
		w.WriteString(Header + "\n")
	}
	w.WriteString(strings.Join(r.Fields(), ",") + "\n")
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadCSV reads result rows by column name, so files written by kv_bench
// (27 columns) or by older kvbench versions parse; missing columns stay
// zero. Repeated header lines (concatenated files) are skipped.
func ReadCSV(rd io.Reader) ([]Result, error) {
	cr := csv.NewReader(rd)
	cr.FieldsPerRecord = -1
	recs, err := cr.ReadAll()
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, nil
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[strings.TrimSpace(name)] = i
	}
	var out []Result
	for n, rec := range recs[1:] {
		if len(rec) > 0 && rec[0] == "engine" {
			continue
		}
		p := rowParser{rec: rec, col: col}
		r := Result{
			Engine: p.s("engine"), WorkloadID: p.s("workload_id"), Mode: p.s("mode"),
			Durability: p.s("durability_mode"), Threads: p.i("threads"), KeySize: p.i("key_size"),
			ValueSize: p.i("value_size"), PrefillKeys: p.i("prefill_keys"),
			SharedKeyspace: p.s("shared_keyspace") == "true", Distribution: p.s("distribution"),
			ZipfTheta: p.f("zipf_theta"), ReadPct: p.i("read_pct"), UpdatePct: p.i("update_pct"),
			ScanPct: p.i("scan_pct"), ScanLen: p.i("scan_len"), ReadPath: p.s("read_path"),
			WarmupSecs: p.i("warmup_secs"), MeasureSecs: p.i("measure_secs"),
			TotalOp: p.u("total_op"), OkOp: p.u("ok_op"), ErrOp: p.u("err_op"), Ops: p.f("ops"),
			P50: p.u("p50_us"), P95: p.u("p95_us"), P99: p.u("p99_us"), P999: p.u("p999_us"),
			ElapsedUs: p.u("elapsed_us"),
			HDRP50:    p.f("hdr_p50_us"), HDRP99: p.f("hdr_p99_us"), HDRP999: p.f("hdr_p999_us"),
			HDRMax: p.f("hdr_max_us"), GCCPUFraction: p.f("gc_cpu_fraction"),
			GCPauseP99Us: p.f("gc_pause_p99_us"), GCPauses: p.u("gc_pauses"),
			PeakHeapBytes: p.u("peak_heap_bytes"), AllocBytesPerOp: p.f("alloc_bytes_per_op"),
			AllocObjectsPerOp: p.f("alloc_objects_per_op"), DiskBytes: int64(p.u("disk_bytes")),
			SpaceAmp: p.f("space_amp"), GoVersion: p.s("go_version"), GOMAXPROCS: p.i("gomaxprocs"),
			EngineDurability: p.s("engine_durability"), UpdateMode: p.s("update_mode"),
			CacheBytes: int64(p.u("cache_bytes")), ValueThreshold: p.i("value_threshold"),
			Seed: p.u("seed"), Repeat: p.i("repeat"), PrefillSecs: p.f("prefill_secs"),
			SettleSecs: p.f("settle_secs"), CPUUsPerOp: p.f("cpu_us_per_op"),
			LogicalBytes: int64(p.u("logical_bytes")), SettledDiskBytes: int64(p.u("settled_disk_bytes")),
			SettledSpaceAmp: p.f("settled_space_amp"), WriteBytes: p.u("write_bytes"),
			UserBytes: p.u("user_bytes"), WriteAmp: p.f("write_amp"), WChar: p.u("wchar_bytes"),
			CancelledWriteBytes: p.u("cancelled_write_bytes"), PostSettleSecs: p.f("post_settle_secs"),
			ValueKind: p.s("value_kind"), Compression: p.s("compression"),
		}
		if p.err != nil {
			return nil, fmt.Errorf("row %d: %w", n+2, p.err)
		}
		out = append(out, r)
	}
	return out, nil
}

type rowParser struct {
	rec []string
	col map[string]int
	err error
}

func (p *rowParser) s(name string) string {
	i, ok := p.col[name]
	if !ok || i >= len(p.rec) {
		return ""
	}
	return strings.TrimSpace(p.rec[i])
}

func (p *rowParser) f(name string) float64 {
	v := p.s(name)
	if v == "" {
		return 0
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("column %s: %w", name, err)
	}
	return x
}

func (p *rowParser) u(name string) uint64 {
	if x, err := strconv.ParseUint(p.s(name), 10, 64); err == nil {
		return x // exact for integers (seeds use all 64 bits)
	}
	x := p.f(name)
	if x < 0 {
		return 0
	}
	return uint64(x)
}

func (p *rowParser) i(name string) int { return int(p.f(name)) }
