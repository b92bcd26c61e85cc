package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHeaderStartsWithKVBench(t *testing.T) {
	cols := strings.Split(Header, ",")
	want := strings.Split("engine,workload_id,mode,durability_mode,threads,key_size,value_size,prefill_keys,shared_keyspace,distribution,zipf_theta,read_pct,update_pct,scan_pct,scan_len,read_path,warmup_secs,measure_secs,total_op,ok_op,err_op,ops,p50_us,p95_us,p99_us,p999_us,elapsed_us", ",")
	if len(want) != 27 {
		t.Fatalf("reference header has %d columns", len(want))
	}
	for i, c := range want {
		if cols[i] != c {
			t.Fatalf("column %d = %q, want %q", i, cols[i], c)
		}
	}
	for _, extra := range []string{"hdr_p99_us", "hdr_p999_us", "hdr_max_us", "gc_cpu_fraction", "gc_pause_p99_us",
		"peak_heap_bytes", "alloc_bytes_per_op", "alloc_objects_per_op", "disk_bytes", "space_amp",
		"go_version", "gomaxprocs", "engine_durability", "update_mode"} {
		found := false
		for _, c := range cols[27:] {
			found = found || c == extra
		}
		if !found {
			t.Errorf("extra column %s missing", extra)
		}
	}
	seen := map[string]bool{}
	for _, c := range cols {
		if seen[c] {
			t.Errorf("column %s twice", c)
		}
		seen[c] = true
	}
	var r Result
	if n := len(r.Fields()); n != len(cols) {
		t.Fatalf("row has %d fields, header %d", n, len(cols))
	}
}

func sampleResult() Result {
	return Result{
		Engine: "bwkv", WorkloadID: "W5", Mode: "mixed", Durability: "relaxed", Threads: 2,
		KeySize: 32, ValueSize: 1024, PrefillKeys: 200000, SharedKeyspace: true,
		Distribution: "uniform", ZipfTheta: 0.99, ReadPct: 70, UpdatePct: 25, ScanPct: 5,
		ScanLen: 100, ReadPath: "snapshot", WarmupSecs: 3, MeasureSecs: 20,
		TotalOp: 1000, OkOp: 990, ErrOp: 10, Ops: 12345.678, P50: 2, P95: 8, P99: 16, P999: 64,
		ElapsedUs: 20000123, HDRP50: 2.5, HDRP99: 17.25, HDRP999: 80.5, HDRMax: 1500.75,
		GCCPUFraction: 0.0123, GCPauseP99Us: 150, GCPauses: 7, PeakHeapBytes: 1 << 30,
		AllocBytesPerOp: 12.5, AllocObjectsPerOp: 0.25, DiskBytes: 1 << 28, SpaceAmp: 1.25,
		GoVersion: "go1.26", GOMAXPROCS: 2, EngineDurability: "bwkv.DurabilityRelaxed, x",
		UpdateMode: "rmw_txn", CacheBytes: 256 << 20, ValueThreshold: 8192,
		Seed: 18446744073709551615, Repeat: 2, PrefillSecs: 1.5, SettleSecs: 0.25, CPUUsPerOp: 3.125,
		LogicalBytes: 211200000, SettledDiskBytes: 250000000, SettledSpaceAmp: 1.184,
		WriteBytes: 9000000000, UserBytes: 3000000000, WriteAmp: 3, WChar: 8000000000,
		CancelledWriteBytes: 4096, PostSettleSecs: 12.5, ValueKind: "text", Compression: "fast",
	}
}

func TestCSVRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.csv")
	r := sampleResult()
	for i := 0; i < 2; i++ {
		if err := AppendCSV(path, &r); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 || lines[0] != Header {
		t.Fatalf("file:\n%s", data)
	}
	if !strings.HasPrefix(lines[1], "bwkv,W5,mixed,relaxed,2,32,1024,200000,true,uniform,0.9900,70,25,5,100,snapshot,3,20,1000,990,10,12345,2,8,16,64,20000123,") {
		t.Fatalf("row: %s", lines[1])
	}
	f, _ := os.Open(path)
	defer f.Close()
	rows, err := ReadCSV(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	got := rows[0]
	want := r
	want.Ops = 12345 // written as an integer, as kv_bench does
	want.EngineDurability = "bwkv.DurabilityRelaxed  x"
	if got != want {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
}

func TestReadCSVKVBenchOnly(t *testing.T) {
	in := KVBenchHeader + "\nmace,W1,mixed,relaxed,1,16,1024,1000,true,uniform,0.9900,95,5,0,100,snapshot,0,10,100,100,0,10,1,2,4,8,10000000\n"
	rows, err := ReadCSV(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Engine != "mace" || rows[0].P99 != 4 || rows[0].HDRP99 != 0 {
		t.Fatalf("rows %+v", rows)
	}
}

// TestReadCSVBeforeSpaceColumns reads a row written before the space
// columns were appended (the header of commit 5363cf0): every older column
// parses and the space columns stay zero.
func TestReadCSVBeforeSpaceColumns(t *testing.T) {
	old := strings.TrimSuffix(Header, ",logical_bytes,settled_disk_bytes,settled_space_amp,write_bytes,user_bytes,write_amp,wchar_bytes,cancelled_write_bytes,post_settle_secs,value_kind,compression")
	if old == Header {
		t.Fatal("the space columns are not the end of Header")
	}
	r := sampleResult()
	fields := r.Fields()
	n := len(strings.Split(old, ","))
	in := old + "\n" + strings.Join(fields[:n], ",") + "\n"
	rows, err := ReadCSV(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := r
	want.Ops = 12345
	want.EngineDurability = "bwkv.DurabilityRelaxed  x"
	want.LogicalBytes, want.SettledDiskBytes, want.SettledSpaceAmp = 0, 0, 0
	want.WriteBytes, want.UserBytes, want.WriteAmp = 0, 0, 0
	want.WChar, want.CancelledWriteBytes, want.PostSettleSecs = 0, 0, 0
	want.ValueKind, want.Compression = "", ""
	if len(rows) != 1 || rows[0] != want {
		t.Fatalf("old row:\n got %+v\nwant %+v", rows, want)
	}
	// An old file and a new one concatenated (report over both): the
	// first header names the columns, so the new row's extra fields are
	// ignored, not misread.
	in += Header + "\n" + strings.Join(fields, ",") + "\n"
	rows, err = ReadCSV(strings.NewReader(in))
	if err != nil || len(rows) != 2 || rows[1] != want {
		t.Fatalf("concatenated: %v %+v", err, rows)
	}
}

func TestStdoutLine(t *testing.T) {
	r := sampleResult()
	got := r.StdoutLine("out.csv")
	want := "engine=bwkv workload=W5 mode=mixed durability=relaxed threads=2 total_op=1000 ok_op=990 err_op=10 ops=12345.68 p99_us=16 result_file=out.csv"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestLog2Hist(t *testing.T) {
	var h Log2Hist
	if h.Quantile(0.99) != 0 {
		t.Fatal("empty histogram")
	}
	for i := 0; i < 98; i++ {
		h.Record(3 * time.Microsecond) // bucket 1 (2..3 µs)
	}
	h.Record(100 * time.Microsecond) // bucket 6 (64..127)
	h.Record(500 * time.Nanosecond)  // 0 µs counts as 1 µs: bucket 0
	if got := h.Quantile(0.50); got != 2 {
		t.Errorf("p50 = %d", got)
	}
	if got := h.Quantile(0.99); got != 2 {
		t.Errorf("p99 = %d (99 of 100 ops are <= bucket 1)", got)
	}
	if got := h.Quantile(0.999); got != 64 {
		t.Errorf("p999 = %d", got)
	}
	if got := h.Quantile(0.001); got != 1 {
		t.Errorf("p0.1 = %d", got)
	}
}
