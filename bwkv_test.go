package bwkv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
)

// openTest opens a DB in Relaxed durability (these tests are about
// semantics, not fsyncs; the crash tests cover both modes).
func openTest(t testing.TB, o *bwkv.Options) *bwkv.DB {
	t.Helper()
	o = bwkv.WithTestGCVerify(o)
	o.Durability = bwkv.DurabilityRelaxed
	db, err := bwkv.Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestBasicPutGetDelete(t *testing.T) {
	db := openTest(t, nil)
	if _, err := db.Get([]byte("a")); !errors.Is(err, bwkv.ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}
	if err := db.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	v, err := db.Get([]byte("a"))
	if err != nil || string(v) != "1" {
		t.Fatalf("get = %q, %v", v, err)
	}
	if err := db.Delete([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete([]byte("never")); err != nil {
		t.Fatalf("delete missing: %v", err)
	}
	if _, err := db.Get([]byte("a")); !errors.Is(err, bwkv.ErrNotFound) {
		t.Fatalf("get deleted: %v", err)
	}
	if err := db.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestBadInput(t *testing.T) {
	db := openTest(t, &bwkv.Options{MaxKeySize: 8, MaxValueSize: 16})
	if err := db.Put(nil, []byte("x")); !errors.Is(err, bwkv.ErrEmptyKey) {
		t.Fatalf("empty key: %v", err)
	}
	if err := db.Put(make([]byte, 9), nil); !errors.Is(err, bwkv.ErrKeyTooLarge) {
		t.Fatalf("long key: %v", err)
	}
	if err := db.Put([]byte("k"), make([]byte, 17)); !errors.Is(err, bwkv.ErrValueTooLarge) {
		t.Fatalf("long value: %v", err)
	}
	if _, err := db.Get([]byte("k")); !errors.Is(err, bwkv.ErrNotFound) {
		t.Fatalf("half-applied write: %v", err)
	}
	tx, _ := db.Begin()
	if err := tx.Put(nil, nil); !errors.Is(err, bwkv.ErrEmptyKey) {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Put([]byte("k"), nil); !errors.Is(err, bwkv.ErrTxnDone) {
		t.Fatalf("put after commit: %v", err)
	}
	// A finished txn answers as such, whatever the arguments.
	if err := tx.Put(nil, make([]byte, 17)); !errors.Is(err, bwkv.ErrTxnDone) {
		t.Fatalf("bad put after commit: %v, want ErrTxnDone", err)
	}
	if err := tx.Delete(nil); !errors.Is(err, bwkv.ErrTxnDone) {
		t.Fatalf("bad delete after commit: %v, want ErrTxnDone", err)
	}
	if err := tx.Commit(); !errors.Is(err, bwkv.ErrTxnDone) {
		t.Fatalf("commit twice: %v", err)
	}
	if err := tx.Rollback(); !errors.Is(err, bwkv.ErrTxnDone) {
		t.Fatalf("rollback after commit: %v", err)
	}
}

func TestOptionsValidateReportsEveryField(t *testing.T) {
	o := (&bwkv.Options{PageSplitEntries: 1, DeltaChainMax: -1, MaxKeySize: -5, Durability: 7, MaxOpenFiles: 3}).EnsureDefaults()
	err := o.Validate()
	for _, want := range []string{"PageSplitEntries", "DeltaChainMax", "MaxKeySize", "Durability", "MaxOpenFiles"} {
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("Validate() = %v, want a complaint about %s", err, want)
		}
	}
	if _, err := bwkv.Open(t.TempDir(), &bwkv.Options{PageSplitEntries: 2}); err == nil {
		t.Fatal("Open accepted PageSplitEntries 2")
	}
	// A nil *Options is the defaults, as Open reads it.
	var none *bwkv.Options
	if d := none.EnsureDefaults(); d == nil || d.LockTimeout != time.Second || d.MaxUpdateRetries != 32 {
		t.Fatalf("nil EnsureDefaults = %+v, want the defaults", d)
	}
	if err := none.Validate(); err != nil {
		t.Fatalf("nil Validate: %v", err)
	}
}

func TestLockedDirectory(t *testing.T) {
	dir := t.TempDir()
	db, err := bwkv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bwkv.Open(dir, nil); !errors.Is(err, bwkv.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	db.Close()
	db2, err := bwkv.Open(dir, nil)
	if err != nil {
		t.Fatalf("reopen after close: %v", err)
	}
	db2.Close()
}

func TestClosed(t *testing.T) {
	db, err := bwkv.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := db.Begin()
	if err := tx.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	s, _ := db.NewSnapshot()
	it, _ := s.NewIter(nil)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); !errors.Is(err, bwkv.ErrClosed) {
		t.Fatalf("commit after close: %v", err)
	}
	if _, err := s.Get([]byte("a")); !errors.Is(err, bwkv.ErrClosed) {
		t.Fatalf("snapshot get after close: %v", err)
	}
	if it.First() || !errors.Is(it.Error(), bwkv.ErrClosed) {
		t.Fatalf("iter after close: %v", it.Error())
	}
	if err := db.Put([]byte("a"), nil); !errors.Is(err, bwkv.ErrClosed) {
		t.Fatalf("put after close: %v", err)
	}
	// A closed DB answers as such, whatever the arguments.
	if err := db.Put(nil, nil); !errors.Is(err, bwkv.ErrClosed) {
		t.Fatalf("bad put after close: %v, want ErrClosed", err)
	}
	if err := db.Delete(nil); !errors.Is(err, bwkv.ErrClosed) {
		t.Fatalf("bad delete after close: %v, want ErrClosed", err)
	}
	if err := tx.Put(nil, nil); !errors.Is(err, bwkv.ErrClosed) {
		t.Fatalf("bad txn put after close: %v, want ErrClosed", err)
	}
	if err := db.Close(); !errors.Is(err, bwkv.ErrClosed) {
		t.Fatalf("close twice: %v", err)
	}
}

func TestManyKeysSplitAndScan(t *testing.T) {
	db := openTest(t, &bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 2})
	const n = 5000
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("k%06d", (i*7919)%n)
		if err := db.Put([]byte(k), []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, _ := db.NewSnapshot()
	it, _ := s.NewIter(nil)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if want := fmt.Sprintf("k%06d", i); string(it.Key()) != want || string(it.Value()) != want {
			t.Fatalf("entry %d = %q=%q", i, it.Key(), it.Value())
		}
		i++
	}
	if i != n || it.Error() != nil {
		t.Fatalf("forward scan saw %d keys (%v)", i, it.Error())
	}
	for ok := it.Last(); ok; ok = it.Prev() {
		i--
		if want := fmt.Sprintf("k%06d", i); string(it.Key()) != want {
			t.Fatalf("reverse entry %d = %q", i, it.Key())
		}
	}
	if i != 0 {
		t.Fatalf("reverse scan stopped at %d", i)
	}
	// Delete everything while the snapshot pins the old versions.
	for i := 0; i < n; i++ {
		if err := db.Delete([]byte(fmt.Sprintf("k%06d", i))); err != nil {
			t.Fatal(err)
		}
	}
	it2, _ := s.NewIter(nil)
	c := 0
	for ok := it2.First(); ok; ok = it2.Next() {
		c++
	}
	if c != n {
		t.Fatalf("old snapshot sees %d keys after deletes, want %d", c, n)
	}
	it2.Close()
	it.Close()
	s.Close()
	if st := db.Stats(); st.Tree.Merges != 0 {
		t.Fatalf("pages merged while a snapshot pinned their versions: %+v", st.Tree)
	}
	// With the snapshot gone, rewriting and deleting lets consolidation drop
	// the tombstones, and underfull leaves merge.
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if err := db.Delete([]byte(fmt.Sprintf("k%06d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := db.Stats()
	if st.Tree.Splits == 0 || st.Tree.Merges == 0 {
		t.Fatalf("expected splits and merges: %+v", st.Tree)
	}
	if n, _ := db.Get([]byte("k000001")); n != nil {
		t.Fatalf("deleted key readable")
	}
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	for _, ckpt := range []bool{false, true} {
		db, err := bwkv.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		mustPut(t, db, "a", fmt.Sprint(ckpt))
		if ckpt {
			if err := db.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
		ro, err := bwkv.Open(dir, &bwkv.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("read-only open (checkpointed=%v): %v", ckpt, err)
		}
		wantValue(t, ro.Get, "a", fmt.Sprint(ckpt))
		if err := ro.Put([]byte("b"), nil); !errors.Is(err, bwkv.ErrReadOnly) {
			t.Fatalf("put on a read-only DB: %v", err)
		}
		if _, err := ro.Begin(); !errors.Is(err, bwkv.ErrReadOnly) {
			t.Fatalf("begin on a read-only DB: %v", err)
		}
		ro.Close()
	}
	if _, err := bwkv.Open(filepath.Join(dir, "missing"), &bwkv.Options{ReadOnly: true}); err == nil {
		t.Fatal("read-only open of a missing DB succeeded")
	}
}

func TestUpdatePanicRollsBack(t *testing.T) {
	db := openTest(t, nil)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the original panic", r)
			}
		}()
		db.Update(func(tx *bwkv.Txn) error {
			mustPut(t, tx, "k", "v")
			panic("boom")
		})
	}()
	wantValue(t, db.Get, "k", "")
	if st := db.Stats().Txn; st.Open != 0 || st.Aborts != 1 {
		t.Fatalf("after a panicking Update: %+v", st)
	}
	// An error from fn rolls back too and is returned as is.
	errBoom := errors.New("boom")
	if err := db.Update(func(tx *bwkv.Txn) error { mustPut(t, tx, "k", "v"); return errBoom }); err != errBoom {
		t.Fatalf("Update returned %v", err)
	}
	wantValue(t, db.Get, "k", "")
}

func TestFormatOptionsPersist(t *testing.T) {
	dir := t.TempDir()
	db, err := bwkv.Open(dir, &bwkv.Options{MaxKeySize: 16})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	// The stored MaxKeySize wins over a new request.
	db, err = bwkv.Open(dir, &bwkv.Options{MaxKeySize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Put(make([]byte, 17), nil); !errors.Is(err, bwkv.ErrKeyTooLarge) {
		t.Fatalf("17-byte key with stored MaxKeySize 16: %v", err)
	}
}

// TestNoGoroutineLeft: Close stops every goroutine the DB started
// (docs/crash-safety.md, layer 9), in both durability modes and after checkpoints.
func TestNoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, d := range []bwkv.Durability{bwkv.DurabilitySync, bwkv.DurabilityRelaxed} {
		db, err := bwkv.Open(t.TempDir(), &bwkv.Options{Durability: d, CheckpointBytes: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 500; i++ {
			mustPut(t, db, fmt.Sprintf("k%03d", i), string(make([]byte, 200)))
		}
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Goroutines exit asynchronously after their owner signals; allow a
	// moment (a generous bound, not a timing assertion).
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
