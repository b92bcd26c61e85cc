package bench

import (
	"reflect"
	"strings"
	"testing"
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
							Durability: "relaxed", PrefillKeys: 200000, CacheBytes: 256 << 20})
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
		"--value-threshold 8192 --repeat 0 --result-file /r.csv --path /d --progress=false"
	if got != old {
		t.Fatalf("child args\n got %s\nwant %s", got, old)
	}
}

// TestMatrixDirsUnique: no two runs of a plan share a directory.
func TestMatrixDirsUnique(t *testing.T) {
	for _, o := range []MatrixOptions{defaultOptions()} {
		seen := map[string]MatrixRun{}
		for _, m := range o.Plan() {
			if prev, ok := seen[m.Dir()]; ok {
				t.Fatalf("%s: %+v and %+v", m.Dir(), prev, m)
			}
			seen[m.Dir()] = m
		}
	}
	// Two runs that differ only in durability, prefill or cache.
	a := MatrixRun{Engine: "bwkv", Workload: "W4", Threads: 2, Profile: Profile{32, 1024}, Durability: "relaxed",
		PrefillKeys: 200000, CacheBytes: 256 << 20}
	d, n, c := a, a, a
	d.Durability, n.PrefillKeys, c.CacheBytes = "durable", 100000, 1<<30
	for _, b := range []MatrixRun{d, n, c} {
		if a.Dir() == b.Dir() {
			t.Errorf("%+v and %+v share %s", a, b, a.Dir())
		}
	}
}
