package bwkv_test

import (
	"bytes"
	"fmt"
	"path"
	"testing"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/vfs"
	"github.com/bwkv/bwkv/wal"
)

// logRecords returns the records of the log of the database at dir on fs,
// from its start.
func logRecords(t *testing.T, fs vfs.FS, dir string) map[wal.LSN]wal.Record {
	t.Helper()
	recs := map[wal.LSN]wal.Record{}
	_, err := wal.ReplayWith(fs, path.Join(dir, "wal"), wal.ReplayOptions{BindLSN: true}, func(lsn wal.LSN, r *wal.Record) error {
		c := *r
		c.Key, c.Value, c.OldValue = bytes.Clone(r.Key), bytes.Clone(r.Value), bytes.Clone(r.OldValue)
		recs[lsn] = c
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// openMemOld opens a database on a fresh in-memory file system with
// old-<k> committed for each of keys.
func openMemOld(t *testing.T, keys ...string) (*vfs.MemFS, *bwkv.Options, *bwkv.DB) {
	t.Helper()
	fs := vfs.NewMem()
	o := &bwkv.Options{FS: fs}
	db, err := bwkv.Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, k := range keys {
		if err := db.Put([]byte(k), []byte("old-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	return fs, o, db
}

// reopenOn opens the database of o again on fs (a crash clone).
func reopenOn(t *testing.T, o *bwkv.Options, fs vfs.FS) *bwkv.DB {
	t.Helper()
	oc := *o
	oc.FS = fs
	db, err := bwkv.Open("db", &oc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestUndoFromBeforeImages: an update and a delete log no old value; the
// cut that seals them while their txn is open logs it in a before-image
// (wal.Image) below the frontier, and after a crash recovery undoes the
// versions the checkpoint stole from those images. A txn that commits
// before the next cut logs no image at all, and a loser whose writes all
// follow the frontier needs no undo: its records are never installed.
func TestUndoFromBeforeImages(t *testing.T) {
	fs, o, db := openMemOld(t, "a", "b", "d")
	if err := db.Put([]byte("d"), []byte("committed-d")); err != nil { // no cut: no image
		t.Fatal(err)
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	loser, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer loser.Rollback()
	if err := loser.Put([]byte("a"), []byte("loser-a")); err != nil {
		t.Fatal(err)
	}
	if err := loser.Delete([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := loser.Put([]byte("c"), []byte("loser-c")); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(); err != nil { // steals the loser's versions
		t.Fatal(err)
	}
	// A write after the frontier: never installed by recovery.
	if err := loser.Put([]byte("d"), []byte("loser-d")); err != nil {
		t.Fatal(err)
	}
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	clone := fs.CrashClone(vfs.CrashOptions{})

	// The log: no write carries an old value; one image per stolen
	// update or delete, naming its write and holding the old value.
	recs := logRecords(t, clone, "db")
	images := map[string]string{}
	for _, r := range recs {
		switch r.Type {
		case wal.Update, wal.Delete:
			if r.OldValue != nil || r.HasOld {
				t.Errorf("%s of %q logged its old value %q", r.Type, r.Key, r.OldValue)
			}
			if !r.OldDeferred {
				t.Errorf("%s of %q: old value not marked deferred", r.Type, r.Key)
			}
		case wal.Image:
			w, ok := recs[r.Of]
			if !ok || !bytes.Equal(w.Key, r.Key) || w.TxID != r.TxID {
				t.Errorf("image of %q names record %d, not its write (%+v)", r.Key, r.Of, w)
			}
			images[string(r.Key)] = string(r.Value)
		}
	}
	if want := map[string]string{"a": "old-a", "b": "old-b"}; len(images) != len(want) || images["a"] != want["a"] || images["b"] != want["b"] {
		t.Errorf("before-images %v, want %v", images, want)
	}

	rdb := reopenOn(t, o, clone)
	st := rdb.Stats().Recovery
	if st.LosersUndone != 1 || st.CLRsWritten != 3 {
		t.Errorf("recovery %+v, want 1 loser undone with 3 CLRs", st)
	}
	for k, want := range map[string]string{"a": "old-a", "b": "old-b", "c": "", "d": "committed-d"} {
		wantValue(t, rdb.Get, k, want)
	}
}

// TestCommitAcrossCut: a txn whose writes span a cut commits; the images
// the cut logged for it are never used, and recovery installs its writes.
func TestCommitAcrossCut(t *testing.T) {
	fs, o, db := openMemOld(t, "a", "b")
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Put([]byte("a"), []byte("new-a")); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Delete([]byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	rdb := reopenOn(t, o, fs.CrashClone(vfs.CrashOptions{}))
	if st := rdb.Stats().Recovery; st.LosersUndone != 0 || st.CLRsWritten != 0 {
		t.Errorf("recovery %+v, want nothing undone", st)
	}
	wantValue(t, rdb.Get, "a", "new-a")
	wantValue(t, rdb.Get, "b", "")
}

// TestCutImagesBeforeGate: a cut logs the before-images an open txn owes
// before its gate closes, while writers go on, and inside the gate only
// those of the writes made in between; both kinds undo after a crash.
func TestCutImagesBeforeGate(t *testing.T) {
	keys := []string{"late"}
	for i := range 300 {
		keys = append(keys, fmt.Sprintf("k%03d", i))
	}
	fs, o, db := openMemOld(t, keys...)
	loser, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer loser.Rollback()
	for _, k := range keys[1:] {
		if err := loser.Put([]byte(k), []byte("loser-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	var before, inGate []int
	db.SetTestCutImagesHook(func(gate bool, n int) {
		if gate {
			inGate = append(inGate, n)
			return
		}
		before = append(before, n)
		if len(before) == 1 {
			// Between the two passes: only the gate's pass can image it.
			if err := loser.Put([]byte("late"), []byte("loser-late")); err != nil {
				t.Error(err)
			}
		}
	})
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	db.SetTestCutImagesHook(nil)
	if len(before) != 1 || before[0] != 300 || len(inGate) != 1 || inGate[0] != 1 {
		t.Errorf("images before the gate %v, inside it %v; want [300] and [1]", before, inGate)
	}
	if err := db.Sync(); err != nil {
		t.Fatal(err)
	}
	rdb := reopenOn(t, o, fs.CrashClone(vfs.CrashOptions{}))
	if st := rdb.Stats().Recovery; st.LosersUndone != 1 || st.CLRsWritten != 301 {
		t.Errorf("recovery %+v, want 1 loser undone with 301 CLRs", st)
	}
	for _, k := range keys {
		wantValue(t, rdb.Get, k, "old-"+k)
	}
}
