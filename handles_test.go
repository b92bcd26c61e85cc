package bwkv_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
)

// Handles that are misused (closed twice, used after their end) fail with
// ErrClosed / ErrTxnDone and never touch anyone else's handle.

func TestSnapshotDoubleCloseLeavesOthersAlone(t *testing.T) {
	db := openTest(t, nil)
	mustPut(t, db, "k", "old")
	for i := 0; i < 500; i++ {
		mine, err := db.NewSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		if err := mine.Close(); err != nil {
			t.Fatal(err)
		}
		// Another caller's snapshot, opened after mine was closed (a
		// pooled handle would be the same object).
		theirs, err := db.NewSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		if err := mine.Close(); !errors.Is(err, bwkv.ErrClosed) {
			t.Fatalf("second Close: %v, want ErrClosed", err)
		}
		if _, err := mine.Get([]byte("k")); !errors.Is(err, bwkv.ErrClosed) {
			t.Fatalf("Get on a closed snapshot: %v, want ErrClosed", err)
		}
		if i%100 == 0 {
			// theirs still sees its state, and still protects it from
			// consolidation: newer writes and a checkpoint change nothing.
			mustPut(t, db, "k", "new")
			db.Checkpoint()
			wantValue(t, theirs.Get, "k", "old")
			mustPut(t, db, "k", "old")
		} else {
			wantValue(t, theirs.Get, "k", "old")
		}
		if err := theirs.Close(); err != nil {
			t.Fatalf("their Close: %v", err)
		}
	}
}

// NewSnapshot/Close stay (amortized) allocation-free: snapshots come from
// slabs of 64, so at most one allocation per 64 snapshots (plus noise).
func TestSnapshotAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops pooled slabs at random")
	}
	db := openTest(t, nil)
	mustPut(t, db, "k", "v")
	dst := make([]byte, 0, 16)
	const runs = 64 * 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < runs; i++ {
		s, _ := db.NewSnapshot()
		dst, _ = s.GetAppend(dst[:0], []byte("k"))
		s.Close()
	}
	runtime.ReadMemStats(&after)
	if n := after.Mallocs - before.Mallocs; n > runs/32 {
		t.Fatalf("%d allocations for %d snapshots, want <= %d", n, runs, runs/32)
	}
}

