package bwkv_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bwkv/bwkv"
)

// dataFileNames returns the data files in dir, sorted.
func dataFileNames(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.data"))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	slices.Sort(names)
	return names
}

// TestCheckFindsFileDamage: Check reports a data file no manifest names
// and a named data file that is gone.
func TestCheckFindsFileDamage(t *testing.T) {
	dir := t.TempDir()
	db, err := bwkv.Open(dir, gcOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	latest := map[string]string{}
	steadyUpdates(t, db, 500, 500, 100, 1, latest)
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := db.Check(ctx); err != nil {
		t.Fatalf("check of a sound directory: %v", err)
	}
	stray := filepath.Join(dir, "999999.data")
	if err := os.WriteFile(stray, []byte("stray"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := db.Check(ctx); err == nil || !strings.Contains(err.Error(), "orphan data file 999999.data") {
		t.Fatalf("check with a stray data file: %v, want an orphan", err)
	}
	if err := os.Remove(stray); err != nil {
		t.Fatal(err)
	}
	named := dataFileNames(t, dir)
	if len(named) == 0 {
		t.Fatal("no data file after a checkpoint")
	}
	if err := os.Rename(filepath.Join(dir, named[0]), filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := db.Check(ctx); err == nil || !strings.Contains(err.Error(), "missing data file "+named[0]) {
		t.Fatalf("check without %s: %v, want it missing", named[0], err)
	}
	if err := os.Rename(filepath.Join(dir, "moved"), filepath.Join(dir, named[0])); err != nil {
		t.Fatal(err)
	}
	if err := db.Check(ctx); err != nil {
		t.Fatalf("check after the file came back: %v", err)
	}
}

// TestCheckBesidePublish: a checkpoint that creates and publishes a file,
// and a GC round that deletes one, between Check's first look at the
// manifest and its listing of the directory (the window in which CI once
// saw "orphan data file") make no error, at the first attempt.
func TestCheckBesidePublish(t *testing.T) {
	dir := t.TempDir()
	o := gcOpts()
	o.GCLiveRatio = 0.95
	o.GCSpaceAmp = 1
	db, err := bwkv.Open(dir, bwkv.WithTestGCPaused(o))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	latest := map[string]string{}
	const keys = 400
	for round := uint64(1); round <= 3; round++ {
		steadyUpdates(t, db, keys, keys, 200, round, latest)
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	calls, created, deleted := 0, 0, 0
	round := uint64(10)
	db.SetTestCheckListingHook(func() {
		calls++
		before := dataFileNames(t, dir)
		round++
		steadyUpdates(t, db, keys, keys, 200, round, latest)
		db.SetTestGCPaused(false)
		if err := db.Checkpoint(); err != nil {
			t.Error(err)
		}
		after := dataFileNames(t, dir)
		for _, n := range after {
			if !slices.Contains(before, n) {
				created++
			}
		}
		for _, n := range before {
			if !slices.Contains(after, n) {
				deleted++
			}
		}
	})
	err = db.Check(context.Background())
	db.SetTestCheckListingHook(nil)
	if created == 0 || deleted == 0 {
		t.Fatalf("the hook's checkpoint created %d and deleted %d data files; the test needs both", created, deleted)
	}
	if err != nil || calls != 1 {
		t.Fatalf("check beside a publish: %v after %d attempts, want none after 1", err, calls)
	}
	checkLatest(t, db, latest)
}
