package bwkv_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/vfs"
)

// TestSnapshotVersionsBounded: with snapshots held open, 4,000 updates of
// one key leave at most (distinct reader timestamps + 2) versions after
// consolidation, plus the unconsolidated chain, and each snapshot still
// reads its own version. Before, every version newer than the oldest
// snapshot stayed (4,000 versions, ~4 MiB resident for 1 KiB values).
func TestSnapshotVersionsBounded(t *testing.T) {
	const chainMax = 8
	db := openTest(t, &bwkv.Options{DeltaChainMax: chainMax})
	key := []byte("hot")
	val := func(i int) []byte { return fmt.Appendf(make([]byte, 0, 1024), "%01024d", i) }
	put := func(i int) {
		t.Helper()
		if err := db.Put(key, val(i)); err != nil {
			t.Fatal(err)
		}
	}
	put(0)
	s1, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	var s2 *bwkv.Snapshot
	peak := 0
	t0 := time.Now()
	for i := 1; i <= 4000; i++ {
		put(i)
		if i == 2000 {
			if s2, err = db.NewSnapshot(); err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
		}
		n, err := db.KeyVersions(key)
		if err != nil {
			t.Fatal(err)
		}
		peak = max(peak, n)
	}
	el := time.Since(t0)
	// Two snapshots: newest, one per snapshot, the newest retired one,
	// plus a chain not yet consolidated.
	bound := 2 + 2 + chainMax
	t.Logf("4000 updates with 2 snapshots: peak %d versions of the key (bound %d), %v", peak, bound, el)
	if peak > bound {
		t.Fatalf("peak %d versions of one key, want <= %d", peak, bound)
	}
	for _, c := range []struct {
		s    *bwkv.Snapshot
		want int
	}{{s1, 0}, {s2, 2000}} {
		got, err := c.s.Get(key)
		if err != nil || string(got) != string(val(c.want)) {
			t.Fatalf("snapshot of update %d reads %.12q, %v", c.want, got, err)
		}
	}
	if got, err := db.Get(key); err != nil || string(got) != string(val(4000)) {
		t.Fatalf("latest read %.12q, %v", got, err)
	}
}

