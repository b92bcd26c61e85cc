package bwkv_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
)

func TestStatsFilledIn(t *testing.T) {
	dir := t.TempDir()
	o := &bwkv.Options{Durability: bwkv.DurabilityRelaxed}
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		mustPut(t, db, fmt.Sprintf("k%05d", i), strings.Repeat("v", 100))
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db, err = bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before := db.Stats()
	// Right after reopen, before any GC round: the data files' bytes.
	if before.GC.DataBytes <= 0 || before.GC.LiveBytes <= 0 {
		t.Fatalf("after reopen: GC.DataBytes %d LiveBytes %d, want > 0", before.GC.DataBytes, before.GC.LiveBytes)
	}
	for i := 0; i < 100; i++ {
		if _, err := db.Get(fmt.Appendf(nil, "k%05d", i)); err != nil {
			t.Fatal(err)
		}
	}
	mustPut(t, db, "x", "1")
	s, _ := db.NewSnapshot()
	time.Sleep(20 * time.Millisecond)
	after := db.Stats()
	if after.Cache.Hits <= before.Cache.Hits {
		t.Fatalf("Cache.Hits %d -> %d after 100 gets", before.Cache.Hits, after.Cache.Hits)
	}
	if after.Txn.OldestSnapshotAge < 20*time.Millisecond {
		t.Fatalf("OldestSnapshotAge = %v with a snapshot open for 20 ms", after.Txn.OldestSnapshotAge)
	}
	s.Close()
	if age := db.Stats().Txn.OldestSnapshotAge; age != 0 {
		t.Fatalf("OldestSnapshotAge = %v with nothing open", age)
	}
	d := after.Sub(before)
	if d.Txn.Commits != 1 || d.Cache.Hits != after.Cache.Hits-before.Cache.Hits || d.GC.DataBytes != after.GC.DataBytes {
		t.Fatalf("Sub: commits %d, hits %d, data bytes %d", d.Txn.Commits, d.Cache.Hits, d.GC.DataBytes)
	}
	str := after.String()
	if !strings.Contains(str, "KiB") || !strings.Contains(str, "oldest snapshot age") {
		t.Fatalf("String() lacks human units:\n%s", str)
	}
}

func TestEventListener(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	note := func(name string) {
		mu.Lock()
		got[name]++
		mu.Unlock()
	}
	var ckptErr error
	l := &bwkv.EventListener{
		CheckpointBegin: func(bwkv.CheckpointBeginInfo) { note("ckpt-begin") },
		CheckpointEnd: func(i bwkv.CheckpointEndInfo) {
			note("ckpt-end")
			mu.Lock()
			ckptErr = i.Err
			mu.Unlock()
		},
		GCRound:         func(bwkv.GCRoundInfo) { note("gc") },
		BackgroundError: func(error) { note("bg-error") },
		StallBegin:      func() { note("stall-begin") },
		StallEnd:        func(bwkv.StallInfo) { note("stall-end") },
		RecoveryDone:    func(bwkv.RecoveryStats) { note("recovery") },
	}
	db := openTest(t, &bwkv.Options{EventListener: l})
	mustPut(t, db, "k", "v")
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"recovery", "ckpt-begin", "ckpt-end", "gc"} {
		if got[name] == 0 {
			t.Errorf("no %s event (got %v)", name, got)
		}
	}
	if got["bg-error"] != 0 || ckptErr != nil {
		t.Errorf("unexpected failure events: %v, checkpoint error %v", got, ckptErr)
	}
}

// A writer held back by a checkpointer that cannot publish reports the
// stall's begin and end.
func TestEventListenerStall(t *testing.T) {
	var begins, ends int
	var mu sync.Mutex
	l := &bwkv.EventListener{
		StallBegin: func() { mu.Lock(); begins++; mu.Unlock() },
		StallEnd:   func(bwkv.StallInfo) { mu.Lock(); ends++; mu.Unlock() },
	}
	release := make(chan struct{})
	var once sync.Once
	db := openTest(t, &bwkv.Options{CheckpointBytes: 4096, EventListener: l})
	db.SetTestCutHook(func() { once.Do(func() { <-release }) })
	done := make(chan error, 1)
	var stop atomic.Bool
	go func() {
		// Writes go on until a stall began (stop): on a busy machine the
		// checkpointer may cut only after a fixed number of writes is done.
		for i := 0; i < 100_000 && !stop.Load(); i++ {
			if err := db.Put(fmt.Appendf(nil, "k%04d", i%400), make([]byte, 100)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	// The first cut blocks in the hook; writes pile up past 2x
	// CheckpointBytes and stall. (The 10 s bound is a hang detector.)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		b := begins
		mu.Unlock()
		if b > 0 {
			break
		}
		if time.Now().After(end) {
			stop.Store(true)
			close(release)
			t.Fatal("no stall began")
		}
	}
	stop.Store(true)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if ends != begins {
		t.Fatalf("%d stalls began, %d ended", begins, ends)
	}
}
