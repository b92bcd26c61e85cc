package bwkv_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/vfs"
)

// logSpares returns the spare segment files in dir's log directory.
func logSpares(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir + "/wal")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ".spare") {
			out = append(out, n)
		}
	}
	return out
}

// writeRounds commits rounds x 20 puts (500-byte values over 60 keys)
// over 8 KiB log segments with a checkpoint after each
// round, so segments rotate and retire, and returns the last value of
// each key. It checks that the log never holds more than two spares.
func writeRounds(t *testing.T, db *bwkv.DB, fs vfs.FS, rounds int) map[string]string {
	t.Helper()
	return writeRoundsAcked(t, db, fs, rounds, nil)
}

// writeRoundsAcked is writeRounds calling acked (if not nil) with each
// put's key and round once the put returned.
func writeRoundsAcked(t *testing.T, db *bwkv.DB, fs vfs.FS, rounds int, acked func(key string, round int)) map[string]string {
	t.Helper()
	want := map[string]string{}
	for r := range rounds {
		for i := range 20 {
			k := fmt.Sprintf("key%03d", (r*20+i)%60)
			v := fmt.Sprintf("%s-round%d-%s", k, r, strings.Repeat("v", 480))
			if err := db.Put([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			want[k] = v
			if acked != nil {
				acked(k, r)
			}
		}
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		if n := len(logSpares(t, fs, "/db")); n > 2 {
			t.Fatalf("round %d: %d spare log segments, at most 2 expected", r, n)
		}
	}
	return want
}

func checkValues(t *testing.T, db *bwkv.DB, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, err := db.Get([]byte(k))
		if err != nil || string(got) != v {
			t.Fatalf("Get(%s) = %.20q, %v; want %.20q", k, got, err, v)
		}
	}
}

// TestLogReusesSpareSegments: a database (format 3) starts its log
// segments over retired ones, with either durability, holds at most two
// spares, loses nothing on a power loss with a reused segment newest, and
// keeps no spare after Close.
func TestLogReusesSpareSegments(t *testing.T) {
	for _, d := range []bwkv.Durability{bwkv.DurabilitySync, bwkv.DurabilityRelaxed} {
		t.Run(d.String(), func(t *testing.T) { testLogReusesSpareSegments(t, d) })
	}
}

func testLogReusesSpareSegments(t *testing.T, d bwkv.Durability) {
	mem := vfs.NewMem()
	o := &bwkv.Options{FS: mem, Durability: d, MaxKeySize: 64, MaxValueSize: 1 << 10, WALSegmentBytes: 8 << 10}
	db, err := bwkv.Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	want := writeRounds(t, db, mem, 30)
	st := db.Stats()
	if st.WAL.SegmentsReused == 0 {
		t.Fatalf("no log segment reused in 30 rounds (stats %+v)", st.WAL)
	}
	if st.WAL.Spares != len(logSpares(t, mem, "/db")) {
		t.Fatalf("Stats.WAL.Spares %d, %d spare files", st.WAL.Spares, len(logSpares(t, mem, "/db")))
	}
	// Power loss: only what was synced survives. Every round ended with a
	// checkpoint, which fsyncs the log through its head first; the newest
	// segment may be a reused file.
	for _, keep := range []float64{0, 1} {
		crashed := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: keep, TornLastWrite: keep == 1})
		co := *o
		co.FS = crashed
		// A read-only open replays the same log and changes nothing.
		ro := co
		ro.ReadOnly = true
		rdb, err := bwkv.Open("/db", &ro)
		if err != nil {
			t.Fatalf("read-only open after a power loss (keep %v): %v", keep, err)
		}
		checkValues(t, rdb, want)
		if err := rdb.Close(); err != nil {
			t.Fatal(err)
		}
		db2, err := bwkv.Open("/db", &co)
		if err != nil {
			t.Fatalf("reopen after a power loss (keep %v): %v", keep, err)
		}
		checkValues(t, db2, want)
		more := writeRounds(t, db2, crashed, 5)
		checkValues(t, db2, more)
		if err := db2.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if n := logSpares(t, mem, "/db"); len(n) != 0 {
		t.Fatalf("spares left after Close: %v", n)
	}
}