// TestRecoveryVersionsBounded: recovery's redo consolidates with its own
// view of the log (retention.go), so a key committed n times since the
// last checkpoint, and a key written by n transactions that rolled back,
// do not pile up n versions in their leaf while the log replays (each
// consolidation copied them all: recovery was quadratic in the log, ~15 s
// for 300k records of 20 hot keys). Inspected before the undo of a loser
// left open at the crash (its first write in the checkpoint), which
// recovery then undoes to the committed values.
func TestRecoveryVersionsBounded(t *testing.T) {
	const n, chainMax = 3000, 6
	fs := vfs.NewMem()
	o := &bwkv.Options{FS: fs, Durability: bwkv.DurabilityRelaxed, DeltaChainMax: chainMax}
	db, err := bwkv.Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Put([]byte("r"), []byte("base")); err != nil {
		t.Fatal(err)
	}
	// The loser's first write goes into a checkpoint, so recovery undoes
	// it (its writes after the frontier are never installed).
	loser, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer loser.Rollback()
	if err := loser.Put([]byte("x"), []byte("loser")); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := db.Put([]byte("h"), fmt.Append(nil, i)); err != nil {
			t.Fatal(err)
		}
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Put([]byte("r"), fmt.Append(nil, "rolled back ", i)); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	oo := *o
	oo.FS = fs.CrashClone(vfs.CrashOptions{KeepUnsynced: 1})
	entries, undos := map[string]int{}, 0
	rdb, err := bwkv.Open("db", bwkv.WithTestRecoveryDBHook(&oo, func(db *bwkv.DB) {
		if undos++; undos > 1 {
			return
		}
		for _, k := range []string{"h", "r"} {
			n, err := db.LeafEntries([]byte(k))
			if err != nil {
				t.Error(err)
			}
			entries[k] = n
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if undos == 0 {
		t.Fatal("recovery undid nothing: the loser's records were not in the clone")
	}
	// Before the undo, a leaf holding h or r (one leaf, or two if it
	// split) holds per key its newest committed version and the chain
	// since its last consolidation.
	for k, got := range entries {
		if bound := 4*chainMax + 8; got > bound {
			t.Fatalf("%s's leaf held %d versions before undo (bound %d): redo kept superseded or rolled-back versions", k, got, bound)
		}
	}
	t.Logf("leaf entries before undo: %v (%d commits and %d rollbacks replayed)", entries, n, n)
	for k, want := range map[string]string{"h": fmt.Sprint(n - 1), "r": "base", "x": ""} {
		got, err := rdb.Get([]byte(k))
		if want == "" {
			if !errors.Is(err, bwkv.ErrNotFound) {
				t.Fatalf("%s: got %q, %v; want not found", k, got, err)
			}
			continue
		}
		if err != nil || string(got) != want {
			t.Fatalf("%s: got %q, %v; want %q", k, got, err, want)
		}
	}
}

// TestRollbackVersionsBounded: with a snapshot held open (so no txn
// retires), transactions that write a key and roll back leave nothing
// behind once their rollback finished: consolidation drops their versions
// with their CLRs (mvcc.Manager.RolledBack). Before, the leaf kept two
// entries per rollback until the snapshot closed, and every write of the
// key walked and every consolidation copied them (1,000 rollbacks: a
// 2,001-entry leaf).
func TestRollbackVersionsBounded(t *testing.T) {
	const n, chainMax = 1000, 8
	db := openTest(t, &bwkv.Options{DeltaChainMax: chainMax})
	key := []byte("r")
	if err := db.Put(key, []byte("base")); err != nil {
		t.Fatal(err)
	}
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	peak := 0
	for i := 0; i < n; i++ {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Put(key, fmt.Append(nil, i)); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		got, err := db.LeafEntries(key)
		if err != nil {
			t.Fatal(err)
		}
		peak = max(peak, got)
	}
	// The base version, the chain since the last consolidation, and the
	// versions of a rollback under way when the chain passed its limit.
	if bound := 2*chainMax + 2; peak > bound {
		t.Fatalf("the leaf peaked at %d entries over %d rollbacks (bound %d): rolled-back versions kept", peak, n, bound)
	}
	for _, get := range []func([]byte) ([]byte, error){db.Get, snap.Get} {
		if v, err := get(key); err != nil || string(v) != "base" {
			t.Fatalf("got %q, %v; want base", v, err)
		}
	}
}

// TestOpenTxnVersionsBounded: a transaction that writes one key many times
// keeps only its newest write of it in the leaf (the older ones are
// nobody's to read; rollback takes old values from its undo list). Before,
// every write stayed until the commit, and each consolidation copied them
// all (2,000 writes: a 2,000-entry leaf). The last value commits; a
// second such transaction rolls back to it.
func TestOpenTxnVersionsBounded(t *testing.T) {
	const n, chainMax = 2000, 8
	db := openTest(t, &bwkv.Options{DeltaChainMax: chainMax})
	key := []byte("c")
	for round, commit := range []bool{true, false} {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		peak := 0
		for i := 0; i < n; i++ {
			if err := tx.Put(key, fmt.Append(nil, round, "/", i)); err != nil {
				t.Fatal(err)
			}
			got, err := db.LeafEntries(key)
			if err != nil {
				t.Fatal(err)
			}
			peak = max(peak, got)
		}
		if v, err := tx.Get(key); err != nil || string(v) != fmt.Sprint(round, "/", n-1) {
			t.Fatalf("round %d: the txn reads %q, %v", round, v, err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		// The committed version, the chain since the last
		// consolidation, the txn's newest write.
		if bound := chainMax + 3; peak > bound {
			t.Fatalf("round %d: the leaf peaked at %d entries over %d writes of one key in one txn (bound %d)", round, peak, n, bound)
		}
		if v, err := db.Get(key); err != nil || string(v) != fmt.Sprint(0, "/", n-1) {
			t.Fatalf("round %d: got %q, %v after the txn", round, v, err)
		}
	}
}