func TestIterAfterOwnerEnded(t *testing.T) {
	db := openTest(t, nil)
	mustPut(t, db, "a", "1")
	mustPut(t, db, "b", "2")
	s, _ := db.NewSnapshot()
	it, err := s.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !it.First() {
		t.Fatal("First on an open snapshot")
	}
	s.Close()
	// Still positioned at "a", but its owner ended: no positioning call
	// is needed for Valid and Error to say so.
	if it.Valid() || !errors.Is(it.Error(), bwkv.ErrClosed) {
		t.Fatalf("right after the snapshot closed: valid %v, err %v", it.Valid(), it.Error())
	}
	if it.Next() || it.Valid() || !errors.Is(it.Error(), bwkv.ErrClosed) {
		t.Fatalf("Next after the snapshot closed: valid %v, err %v", it.Valid(), it.Error())
	}
	if it.First() || !errors.Is(it.Error(), bwkv.ErrClosed) {
		t.Fatal("First after the snapshot closed")
	}
	if err := it.Close(); !errors.Is(err, bwkv.ErrClosed) {
		t.Fatalf("Close after the snapshot closed: %v, want ErrClosed", err)
	}

	for _, end := range []string{"commit", "rollback"} {
		tx := mustBegin(t, db)
		it, err := tx.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !it.First() {
			t.Fatal("First on an open txn")
		}
		if end == "commit" {
			tx.Commit()
		} else {
			tx.Rollback()
		}
		if it.Valid() || !errors.Is(it.Error(), bwkv.ErrClosed) {
			t.Fatalf("right after %s: valid %v, err %v", end, it.Valid(), it.Error())
		}
		if it.Next() || it.SeekGE([]byte("a")) || !errors.Is(it.Error(), bwkv.ErrClosed) {
			t.Fatalf("iterator after %s: err %v, want ErrClosed", end, it.Error())
		}
		n := 0
		for range it.All() {
			n++
		}
		if n != 0 {
			t.Fatalf("All after %s yielded %d entries", end, n)
		}
		if err := it.Close(); !errors.Is(err, bwkv.ErrClosed) {
			t.Fatalf("iterator Close after %s: %v, want ErrClosed", end, err)
		}
		if err := it.Close(); !errors.Is(err, bwkv.ErrClosed) {
			t.Fatalf("second iterator Close: %v", err)
		}
	}

	// An iterator closed before its owner ends closes cleanly.
	s, _ = db.NewSnapshot()
	it, _ = s.NewIter(nil)
	if !it.First() || it.Close() != nil || s.Close() != nil {
		t.Fatal("iterator and snapshot closed in order")
	}

	// DB.Close: every later use of a snapshot or iterator is ErrClosed,
	// closing them included (they are released all the same).
	s, _ = db.NewSnapshot()
	it, _ = s.NewIter(nil)
	if !it.First() {
		t.Fatal("First on an open snapshot")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if it.Valid() || !errors.Is(it.Error(), bwkv.ErrClosed) {
		t.Fatalf("after DB.Close: valid %v, err %v", it.Valid(), it.Error())
	}
	if err := it.Close(); !errors.Is(err, bwkv.ErrClosed) {
		t.Fatalf("iterator Close after DB.Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); !errors.Is(err, bwkv.ErrClosed) {
		t.Fatalf("snapshot Close after DB.Close: %v, want ErrClosed", err)
	}
}

func TestTxnAfterEnd(t *testing.T) {
	db := openTest(t, nil)
	for _, end := range []string{"commit", "rollback"} {
		tx := mustBegin(t, db)
		mustPut(t, tx, "k", end)
		var err error
		if end == "commit" {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		checks := map[string]error{}
		checks["Put"] = tx.Put([]byte("k"), []byte("x"))
		checks["Delete"] = tx.Delete([]byte("k"))
		_, checks["Get"] = tx.Get([]byte("k"))
		_, checks["NewIter"] = tx.NewIter(nil)
		checks["Commit"] = tx.Commit()
		checks["Rollback"] = tx.Rollback()
		for op, err := range checks {
			if !errors.Is(err, bwkv.ErrTxnDone) {
				t.Errorf("%s after %s: %v, want ErrTxnDone", op, end, err)
			}
		}
	}
	wantValue(t, db.Get, "k", "commit")
}

// A Txn left open and waiting for a lock when the DB closes returns
// ErrClosed instead of hanging.
func TestCloseWhileWaiting(t *testing.T) {
	dir := t.TempDir()
	db, err := bwkv.Open(dir, &bwkv.Options{Durability: bwkv.DurabilityRelaxed, LockTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	holder, waiter := mustBegin(t, db), mustBegin(t, db)
	mustPut(t, holder, "x", "1")
	res := make(chan error, 1)
	go func() { res <- waiter.Put([]byte("x"), []byte("2")) }()
	waitForWaiter(t, waiter)
	db.Close()
	if err := <-res; !errors.Is(err, bwkv.ErrClosed) {
		t.Fatalf("waiting write after Close: %v, want ErrClosed", err)
	}
}

func TestIterPrefixAllBackward(t *testing.T) {
	db := openTest(t, &bwkv.Options{PageSplitEntries: 4})
	keys := []string{"a", "ab", "abc", "ab\xff", "ab\xff\xff", "ac", "b", "\xff", "\xff\xff", "\xff\xffa"}
	for _, k := range keys {
		mustPut(t, db, k, "v"+k)
	}
	scan := func(r bwkv.Reader, o *bwkv.IterOptions, backward bool) []string {
		t.Helper()
		it, err := r.NewIter(o)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		seq := it.All()
		if backward {
			seq = it.Backward()
		}
		var got []string
		for k, v := range seq {
			if string(v) != "v"+string(k) {
				t.Fatalf("value of %q = %q", k, v)
			}
			got = append(got, string(k))
		}
		if it.Error() != nil {
			t.Fatal(it.Error())
		}
		return got
	}
	s, _ := db.NewSnapshot()
	defer s.Close()
	tx := mustBegin(t, db)
	defer tx.Rollback()
	for _, r := range []bwkv.Reader{s, tx} {
		for _, tc := range []struct {
			prefix string
			want   []string
		}{
			{"ab", []string{"ab", "abc", "ab\xff", "ab\xff\xff"}},
			{"ab\xff", []string{"ab\xff", "ab\xff\xff"}},
			{"\xff", []string{"\xff", "\xff\xff", "\xff\xffa"}},
			{"\xff\xff", []string{"\xff\xff", "\xff\xffa"}},
			{"z", nil},
		} {
			o := &bwkv.IterOptions{Prefix: []byte(tc.prefix)}
			if got := scan(r, o, false); !slices.Equal(got, tc.want) {
				t.Errorf("prefix %q: %q, want %q", tc.prefix, got, tc.want)
			}
			rev := slices.Clone(tc.want)
			slices.Reverse(rev)
			if got := scan(r, o, true); !slices.Equal(got, rev) {
				t.Errorf("prefix %q backward: %q, want %q", tc.prefix, got, rev)
			}
		}
		if got := scan(r, nil, false); !slices.Equal(got, keys) {
			t.Errorf("All: %q, want %q", got, keys)
		}
		for _, o := range []*bwkv.IterOptions{
			{Prefix: []byte("a"), LowerBound: []byte("a")},
			{Prefix: []byte("a"), UpperBound: []byte("b")},
		} {
			if _, err := r.NewIter(o); err == nil {
				t.Errorf("NewIter(%+v) accepted Prefix with a bound", o)
			}
		}
	}
	// Breaking out of the loop stops the scan; the iterator stays usable.
	it, _ := s.NewIter(nil)
	defer it.Close()
	n := 0
	for range it.All() {
		if n++; n == 3 {
			break
		}
	}
	if n != 3 || string(it.Key()) != "abc" {
		t.Fatalf("after break: %d entries, at %q", n, it.Key())
	}
}

func TestOptionsInEffect(t *testing.T) {
	dir := t.TempDir()
	db, err := bwkv.Open(dir, &bwkv.Options{PageSplitEntries: 16, LockTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	o := db.Options()
	if o.PageSplitEntries != 16 || o.LockTimeout != 3*time.Second || o.MaxUpdateRetries != 32 || o.CacheBytes == 0 {
		t.Fatalf("Options() = %+v", o)
	}
	db.Close()
	// The stored format option wins over a different request.
	db, err = bwkv.Open(dir, &bwkv.Options{PageSplitEntries: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if o := db.Options(); o.PageSplitEntries != 16 || o.LockTimeout != time.Second {
		t.Fatalf("after reopen: PageSplitEntries %d LockTimeout %v, want 16 and the 1 s default", o.PageSplitEntries, o.LockTimeout)
	}
}

// TestIterTurnsAtTheEnds: an iterator exhausted one way turns back: Prev
// after it ran past the end is Last, Next after it ran before the start is
// First (within the bounds, on a snapshot and in a transaction, over many
// leaves); an iterator never positioned, or exhausted the same way, stays
// exhausted.
func TestIterTurnsAtTheEnds(t *testing.T) {
	db := openTest(t, &bwkv.Options{PageSplitEntries: 4})
	var keys []string
	for i := 0; i < 40; i++ {
		k := fmt.Sprintf("k%02d", i)
		keys = append(keys, k)
		mustPut(t, db, k, "v")
	}
	s, _ := db.NewSnapshot()
	defer s.Close()
	tx := mustBegin(t, db)
	defer tx.Rollback()
	mustPut(t, tx, "k40", "own write") // the txn's iterator sees it
	at := func(it *bwkv.Iter, ok bool, want string, what string) {
		t.Helper()
		got := ""
		if ok {
			got = string(it.Key())
		}
		if got != want || it.Valid() != (want != "") {
			t.Errorf("%s: at %q (valid %v), want %q", what, got, it.Valid(), want)
		}
	}
	for _, tc := range []struct {
		name          string
		r             bwkv.Reader
		o             *bwkv.IterOptions
		first, last   string
		below, beyond string // a seek key before the first key in bounds and one past the last
	}{
		{"snapshot", s, nil, "k00", "k39", "a", "z"},
		{"txn", tx, nil, "k00", "k40", "a", "z"},
		{"snapshot bounds", s, &bwkv.IterOptions{LowerBound: []byte("k05"), UpperBound: []byte("k31")}, "k05", "k30", "k01", "k35"},
		{"txn prefix", tx, &bwkv.IterOptions{Prefix: []byte("k1")}, "k10", "k19", "k0", "k2"},
	} {
		it, err := tc.r.NewIter(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		at(it, it.Next(), "", tc.name+": Next never positioned")
		at(it, it.Prev(), "", tc.name+": Prev never positioned")
		ok := it.First()
		for ok {
			ok = it.Next()
		}
		at(it, it.Next(), "", tc.name+": Next past the end")
		at(it, it.Prev(), tc.last, tc.name+": Prev past the end")
		ok = it.Last()
		for ok {
			ok = it.Prev()
		}
		at(it, it.Prev(), "", tc.name+": Prev before the start")
		at(it, it.Next(), tc.first, tc.name+": Next before the start")
		at(it, it.SeekGE([]byte(tc.beyond)), "", tc.name+": SeekGE past the last")
		at(it, it.Prev(), tc.last, tc.name+": Prev after SeekGE past the last")
		at(it, it.SeekLT([]byte(tc.below)), "", tc.name+": SeekLT before the first")
		at(it, it.Next(), tc.first, tc.name+": Next after SeekLT before the first")
		// A step off either end turns back, whichever way the iterator
		// reached the last (first) key.
		at(it, it.Last(), tc.last, tc.name+": Last")
		at(it, it.Next(), "", tc.name+": Next after Last")
		at(it, it.Prev(), tc.last, tc.name+": Prev after Last and Next")
		at(it, it.First(), tc.first, tc.name+": First")
		at(it, it.Prev(), "", tc.name+": Prev after First")
		at(it, it.Next(), tc.first, tc.name+": Next after First and Prev")
		// The turn is a position like any other: the scan goes on from it.
		at(it, it.Next(), keys[slices.Index(keys, tc.first)+1], tc.name+": Next after the turn")
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// An empty range: both turns find nothing.
	it, _ := s.NewIter(&bwkv.IterOptions{Prefix: []byte("x")})
	defer it.Close()
	at(it, it.First(), "", "empty First")
	at(it, it.Prev(), "", "empty Prev after First")
	at(it, it.Last(), "", "empty Last")
	at(it, it.Next(), "", "empty Next after Last")
}
