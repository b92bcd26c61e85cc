package bwkv

import (
	"strings"
	"testing"

	"github.com/bwkv/bwkv/internal/invariants"
)

// mustPanicInvariants runs f and requires, in invariants and race builds
// (the suite runs with -race), the close checker's panic naming what; in
// other builds f must return normally.
func mustPanicInvariants(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if !invariants.Enabled {
			if r != nil {
				t.Fatalf("%s: panic %v in a build without invariants", what, r)
			}
			return
		}
		msg, _ := r.(string)
		if !strings.Contains(msg, what+" after the handle was closed") {
			t.Fatalf("%s: recovered %v, want the close checker's panic", what, r)
		}
	}()
	f()
	if invariants.Enabled {
		t.Fatalf("%s: no panic", what)
	}
}

// TestCloseCheckerWired shows the use-after-close checkers of Snapshot,
// Txn and Iter firing. The public methods return ErrClosed / ErrTxnDone
// for a handle closed through them (the API's contract, tested in
// handles_test.go), so the test ends each handle's checker alone: what an
// engine path that read through an ended handle would meet.
func TestCloseCheckerWired(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{Durability: DurabilityRelaxed})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}

	s, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	it, err := s.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	s.live.Close()
	mustPanicInvariants(t, "Iter read through its Snapshot or Txn", func() { it.First() })
	it.Close()
	s.Close()

	s, err = db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	it, err = s.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	it.live.Close()
	mustPanicInvariants(t, "Iter read", func() { it.First() })
	it.Close()
	s.Close()

	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tx.live.Close()
	mustPanicInvariants(t, "Txn.GetAppend", func() { tx.Get([]byte("k")) })
	mustPanicInvariants(t, "Txn write", func() { tx.Put([]byte("k"), []byte("w")) })
	tx.Rollback()
}
