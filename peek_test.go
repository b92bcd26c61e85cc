package bwkv_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/bwkv/bwkv"
)

// TestPointAccessPeeks: with the cache full, point reads and writes of
// evicted leaves search the leaves' frames on disk for their key and
// leave the pages evicted (Stats.Cache.Peeks), and what they see and do
// is what a loaded page gives: every value reads back, a
// read-modify-write logs and installs the new value (visible at once,
// after a checkpoint and after a reopen), a delete hides the key, and a
// write of a key another transaction committed since the writer's start
// still conflicts.
func TestPointAccessPeeks(t *testing.T) {
	dir := t.TempDir()
	val := func(i, round int) []byte { return bytes.Repeat(fmt.Appendf(nil, "%d.%d|", i, round), 40) }
	db, o := openPeekDB(t, dir, func(i int) []byte { return val(i, 0) })
	const n = peekKeys
	perm := rand.New(rand.NewPCG(1, 2)).Perm(n)
	key := peekKey
	evict := func() {
		t.Helper()
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		bwkv.StubAll(db)
	}
	evict()

	// Reads.
	before := db.Stats().Cache
	for _, i := range perm {
		got, err := db.Get(key(i))
		if err != nil || !bytes.Equal(got, val(i, 0)) {
			t.Fatalf("Get(%s) = %.20q, %v; want %.20q", key(i), got, err, val(i, 0))
		}
	}
	after := db.Stats().Cache
	t.Logf("reads: peeks %d, loads %d", after.Peeks-before.Peeks, after.Misses-before.Misses)
	if after.Peeks-before.Peeks < n/2 {
		t.Fatalf("%d of %d reads of evicted leaves peeked", after.Peeks-before.Peeks, n)
	}

	// Read-modify-writes (the write takes the read's peek), blind writes
	// of existing keys (the write peeks itself) and deletes.
	evict()
	before = db.Stats().Cache
	for _, i := range perm {
		var err error
		switch i % 3 {
		case 0:
			err = db.Update(func(tx *bwkv.Txn) error {
				old, err := tx.Get(key(i))
				if err != nil {
					return err
				}
				if !bytes.Equal(old, val(i, 0)) {
					return fmt.Errorf("read %.20q, want %.20q", old, val(i, 0))
				}
				return tx.Put(key(i), val(i, 1))
			})
		case 1:
			err = db.Put(key(i), val(i, 1))
		default:
			err = db.Delete(key(i))
		}
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	after = db.Stats().Cache
	t.Logf("writes: peeks %d, loads %d", after.Peeks-before.Peeks, after.Misses-before.Misses)
	if after.Peeks-before.Peeks < n/2 {
		t.Fatalf("%d of %d writes of evicted leaves peeked", after.Peeks-before.Peeks, n)
	}
	check := func(when string) {
		t.Helper()
		for _, i := range perm {
			got, err := db.Get(key(i))
			if i%3 == 2 {
				if !errors.Is(err, bwkv.ErrNotFound) {
					t.Fatalf("%s: Get(%s) of a deleted key = %.20q, %v", when, key(i), got, err)
				}
				continue
			}
			if err != nil || !bytes.Equal(got, val(i, 1)) {
				t.Fatalf("%s: Get(%s) = %.20q, %v; want %.20q", when, key(i), got, err, val(i, 1))
			}
		}
	}
	check("after the writes")
	evict()
	check("after a checkpoint")

	// A snapshot older than a version on disk reads the version below it
	// (a peek stops only at a version every reader sees).
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range perm[:200] {
		if i%3 != 2 {
			if err := db.Put(key(i), val(i, 9)); err != nil {
				t.Fatal(err)
			}
		}
	}
	evict()
	for _, i := range perm[:200] {
		got, err := snap.Get(key(i))
		if i%3 == 2 {
			if !errors.Is(err, bwkv.ErrNotFound) {
				t.Fatalf("old snapshot: Get(%s) of a deleted key = %.20q, %v", key(i), got, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, val(i, 1)) {
			t.Fatalf("old snapshot: Get(%s) = %.20q, %v; want %.20q", key(i), got, err, val(i, 1))
		}
		if got, err := db.Get(key(i)); err != nil || !bytes.Equal(got, val(i, 9)) {
			t.Fatalf("Get(%s) = %.20q, %v; want %.20q", key(i), got, err, val(i, 9))
		}
	}
	snap.Close()
	for _, i := range perm[:200] {
		if i%3 != 2 {
			if err := db.Put(key(i), val(i, 1)); err != nil {
				t.Fatal(err)
			}
		}
	}

	// A write conflict through a peek: both read k on disk; b commits a
	// new version; a's write of k must fail.
	evict()
	k := key(3)
	a, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, tx := range []*bwkv.Txn{a, b} {
		if got, err := tx.Get(k); err != nil || !bytes.Equal(got, val(3, 1)) {
			t.Fatalf("Get(%s) = %.20q, %v", k, got, err)
		}
	}
	if err := b.Put(k, val(3, 2)); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := a.Put(k, val(3, 3)); !errors.Is(err, bwkv.ErrConflict) {
		t.Fatalf("a's write after b's commit: %v, want ErrConflict", err)
	}
	_ = a.Rollback()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < n; i++ {
		want := val(i, 1)
		if i == 3 {
			want = val(3, 2)
		}
		got, err := db.Get(key(i))
		if i%3 == 2 {
			if !errors.Is(err, bwkv.ErrNotFound) {
				t.Fatalf("after reopen: Get(%s) of a deleted key = %.20q, %v", key(i), got, err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("after reopen: Get(%s) = %.20q, %v; want %.20q", key(i), got, err, want)
		}
	}
}

// TestPeekDamagedFrame: a flipped byte in a value on disk reads, through
// the point accesses of a full cache, as ErrCorruption for the keys of
// its leaf and never as wrong data; the other leaves read on.
func TestPeekDamagedFrame(t *testing.T) {
	dir := t.TempDir()
	val := func(i int) []byte { return bytes.Repeat(fmt.Appendf(nil, "<%06d>", i), 30) }
	db, o := openPeekDB(t, dir, val)
	const n = peekKeys
	key := peekKey
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	const victim = 12345
	files, _ := filepath.Glob(filepath.Join(dir, "*.data"))
	flipped := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, val(victim)); i >= 0 {
			b[i+100] ^= 0x40
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
			flipped++
		}
	}
	if flipped == 0 {
		t.Fatal("the value is in no data file")
	}

	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	perm := rand.New(rand.NewPCG(3, 4)).Perm(n)
	bad, good := 0, 0
	for pass := 0; pass < 2; pass++ { // the first fills the cache
		for _, i := range perm {
			got, err := db.Get(key(i))
			switch {
			case errors.Is(err, bwkv.ErrCorruption):
				bad++
			case err != nil:
				t.Fatalf("Get(%s): %v", key(i), err)
			case !bytes.Equal(got, val(i)):
				t.Fatalf("Get(%s) = %.20q, want %.20q", key(i), got, val(i))
			default:
				good++
			}
		}
	}
	if _, err := db.Get(key(victim)); !errors.Is(err, bwkv.ErrCorruption) {
		t.Fatalf("Get of the damaged value: %v, want ErrCorruption", err)
	}
	if st := db.Stats().Cache; st.Peeks == 0 || bad == 0 || good < 2*n*9/10 {
		t.Fatalf("peeks %d, corrupt reads %d, good reads %d of %d", st.Peeks, bad, good, 2*n)
	}
}

// peekKeys keys (peekKey) are what openPeekDB writes: about ten times its
// cache.
const peekKeys = 20000

func peekKey(i int) []byte { return fmt.Appendf(nil, "key%06d", i) }

// openPeekDB opens a database in dir whose cache is about a tenth of the
// data it then writes, key i with value val(i): accessed in random order,
// a leaf is used again only after many others were read (it is not
// admitted), and its stub stays in memory.
func openPeekDB(t *testing.T, dir string, val func(int) []byte) (*bwkv.DB, *bwkv.Options) {
	t.Helper()
	o := &bwkv.Options{CacheBytes: 512 << 10, CheckpointBytes: 256 << 10, Durability: bwkv.DurabilityRelaxed}
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	for j := 0; j < peekKeys; j += 100 {
		if err := db.Update(func(tx *bwkv.Txn) error {
			for i := j; i < j+100; i++ {
				if err := tx.Put(peekKey(i), val(i)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return db, o
}
