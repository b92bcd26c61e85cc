package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

func row(engine, w string, threads int, ops, p99 float64) Result {
	return Result{Engine: engine, WorkloadID: w, Threads: threads, KeySize: 32, ValueSize: 1024,
		PrefillKeys: 200000, ReadPath: "snapshot", Durability: "relaxed", Distribution: "uniform",
		Ops: ops, HDRP99: p99, P99: 1 << 4}
}

// synthetic builds a matrix with known answers:
//
//	W1 t1: bwkv 205 vs 100 ops (2.05x, win), p99 10 vs 20 (0.5x, win)
//	W1 t2: bwkv 300 vs 100 ops (3x, win), p99 30 vs 20 (1.5x, loss)
//	W3 t1: bwkv ops 50/100/150 (CV 50%): marked, ratio 1.0
//	W6 t1: pebble p99 10/20/30 (CV 50%): marked, ops ratio 0.5
func synthetic() []Result {
	var rows []Result
	add := func(e, w string, th int, ops, p99 []float64) {
		for i := range ops {
			rows = append(rows, row(e, w, th, ops[i], p99[i]))
		}
	}
	add("bwkv", "W1", 1, []float64{200, 210, 205}, []float64{10, 10, 10})
	add("pebble", "W1", 1, []float64{100, 100, 100}, []float64{20, 20, 20})
	add("bwkv", "W1", 2, []float64{300, 300, 300}, []float64{30, 30, 30})
	add("pebble", "W1", 2, []float64{100, 100, 100}, []float64{20, 20, 20})
	add("bwkv", "W3", 1, []float64{50, 100, 150}, []float64{10, 10, 10})
	add("pebble", "W3", 1, []float64{100, 100, 100}, []float64{10, 10, 10})
	add("bwkv", "W6", 1, []float64{50, 50, 50}, []float64{10, 10, 10})
	add("pebble", "W6", 1, []float64{100, 100, 100}, []float64{10, 20, 30})
	for i := range rows {
		if rows[i].Engine == "pebble" {
			rows[i].UpdateMode = "blind_set"
		}
	}
	return rows
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestMedianCV(t *testing.T) {
	if Median([]float64{3, 1, 2}) != 2 || Median([]float64{4, 1, 3, 2}) != 2.5 || Median(nil) != 0 {
		t.Fatal("median")
	}
	if !near(CV([]float64{1, 2, 3}), 0.5) || CV([]float64{5}) != 0 {
		t.Fatalf("CV = %v", CV([]float64{1, 2, 3}))
	}
}

func TestCompareSynthetic(t *testing.T) {
	o := DefaultReportOptions()
	c := Compare(Aggregate(synthetic(), o), "bwkv", "pebble", o)
	if len(c.Cases) != 4 {
		t.Fatalf("%d cases", len(c.Cases))
	}
	byW := map[string]Summary{}
	for _, s := range c.PerWorkload {
		byW[s.Workload] = s
	}
	w1 := byW["W1"]
	if w1.WinsOps != 2 || w1.Cases != 2 || w1.WinsP99 != 1 || w1.Gated != 0 {
		t.Errorf("W1 summary %+v", w1)
	}
	if !near(w1.MedOpsRatio, (2.05+3)/2) || !near(w1.MedP99Ratio, 1.0) {
		t.Errorf("W1 ratios ops %.4f p99 %.4f", w1.MedOpsRatio, w1.MedP99Ratio)
	}
	w3 := byW["W3"]
	if w3.Cases != 0 || w3.Gated != 1 || w3.WinsOps != 0 || !near(w3.MedOpsRatio, 1) {
		t.Errorf("W3 summary %+v", w3)
	}
	w6 := byW["W6"]
	if w6.Gated != 1 || !near(w6.MedOpsRatio, 0.5) {
		t.Errorf("W6 summary %+v", w6)
	}
	all := c.All
	if all.Total != 4 || all.Cases != 2 || all.WinsOps != 2 || all.WinsP99 != 1 || all.Gated != 2 {
		t.Errorf("all %+v", all)
	}
	if !near(all.MedOpsRatio, (1.0+2.05)/2) {
		t.Errorf("all ops ratio %.4f", all.MedOpsRatio)
	}
	// Order follows the harness's workload table.
	if c.PerWorkload[0].Workload != "W1" || c.PerWorkload[2].Workload != "W6" {
		t.Errorf("order %+v", c.PerWorkload)
	}
}

func TestCompareLog2P99(t *testing.T) {
	o := DefaultReportOptions()
	o.P99 = "log2"
	c := Compare(Aggregate(synthetic(), o), "bwkv", "pebble", o)
	// Every row has log2 p99 = 16: no p99 wins, ratio 1, and no p99 CV.
	if c.All.WinsP99 != 0 || !near(c.All.MedP99Ratio, 1) || c.All.Gated != 1 {
		t.Fatalf("all %+v", c.All)
	}
}

func TestWriteReportAndChart(t *testing.T) {
	rows := synthetic()
	var sb strings.Builder
	if err := WriteReport(&sb, rows, DefaultReportOptions()); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{
		"## bwkv vs pebble",
		"| W1 | 2/2 | 2.52x | 1/2 | 1.00x | 0/2 |",
		"| **all** | 2/2 | 1.52x | 1/2 |",
		"blind sets",
		"* bwkv ops CV 50%",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	for _, name := range []string{"c.png", "c.svg"} {
		files, err := WriteChart(filepath.Join(t.TempDir(), name), rows, DefaultReportOptions())
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(files[0])
		if err != nil || st.Size() < 1000 {
			t.Fatalf("chart %s: %v", name, err)
		}
	}
}

func TestMatrixPlanRotates(t *testing.T) {
	o := MatrixOptions{Engines: []string{"a", "b", "c"}, Workloads: []string{"W1"}, Threads: []int{1},
		Profiles: []Profile{{32, 1024}}, Repeats: 3}
	plan := o.Plan()
	var got []string
	for _, m := range plan {
		got = append(got, m.Engine)
	}
	if strings.Join(got, "") != "abcbcacab" {
		t.Fatalf("order %v", got)
	}
	if p, err := ParseProfile("p2"); err != nil || p != (Profile{32, 1024}) {
		t.Fatalf("P2 = %v %v", p, err)
	}
	if p, err := ParseProfile("16/128"); err != nil || p != (Profile{16, 128}) {
		t.Fatalf("16/128 = %v %v", p, err)
	}
}

func TestBestPeers(t *testing.T) {
	rows := []Result{
		row("bwkv", "W1", 1, 300, 10), row("pebble", "W1", 1, 100, 20), row("badger", "W1", 1, 200, 5),
		row("bwkv", "W6", 1, 400, 1), row("bbolt", "W6", 1, 100, 2), row("quadratic", "W6", 1, 1e6, 0.1),
	}
	o := DefaultReportOptions()
	got := BestPeers(Aggregate(rows, o), o)
	if len(got) != 2 {
		t.Fatalf("%d cases", len(got))
	}
	w1, w6 := got[0], got[1]
	if w1.OpsPeer != "badger" || !near(w1.OpsRatio, 1.5) || w1.Goal != 2 || w1.MeetsOps {
		t.Errorf("W1 ops %+v", w1)
	}
	if w1.P99Peer != "badger" || !near(w1.P99Ratio, 2) || w1.MeetsP99 {
		t.Errorf("W1 p99 %+v", w1)
	}
	// Durable W4 at 16 threads has its own goal: 1.6x meets W4's 1.5x
	// elsewhere, not the 2x asked of group commit.
	g := []Result{row("bwkv", "W4", 16, 160, 1), row("pebble", "W4", 16, 100, 2),
		row("bwkv", "W4", 2, 160, 1), row("pebble", "W4", 2, 100, 2)}
	for i := range g {
		g[i].Durability = "durable"
	}
	d := BestPeers(Aggregate(g, o), o)
	if len(d) != 2 || d[0].Key.Threads != 2 || d[0].Goal != 1.5 || !d[0].MeetsOps || d[1].Goal != 2 || d[1].MeetsOps {
		t.Errorf("durable W4 goals %+v", d)
	}
	// The quadratic fixture is never a peer.
	if w6.OpsPeer != "bbolt" || !near(w6.OpsRatio, 4) || !w6.MeetsOps || !near(w6.P99Ratio, 0.5) || !w6.MeetsP99 {
		t.Errorf("W6 %+v", w6)
	}
	var b strings.Builder
	if err := WriteReport(&b, rows, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| W6/t1 | 400 | bbolt 100 | 4.00x | >= 3.0x: met | 1.0 | bbolt 2.0 | 0.50x (ok) |") {
		t.Errorf("best-peer table missing:\n%s", b.String())
	}
}

// TestAggregateSeparatesCases: rows that differ only in durability,
// prefill or cache budget are different cases, never one median, and the
// report's tables tell them apart.
func TestAggregateSeparatesCases(t *testing.T) {
	base := func(e string, ops float64) Result {
		r := row(e, "W4", 2, ops, 10)
		r.CacheBytes = 256 << 20
		return r
	}
	var rows []Result
	for _, e := range []string{"bwkv", "pebble"} {
		ops := 100.0
		if e == "bwkv" {
			ops = 200
		}
		rows = append(rows, base(e, ops))
		d := base(e, ops/10)
		d.Durability = "durable"
		n := base(e, ops/2)
		n.PrefillKeys = 100000
		c := base(e, ops/4)
		c.CacheBytes = 1 << 30
		rows = append(rows, d, n, c)
	}
	o := DefaultReportOptions()
	agg := Aggregate(rows, o)
	if len(agg) != 4 {
		t.Fatalf("%d cases, want 4 (relaxed, durable, 100k keys, 1 GiB cache)", len(agg))
	}
	for k, m := range agg {
		if m["bwkv"].N != 1 || m["pebble"].N != 1 {
			t.Errorf("%s: n %d/%d, want 1/1", k, m["bwkv"].N, m["pebble"].N)
		}
	}
	var b strings.Builder
	if err := WriteReport(&b, rows, o); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| W4 32/1024 n200000 snapshot relaxed c256MiB | 1/1 | 2.00x |",
		"| W4 32/1024 n200000 snapshot durable c256MiB | 1/1 | 2.00x |",
		"| W4 32/1024 n100000 snapshot relaxed c256MiB | 1/1 | 2.00x |",
		"| W4 32/1024 n200000 snapshot relaxed c1024MiB | 1/1 | 2.00x |",
		"| W4 t2 32/1024 n200000 snapshot durable c256MiB | 20 | pebble 10 |",
		"| W4 t2 32/1024 n100000 snapshot relaxed c256MiB | bwkv | 1 | 100 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	files, err := WriteChart(filepath.Join(t.TempDir(), "c.png"), rows, o)
	if err != nil || len(files) != 4 {
		t.Fatalf("charts %v, %v: want one per group", files, err)
	}
}

// TestChartP99LogScale: the p99 panel is log-scale from the decade below
// the smallest p99 (a zero p99, a missing bar, stays at the bottom), the
// ops panel linear from 0.
func TestChartP99LogScale(t *testing.T) {
	rows := []Result{row("bwkv", "W1", 1, 300, 7), row("pebble", "W1", 1, 100, 4000), row("bbolt", "W1", 1, 100, 0)}
	rows[2].P99 = 0
	o := DefaultReportOptions()
	agg := Aggregate(rows, o)
	var keys []CaseKey
	for k := range agg {
		keys = append(keys, k)
	}
	pn := chartPanel{keys: keys, engines: []string{"bbolt", "bwkv", "pebble"}, labels: []string{"W1/t1"}, agg: agg}
	ops, p99, err := pn.panels(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p99.Y.Scale.(floorLogScale); !ok || p99.Y.Min != 1 || p99.Y.Max != 16000 {
		t.Fatalf("p99 axis %T [%v, %v], want log [1, 16000]", p99.Y.Scale, p99.Y.Min, p99.Y.Max)
	}
	if got := p99.Y.Scale.Normalize(1, 100, 0); got != 0 {
		t.Fatalf("a zero bar base normalizes to %v, want 0 (the bottom)", got)
	}
	var labels []string
	for _, tk := range p99.Y.Tick.Marker.Ticks(1, 16000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "1 2 5 10 20 50 100 200 500 1k 2k 5k 10k 20k 50k 100k" {
		t.Fatalf("p99 tick labels %q", got)
	}
	if _, ok := ops.Y.Scale.(plot.LinearScale); !ok || ops.Y.Min != 0 {
		t.Fatalf("ops axis %T from %v, want linear from 0", ops.Y.Scale, ops.Y.Min)
	}
	if _, err := WriteChart(filepath.Join(t.TempDir(), "c.png"), rows, o); err != nil {
		t.Fatal(err)
	}
}

// TestAggregateSeparatesValueCases: rows that differ only in value kind,
// compression or value threshold are separate cases, named in their group;
// the defaults (and rows written before the columns) add nothing.
func TestAggregateSeparatesValueCases(t *testing.T) {
	var rows []Result
	for _, e := range []string{"bwkv", "pebble"} {
		r := row(e, "W4", 2, 100, 10)
		r.ValueKind, r.Compression, r.ValueThreshold = "random", "none", DefaultValueThreshold
		old := row(e, "W4", 2, 100, 10) // no value columns: the same case
		k, z, v := r, r, r
		k.ValueKind = "text"
		z.ValueKind, z.Compression = "text", "good"
		v.ValueThreshold = 1024
		rows = append(rows, r, old, k, z, v)
	}
	agg := Aggregate(rows, DefaultReportOptions())
	groups := map[string]int{}
	for k, m := range agg {
		groups[k.Group()] = m["bwkv"].N
	}
	want := map[string]int{
		"32/1024 n200000 snapshot relaxed":           2,
		"32/1024 n200000 snapshot relaxed text":      1,
		"32/1024 n200000 snapshot relaxed text good": 1,
		"32/1024 n200000 snapshot relaxed vt1024":    1,
	}
	if len(groups) != len(want) {
		t.Fatalf("groups %v, want %v", groups, want)
	}
	for g, n := range want {
		if groups[g] != n {
			t.Errorf("group %q: %d bwkv rows, want %d (all: %v)", g, groups[g], n, groups)
		}
	}
}