// TestLogFormat2KeepsItsLayout: a database created with format 2 keeps
// its log's layout (records without their LSN in the CRC, no spares) when
// this code opens it, across a power loss and reopens.
func TestLogFormat2KeepsItsLayout(t *testing.T) {
	mem := vfs.NewMem()
	o := &bwkv.Options{FS: mem, MaxKeySize: 64, MaxValueSize: 1 << 10, WALSegmentBytes: 8 << 10}
	db, err := bwkv.Open("/db", bwkv.WithTestFormatVersion(o, 2))
	if err != nil {
		t.Fatal(err)
	}
	want := writeRounds(t, db, mem, 10)
	if st := db.Stats(); st.WAL.SegmentsReused != 0 || len(logSpares(t, mem, "/db")) != 0 {
		t.Fatalf("format 2: %d segments reused, spares %v", st.WAL.SegmentsReused, logSpares(t, mem, "/db"))
	}
	crashed := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: 1})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	co := *o
	co.FS = crashed
	db, err = bwkv.Open("/db", &co) // no hook: the stored version rules
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkValues(t, db, want)
	for k, v := range writeRounds(t, db, crashed, 10) {
		want[k] = v
	}
	checkValues(t, db, want)
	if st := db.Stats(); st.WAL.SegmentsReused != 0 || len(logSpares(t, crashed, "/db")) != 0 {
		t.Fatalf("format 2 reopened: %d segments reused, spares %v", st.WAL.SegmentsReused, logSpares(t, crashed, "/db"))
	}
}

// TestLogSpareCrashAtReuse: a power loss right after a spare became the
// newest segment (renamed and the directory synced, nothing written over
// it yet) leaves a log whose newest segment holds only the spare's old
// records. The database opens and reads them as a torn tail, never as
// records: every put acknowledged before the crash reads back at least as
// new as it was (a replayed old record would bring an older round back),
// Check passes, and the database keeps working.
func TestLogSpareCrashAtReuse(t *testing.T) {
	mem := vfs.NewMem()
	o := &bwkv.Options{FS: mem, MaxKeySize: 64, MaxValueSize: 1 << 10, WALSegmentBytes: 8 << 10}
	type crash struct {
		fs    *vfs.MemFS
		acked map[string]int // key -> the newest round whose put returned
	}
	var (
		mu      sync.Mutex
		acked   = map[string]int{}
		crashes []crash
		reused  bool // a spare was renamed to a segment's name, not yet synced
	)
	mem.SetHook(func(op vfs.Op) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case op.Kind == vfs.OpRename && strings.HasSuffix(op.To, ".log"):
			reused = true
		case op.Kind == vfs.OpSyncDir && reused:
			reused = false
			if len(crashes) < 8 {
				c := crash{mem.CrashClone(vfs.CrashOptions{KeepUnsynced: 1, Seed: op.Index}), map[string]int{}}
				for k, r := range acked {
					c.acked[k] = r
				}
				crashes = append(crashes, c)
			}
		}
	})
	db, err := bwkv.Open("/db", o)
	if err != nil {
		t.Fatal(err)
	}
	writeRoundsAcked(t, db, mem, 30, func(k string, r int) {
		mu.Lock()
		acked[k] = r
		mu.Unlock()
	})
	mem.SetHook(nil)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if len(crashes) == 0 {
		t.Fatal("no spare was reused")
	}
	torn := uint64(0)
	for i, c := range crashes {
		co := *o
		co.FS = c.fs
		db, err := bwkv.Open("/db", &co)
		if err != nil {
			t.Fatalf("crash %d: open: %v", i, err)
		}
		torn += db.Stats().Recovery.TornBytes
		for k, want := range c.acked {
			v, err := db.Get([]byte(k))
			var got int
			if err == nil {
				_, err = fmt.Sscanf(strings.TrimPrefix(string(v), k+"-round"), "%d-", &got)
			}
			if err != nil || got < want {
				t.Fatalf("crash %d: %s = %.24q (%v), acknowledged round %d", i, k, v, err, want)
			}
		}
		if err := db.Check(context.Background()); err != nil {
			t.Fatalf("crash %d: Check: %v", i, err)
		}
		writeRounds(t, db, c.fs, 3)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if torn == 0 {
		t.Fatalf("%d crashes at a reuse, no torn tail: the old records were never behind the log's end", len(crashes))
	}
}
