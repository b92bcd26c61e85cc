package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bwkv/bwkv/bench"
)

// TestMatrixFlagsDefault: without --suite the flags give the one cross
// product they always gave.
func TestMatrixFlagsDefault(t *testing.T) {
	o, _, suite, err := parseMatrix([]string{"--path", "/tmp/x", "--engines", "bwkv,bbolt", "--threads", "2",
		"--durability", "durable", "--prefill-keys", "1000", "--workloads", "W1,W4"})
	if err != nil || suite != "" {
		t.Fatal(err, suite)
	}
	if o.Cases != nil || !reflect.DeepEqual(o.Workloads, []string{"W1", "W4"}) || !reflect.DeepEqual(o.Threads, []int{2}) ||
		o.Durability != "durable" || o.PrefillKeys != 1000 || o.CacheBytes != 256<<20 ||
		!reflect.DeepEqual(o.Profiles, []bench.Profile{{KeySize: 32, ValueSize: 1024}}) {
		t.Fatalf("options %+v", o)
	}
	if n := len(o.Plan()); n != 2*2*3 {
		t.Fatalf("%d runs, want 12", n)
	}
}

// TestMatrixFlagsSuite: --suite full takes the suite's cases and keeps the
// flags that still apply.
func TestMatrixFlagsSuite(t *testing.T) {
	o, _, suite, err := parseMatrix([]string{"--path", "/tmp/x", "--suite", "full", "--engines", "bwkv,pebble,badger,bbolt",
		"--repeats", "1", "--measure-secs", "5", "--warmup-secs", "1"})
	if err != nil || suite != "full" {
		t.Fatal(err, suite)
	}
	if len(o.Cases) != 9 || o.MeasureSecs != 5 || o.WarmupSecs != 1 || o.Repeats != 1 {
		t.Fatalf("options %+v", o)
	}
	if n := len(o.Plan()); n != 248 {
		t.Fatalf("--suite full with 4 engines, 1 repeat: %d runs, want 62 cases x 4 = 248", n)
	}
}

// TestMatrixFlagsSuiteConflicts: a flag the suite sets is refused, named
// in the error, even when given its default value; so is an unknown suite.
func TestMatrixFlagsSuiteConflicts(t *testing.T) {
	for _, flag := range [][]string{
		{"--workloads", "W1"}, {"--threads", "1,2"}, {"--durability", "relaxed"},
		{"--prefill-keys", "200000"}, {"--profiles", "P2"},
	} {
		_, _, _, err := parseMatrix(append([]string{"--path", "/tmp/x", "--suite", "full"}, flag...))
		if err == nil || !strings.Contains(err.Error(), flag[0]) {
			t.Errorf("--suite full %s: err %v", strings.Join(flag, " "), err)
		}
	}
	_, _, _, err := parseMatrix([]string{"--path", "/tmp/x", "--suite", "fast"})
	if err == nil || !strings.Contains(err.Error(), `"fast"`) || !strings.Contains(err.Error(), "full") {
		t.Errorf("unknown suite: err %v", err)
	}
}
