package bench

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// defaultOptions are kvbench matrix's flag defaults.
func defaultOptions() MatrixOptions {
	return MatrixOptions{
		Engines:   []string{"bwkv", "pebble", "badger", "bbolt"},
		Workloads: []string{"W1", "W2", "W2y", "W3", "W4", "W5", "W6"}, Threads: []int{1, 2},
		Profiles: []Profile{{32, 1024}, {16, 128}}, PrefillKeys: 200000, WarmupSecs: 3, MeasureSecs: 20,
		Repeats: 2, ReadPath: "snapshot", Durability: "relaxed", ResultFile: "/r.csv",
		CacheBytes: 256 << 20, ValueThresh: 8192,
	}
}

// TestMatrixDefaultPlanUnchanged: without a suite the plan is the one
// cross product in the order it always had, every run carrying the
// options' durability, prefill and cache, and a child gets the arguments
// it always got.
func TestMatrixDefaultPlanUnchanged(t *testing.T) {
	o := defaultOptions()
	var want []MatrixRun
	for r := 0; r < o.Repeats; r++ {
		for _, p := range o.Profiles {
			for _, th := range o.Threads {
				for _, w := range o.Workloads {
					for _, e := range Rotate(o.Engines, r) {
						want = append(want, MatrixRun{Repeat: r, Engine: e, Workload: w, Threads: th, Profile: p,
							Durability: "relaxed", PrefillKeys: 200000, CacheBytes: 256 << 20, ValueThreshold: 8192})
					}
				}
			}
		}
	}
	plan := o.Plan()
	if !reflect.DeepEqual(plan, want) {
		t.Fatalf("default plan differs: %d runs, want %d\n%v", len(plan), len(want), plan[:min(8, len(plan))])
	}
	got := strings.Join(o.childArgs(plan[1], "/d"), " ")
	old := "run --engine pebble --workload W1 --threads 1 --key-size 32 --value-size 1024 --prefill-keys 200000 " +
		"--warmup-secs 3 --measure-secs 20 --read-path snapshot --durability relaxed --cache-bytes 268435456 " +
		"--value-threshold 8192 --value-kind random --compression none --repeat 0 --result-file /r.csv --path /d --progress=false"
	if got != old {
		t.Fatalf("child args\n got %s\nwant %s", got, old)
	}
}

