package bwkv_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bwkv/bwkv"
)

// Tests of the scan path: allocation-free snapshot scans, handles never
// reused across owners, the in-place walk of plain leaves next to versions
// in flight, and leaf crossing by sibling link under concurrent splits and
// merges.

func scanKey(i int) string { return fmt.Sprintf("k%06d", i) }

// loadScanDB writes n keys (value "v1-<key>") and checkpoints.
func loadScanDB(t *testing.T, o *bwkv.Options, n int) *bwkv.DB {
	t.Helper()
	db := openTest(t, o)
	for i := 0; i < n; i += 500 {
		err := db.Update(func(tx *bwkv.Txn) error {
			for j := i; j < i+500 && j < n; j++ {
				if err := tx.Put([]byte(scanKey(j)), []byte("v1-"+scanKey(j))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	return db
}

// A snapshot scan (NewSnapshot, NewIter, SeekGE, 100 Next, Close) makes
// no allocation beyond the amortized slabs (one per 64 snapshots, one per
// 64 iterators), with or without bounds.
func TestScanAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops pooled slabs at random")
	}
	db := loadScanDB(t, nil, 3000)
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make([][]byte, 3000)
	for i := range keys {
		keys[i] = []byte(scanKey(i))
	}
	prefix := []byte("k001")
	for _, opts := range []*bwkv.IterOptions{nil, {Prefix: prefix}, {LowerBound: []byte("k0005"), UpperBound: []byte("k0025")}} {
		const runs = 64 * 100
		var before, after runtime.MemStats
		seen := 0
		scan := func() {
			s, err := db.NewSnapshot()
			if err != nil {
				t.Fatal(err)
			}
			it, err := s.NewIter(opts)
			if err != nil {
				t.Fatal(err)
			}
			k := keys[rng.IntN(len(keys))]
			for ok, c := it.SeekGE(k), 0; ok && c < 100; ok, c = it.Next(), c+1 {
				seen += len(it.Key()) + len(it.Value())
			}
			it.Close()
			s.Close()
		}
		for i := 0; i < 64; i++ {
			scan() // warm the pools
		}
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := 0; i < runs; i++ {
			scan()
		}
		runtime.ReadMemStats(&after)
		if seen == 0 {
			t.Fatalf("opts %+v: scans saw nothing", opts)
		}
		if n := after.Mallocs - before.Mallocs; n > runs/16 {
			t.Fatalf("opts %+v: %d allocations for %d scans, want <= %d", opts, n, runs, runs/16)
		}
	}
}

// A closed iterator's handle is never handed to a later NewIter: using it
// keeps failing with ErrClosed and leaves the new owner's scan alone.
func TestIterStaleHandleNeverReused(t *testing.T) {
	db := loadScanDB(t, nil, 300)
	s, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	seen := map[*bwkv.Iter]bool{}
	for i := 0; i < 300; i++ { // several slabs' worth
		mine, err := s.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !mine.SeekGE([]byte(scanKey(i))) {
			t.Fatal("SeekGE on a fresh iterator")
		}
		if err := mine.Close(); err != nil {
			t.Fatal(err)
		}
		theirs, err := s.NewIter(&bwkv.IterOptions{LowerBound: []byte(scanKey(i))})
		if err != nil {
			t.Fatal(err)
		}
		if theirs == mine || seen[theirs] {
			t.Fatalf("round %d: NewIter returned a handle already closed", i)
		}
		seen[mine], seen[theirs] = true, true
		if !theirs.First() {
			t.Fatal("First on their iterator")
		}
		if mine.Next() || mine.SeekGE([]byte("k")) || mine.First() || mine.Valid() || mine.Key() != nil {
			t.Fatal("a closed iterator moved")
		}
		if !errors.Is(mine.Error(), bwkv.ErrClosed) {
			t.Fatalf("closed iterator's error %v, want ErrClosed", mine.Error())
		}
		if err := mine.Close(); !errors.Is(err, bwkv.ErrClosed) {
			t.Fatalf("second Close: %v, want ErrClosed", err)
		}
		if got := string(theirs.Key()); got != scanKey(i) {
			t.Fatalf("their iterator at %q, want %q", got, scanKey(i))
		}
		if err := theirs.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// checkScan compares a reader's full forward and backward scans, and a
// forward scan that steps back and forth at every key, with want (key ->
// value). It returns how many positions were walked in place, and of those
// how many with a chain merged in.
func checkScan(t *testing.T, what string, r bwkv.Reader, want map[string]string) (inPlace, merged int) {
	t.Helper()
	it, err := r.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	var prev []byte
	for ok := it.First(); ok; ok = it.Next() {
		k, v := string(it.Key()), string(it.Value())
		if prev != nil && bytes.Compare(prev, it.Key()) >= 0 {
			t.Fatalf("%s: %q after %q", what, k, prev)
		}
		prev = append(prev[:0], k...)
		if w, ok := want[k]; !ok || w != v {
			t.Fatalf("%s: %q = %q, want %q (present %v)", what, k, v, w, ok)
		}
		if it.InPlace() {
			inPlace++
		}
		if it.Merged() {
			merged++
		}
		n++
	}
	if it.Error() != nil || n != len(want) {
		t.Fatalf("%s: forward scan saw %d keys, want %d (err %v)", what, n, len(want), it.Error())
	}
	n = 0
	for ok := it.Last(); ok; ok = it.Prev() {
		if w := want[string(it.Key())]; w != string(it.Value()) {
			t.Fatalf("%s backward: %q = %q, want %q", what, it.Key(), it.Value(), w)
		}
		n++
	}
	if it.Error() != nil || n != len(want) {
		t.Fatalf("%s: backward scan saw %d keys, want %d (err %v)", what, n, len(want), it.Error())
	}
	// Zigzag: Prev from a merged leaf materializes it at the same key.
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ok := it.First()
	for i := range keys {
		if !ok || string(it.Key()) != keys[i] {
			t.Fatalf("%s zigzag: at %d got %q (valid %v), want %q", what, i, it.Key(), ok, keys[i])
		}
		if i > 0 {
			if !it.Prev() || string(it.Key()) != keys[i-1] || string(it.Value()) != want[keys[i-1]] {
				t.Fatalf("%s zigzag: Prev from %q got %q", what, keys[i], it.Key())
			}
			if !it.Next() || string(it.Key()) != keys[i] {
				t.Fatalf("%s zigzag: Next back to %q got %q", what, keys[i], it.Key())
			}
		}
		ok = it.Next()
	}
	if ok || it.Error() != nil {
		t.Fatalf("%s zigzag: past the end valid %v, err %v", what, ok, it.Error())
	}
	checkTurns(t, what, it, keys)
	return inPlace, merged
}

// checkTurns checks a turn right after a seek, at every key and between
// keys: a seek loads a leaf from the seek key on (SeekGE) or below it
// (SeekLT), and the turn must still find the keys of that leaf the seek
// left out.
func checkTurns(t *testing.T, what string, it *bwkv.Iter, keys []string) {
	t.Helper()
	at := func(i int) string {
		if i < 0 || i >= len(keys) {
			return "(none)"
		}
		return keys[i]
	}
	expect := func(op string, ok bool, i int) {
		t.Helper()
		if want := i >= 0 && i < len(keys); ok != want || ok && string(it.Key()) != keys[i] {
			t.Fatalf("%s: %s = %v %q, want %q", what, op, ok, it.Key(), at(i))
		}
	}
	for i, k := range keys {
		// At the key: SeekGE lands on it, SeekLT on the one before.
		// (A turn needs a position: an exhausted iterator stays so.)
		expect("SeekGE("+k+")", it.SeekGE([]byte(k)), i)
		expect("SeekGE("+k+")+Prev", it.Prev(), i-1)
		if expect("SeekLT("+k+")", it.SeekLT([]byte(k)), i-1); i > 0 {
			expect("SeekLT("+k+")+Next", it.Next(), i)
		}
		// Just past the key: no key lies between.
		past := []byte(k + "\x00")
		if expect("SeekGE("+k+"+0)", it.SeekGE(past), i+1); i+1 < len(keys) {
			expect("SeekGE("+k+"+0)+Prev", it.Prev(), i)
		}
		expect("SeekLT("+k+"+0)", it.SeekLT(past), i)
		expect("SeekLT("+k+"+0)+Next", it.Next(), i+1)
	}
}

// The in-place walk of plain leaves stays correct next to versions in
// flight: uncommitted writes, committed writes newer than a snapshot,
// consolidated bases holding several versions, tombstones.
func TestScanPlainLeavesWithVersionsInFlight(t *testing.T) {
	const n = 2000
	db := loadScanDB(t, &bwkv.Options{PageSplitEntries: 64, DeltaChainMax: 8}, n)
	v1 := map[string]string{}
	for i := 0; i < n; i++ {
		v1[scanKey(i)] = "v1-" + scanKey(i)
	}
	s1, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	if in, _ := checkScan(t, "loaded", s1, v1); in == 0 {
		t.Fatal("no leaf walked in place after a load and checkpoint: the test exercises nothing")
	}

	// An uncommitted txn: its writes sit in chains, invisible to s1,
	// visible to its own iterator.
	v2 := map[string]string{}
	for k, v := range v1 {
		v2[k] = v
	}
	tx := mustBegin(t, db)
	for i := 500; i < 520; i++ {
		mustPut(t, tx, scanKey(i), "v2")
		v2[scanKey(i)] = "v2"
	}
	for i := 600; i < 620; i++ {
		if err := tx.Delete([]byte(scanKey(i))); err != nil {
			t.Fatal(err)
		}
		delete(v2, scanKey(i))
	}
	checkScan(t, "s1 beside an uncommitted txn", s1, v1)
	if _, m := checkScan(t, "the txn's own view", tx, v2); m == 0 {
		t.Fatal("the txn's writes left no leaf walked with its chain merged in: the test exercises nothing")
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	checkScan(t, "s1 after the commit", s1, v1)

	// Rewrite one leaf's keys past DeltaChainMax: it consolidates while s1
	// holds the old versions, so its base keeps two versions per key.
	for round := 0; round < 3; round++ {
		for i := 500; i < 520; i++ {
			v := fmt.Sprintf("v3-%d", round)
			mustPut(t, db, scanKey(i), v)
			v2[scanKey(i)] = v
		}
	}
	checkScan(t, "s1 after consolidations", s1, v1)
	// One key rewritten one write at a time: some write leaves its leaf
	// just consolidated (no chain) with versions s1 must not see.
	it1, err := s1.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it1.Close()
	k := []byte(scanKey(505))
	for w := 0; w < 40; w++ {
		v := fmt.Sprintf("v5-%d", w)
		mustPut(t, db, string(k), v)
		v2[string(k)] = v
		if !it1.SeekGE(k) || !bytes.Equal(it1.Key(), k) || string(it1.Value()) != v1[string(k)] {
			t.Fatalf("write %d: s1 sees %q = %q, want %q", w, it1.Key(), it1.Value(), v1[string(k)])
		}
		if !it1.Next() || string(it1.Key()) != scanKey(506) || string(it1.Value()) != v1[scanKey(506)] {
			t.Fatalf("write %d: s1's next is %q = %q", w, it1.Key(), it1.Value())
		}
	}
	s2, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	checkScan(t, "s2", s2, v2)
	s2.Close()
	s1.Close()

	// With no reader left, further writes consolidate to single retired
	// versions; deleted keys stay deleted.
	for round := 0; round < 3; round++ {
		for i := 500; i < 520; i++ {
			mustPut(t, db, scanKey(i), "v4")
			v2[scanKey(i)] = "v4"
		}
		for i := 600; i < 620; i++ {
			mustPut(t, db, scanKey(i), "x")
			if err := db.Delete([]byte(scanKey(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	s3, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	checkScan(t, "s3", s3, v2)
}

// Scans that cross leaves by sibling link never skip or repeat a key
// while a writer splits and merges the leaves under them: keys that no
// one touches are all seen, once each, in order, by every snapshot scan.
func TestScanSiblingCrossingUnderSplitsAndMerges(t *testing.T) {
	rounds := scanSMORoundsDefault
	if testing.Short() {
		rounds = 800
	}
	if v, err := strconv.Atoi(os.Getenv("BWKV_SCAN_SMO_ROUNDS")); err == nil {
		rounds = v
	}
	const stable = 400
	db := openTest(t, &bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 4})
	for i := 0; i < stable; i++ {
		mustPut(t, db, fmt.Sprintf("s%05d", i*10), "stable")
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	werr := make(chan error, 1)
	go func() { // churn: fill the gaps between stable keys, then empty them
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 1))
		for r := 0; !stop.Load(); r++ {
			lo := rng.IntN(stable)
			hi := min(stable, lo+1+rng.IntN(40))
			for i := lo; i < hi; i++ {
				for j := 1; j < 10; j++ {
					k := []byte(fmt.Sprintf("s%05d", i*10+j))
					var err error
					if r%2 == 0 {
						err = db.Put(k, []byte("churn"))
					} else {
						err = db.Delete(k)
					}
					if err != nil {
						werr <- err
						return
					}
				}
			}
		}
	}()
	before := db.Stats().Tree
	hops0 := db.SiblingHops()
	for r := 0; r < rounds; r++ {
		s, err := db.NewSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		it, err := s.NewIter(nil)
		if err != nil {
			t.Fatal(err)
		}
		next, n := 0, 0
		var prev []byte
		for ok := it.First(); ok; ok = it.Next() {
			k := it.Key()
			if prev != nil && bytes.Compare(prev, k) >= 0 {
				t.Fatalf("round %d: key %q after %q", r, k, prev)
			}
			if r%2 == 1 && prev != nil {
				// Odd rounds turn back at every key: a leaf reached
				// across a concurrent merge starts mid-leaf, and the
				// turn must still find the key just left.
				at := string(k)
				if !it.Prev() || !bytes.Equal(it.Key(), prev) {
					t.Fatalf("round %d: Prev from %q = %q, want %q", r, at, it.Key(), prev)
				}
				if !it.Next() || string(it.Key()) != at {
					t.Fatalf("round %d: Next back from %q = %q, want %q", r, prev, it.Key(), at)
				}
				k = it.Key()
			}
			prev = append(prev[:0], k...)
			if string(it.Value()) == "stable" {
				if want := fmt.Sprintf("s%05d", next*10); string(k) != want {
					t.Fatalf("round %d: stable key %q, want %q (skipped or repeated)", r, k, want)
				}
				next++
			}
			n++
		}
		if it.Error() != nil || next != stable {
			t.Fatalf("round %d: saw %d of %d stable keys (err %v)", r, next, stable, it.Error())
		}
		it.Close()
		s.Close()
		select {
		case err := <-werr:
			t.Fatal(err)
		default:
		}
	}
	stop.Store(true)
	wg.Wait()
	after := db.Stats().Tree
	t.Logf("splits %d, merges %d, sibling hops %d", after.Splits-before.Splits, after.Merges-before.Merges, db.SiblingHops()-hops0)
	if db.SiblingHops() == hops0 {
		t.Fatal("no leaf crossing used a sibling link")
	}
	if after.Splits == before.Splits || after.Merges == before.Merges {
		t.Fatalf("the writer made %d splits and %d merges: the test needs both", after.Splits-before.Splits, after.Merges-before.Merges)
	}
}