// caseID is what a suite case fixes, as a comparable string.
func caseID(m MatrixRun) string {
	return strings.Join([]string{m.Workload, "t" + itoa(m.Threads), itoa(m.Profile.KeySize) + "/" + itoa(m.Profile.ValueSize),
		m.Durability, "n" + itoa(m.PrefillKeys), "c" + sizeTag(m.CacheBytes),
		orDefault(m.ValueKind, "random"), orDefault(m.Compression, "none"), "vt" + itoa(m.ValueThreshold)}, " ")
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestSuiteFullPlan: --suite full is exactly the cases, each with
// every engine once per repeat, and each child gets its own durability,
// prefill and cache budget.
func TestSuiteFullPlan(t *testing.T) {
	cases, err := Suite("full")
	if err != nil {
		t.Fatal(err)
	}
	o := defaultOptions()
	o.Repeats, o.Cases, o.CacheBytes = 1, cases, 64<<20 // --cache-bytes: the cases that do not pin one
	want := map[string]bool{}
	all := []string{"W1", "W2", "W2y", "W3", "W4", "W5", "W6"}
	p2 := Profile{32, 1024}
	for _, d := range []string{"relaxed", "durable"} {
		for _, th := range []int{1, 2} {
			for _, w := range all {
				want[caseID(MatrixRun{Workload: w, Threads: th, Profile: p2, Durability: d,
					PrefillKeys: 200000, CacheBytes: 64 << 20, ValueThreshold: 8192})] = true
			}
		}
	}
	for _, th := range []int{2, 16} {
		want[caseID(MatrixRun{Workload: "W4", Threads: th, Profile: p2, Durability: "durable",
			PrefillKeys: 100000, CacheBytes: 64 << 20, ValueThreshold: 8192})] = true
	}
	for _, w := range []string{"W1", "W4", "W6"} {
		want[caseID(MatrixRun{Workload: w, Threads: 2, Profile: p2, Durability: "relaxed",
			PrefillKeys: 2000000, CacheBytes: 256 << 20, ValueThreshold: 8192})] = true
	}
	// Large values: the same ~200 MiB of values as P2's 200k keys.
	for _, w := range all {
		want[caseID(MatrixRun{Workload: w, Threads: 2, Profile: Profile{32, 4096}, Durability: "relaxed",
			PrefillKeys: 50000, CacheBytes: 64 << 20, ValueThreshold: 8192})] = true
		want[caseID(MatrixRun{Workload: w, Threads: 2, Profile: Profile{32, 16384}, Durability: "relaxed",
			PrefillKeys: 12500, CacheBytes: 64 << 20, ValueThreshold: 8192})] = true
		want[caseID(MatrixRun{Workload: w, Threads: 2, Profile: p2, Durability: "relaxed",
			PrefillKeys: 200000, CacheBytes: 64 << 20, ValueThreshold: 1024})] = true
	}
	for _, w := range []string{"W1", "W3", "W4", "W6"} {
		for _, c := range []string{"none", "good"} {
			want[caseID(MatrixRun{Workload: w, Threads: 2, Profile: p2, Durability: "relaxed",
				PrefillKeys: 200000, CacheBytes: 64 << 20, ValueKind: "text", Compression: c, ValueThreshold: 8192})] = true
		}
	}
	const nCases = 33 + 3*7 + 8
	if len(want) != nCases {
		t.Fatalf("the issue's list has %d cases, want %d", len(want), nCases)
	}
	plan := o.Plan()
	if len(plan) != nCases*4 {
		t.Fatalf("plan has %d runs, want %d cases x 4 engines", len(plan), nCases)
	}
	engines := map[string][]string{}
	for _, m := range plan {
		id := caseID(m)
		if !want[id] {
			t.Errorf("unexpected case %s", id)
		}
		engines[id] = append(engines[id], m.Engine)
		args := strings.Join(o.childArgs(m, "/d"), " ")
		for _, a := range []string{"--durability " + m.Durability + " ", "--prefill-keys " + itoa(m.PrefillKeys) + " ",
			"--cache-bytes " + strconv.FormatInt(m.CacheBytes, 10) + " ", "--workload " + m.Workload + " ", "--threads " + itoa(m.Threads) + " ",
			"--value-threshold " + itoa(m.ValueThreshold) + " ", "--value-kind " + orDefault(m.ValueKind, "random") + " ",
			"--compression " + orDefault(m.Compression, "none") + " "} {
			if !strings.Contains(args, a) {
				t.Errorf("%s: child args lack %q: %s", id, a, args)
			}
		}
	}
	for id, es := range engines {
		slices.Sort(es)
		if strings.Join(es, ",") != "badger,bbolt,bwkv,pebble" {
			t.Errorf("%s: engines %v", id, es)
		}
	}
	if len(engines) != nCases {
		t.Errorf("%d distinct cases in the plan, want %d", len(engines), nCases)
	}
	if _, err := Suite("nope"); err == nil || !strings.Contains(err.Error(), "full") || !strings.Contains(err.Error(), "quick") {
		t.Errorf("unknown suite: %v", err)
	}
}

// TestSuiteQuickPlan: --suite quick is the standard matrix, relaxed: the
// seven workloads at threads 1 and 2, P2, 200k keys, the cache budget
// --cache-bytes gives.
func TestSuiteQuickPlan(t *testing.T) {
	cases, err := Suite("quick")
	if err != nil {
		t.Fatal(err)
	}
	o := defaultOptions()
	o.Repeats, o.Cases, o.CacheBytes = 2, cases, 64<<20
	want := map[string]bool{}
	for _, th := range []int{1, 2} {
		for _, w := range []string{"W1", "W2", "W2y", "W3", "W4", "W5", "W6"} {
			want[caseID(MatrixRun{Workload: w, Threads: th, Profile: Profile{32, 1024}, Durability: "relaxed",
				PrefillKeys: 200000, CacheBytes: 64 << 20, ValueThreshold: 8192})] = true
		}
	}
	plan := o.Plan()
	if len(plan) != len(want)*4*2 {
		t.Fatalf("plan has %d runs, want %d cases x 4 engines x 2 repeats", len(plan), len(want))
	}
	for _, m := range plan {
		if !want[caseID(m)] {
			t.Errorf("unexpected case %s", caseID(m))
		}
	}
}

// TestMatrixDirsUnique: no two runs of the full suite (3 repeats) or of
// the default plan share a directory.
func TestMatrixDirsUnique(t *testing.T) {
	cases, _ := Suite("full")
	full := defaultOptions()
	full.Repeats, full.Cases = 3, cases
	def := defaultOptions()
	for _, o := range []MatrixOptions{full, def} {
		seen := map[string]MatrixRun{}
		for _, m := range o.Plan() {
			if prev, ok := seen[m.Dir()]; ok {
				t.Fatalf("%s: %+v and %+v", m.Dir(), prev, m)
			}
			seen[m.Dir()] = m
		}
	}
	// Two runs that differ only in durability, prefill, cache, value kind,
	// compression or value threshold.
	a := MatrixRun{Engine: "bwkv", Workload: "W4", Threads: 2, Profile: Profile{32, 1024}, Durability: "relaxed",
		PrefillKeys: 200000, CacheBytes: 256 << 20, ValueThreshold: 8192}
	d, n, c, k, z, v := a, a, a, a, a, a
	d.Durability, n.PrefillKeys, c.CacheBytes = "durable", 100000, 1<<30
	k.ValueKind, z.Compression, v.ValueThreshold = "text", "good", 1024
	for _, b := range []MatrixRun{d, n, c, k, z, v} {
		if a.Dir() == b.Dir() {
			t.Errorf("%+v and %+v share %s", a, b, a.Dir())
		}
	}
}

// TestMatrixEstimate: runs x (warm-up + measure + overhead) + prefill at
// the assumed rate.
func TestMatrixEstimate(t *testing.T) {
	o := MatrixOptions{WarmupSecs: 3, MeasureSecs: 20}
	plan := []MatrixRun{{PrefillKeys: 200000}, {PrefillKeys: 2000000}}
	want := time.Duration(2*(3+20+estRunOverheadSecs))*time.Second +
		time.Duration(2200000/estPrefillKeysPerSec)*time.Second
	if got := o.Estimate(plan); got != want {
		t.Fatalf("estimate %v, want %v", got, want)
	}
}
