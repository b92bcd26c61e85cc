package bwkv_test

import (
	"encoding/binary"
	"errors"
	"expvar"
	"fmt"
	"log"
	"os"

	"github.com/bwkv/bwkv"
)

// exampleDir returns a fresh directory for an example and its cleanup.
func exampleDir() (string, func()) {
	dir, err := os.MkdirTemp("", "bwkv-example-")
	if err != nil {
		log.Fatal(err)
	}
	return dir, func() { os.RemoveAll(dir) }
}

func ExampleOpen() {
	dir, cleanup := exampleDir()
	defer cleanup()

	// nil options: all defaults (DurabilitySync: Commit returns once the
	// commit is on disk).
	db, err := bwkv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	if err := db.Put([]byte("greeting"), []byte("hello")); err != nil {
		log.Fatal(err)
	}
	v, err := db.Get([]byte("greeting")) // the caller owns v
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", v)
	_, err = db.Get([]byte("missing"))
	fmt.Println(errors.Is(err, bwkv.ErrNotFound))
	// Output:
	// hello
	// true
}

func ExampleDB_Update() {
	dir, cleanup := exampleDir()
	defer cleanup()
	db, err := bwkv.Open(dir, &bwkv.Options{Durability: bwkv.DurabilityRelaxed})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// Both writes commit together or not at all. On a conflict with a
	// concurrent transaction Update runs the function again in a fresh
	// transaction, so it must not have effects outside tx.
	transfer := func(tx *bwkv.Txn) error {
		from, err := tx.Get([]byte("alice"))
		if errors.Is(err, bwkv.ErrNotFound) {
			from = binary.BigEndian.AppendUint64(nil, 100)
		} else if err != nil {
			return err
		}
		bal := binary.BigEndian.Uint64(from)
		if bal < 30 {
			return errors.New("insufficient funds") // rolls back
		}
		if err := tx.Put([]byte("alice"), binary.BigEndian.AppendUint64(nil, bal-30)); err != nil {
			return err
		}
		return tx.Put([]byte("bob"), binary.BigEndian.AppendUint64(nil, 30))
	}
	if err := db.Update(transfer); err != nil {
		log.Fatal(err)
	}
	a, _ := db.Get([]byte("alice"))
	b, _ := db.Get([]byte("bob"))
	fmt.Println(binary.BigEndian.Uint64(a), binary.BigEndian.Uint64(b))
	// Output: 70 30
}

func ExampleDB_View() {
	dir, cleanup := exampleDir()
	defer cleanup()
	db, err := bwkv.Open(dir, &bwkv.Options{Durability: bwkv.DurabilityRelaxed})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.Put([]byte("color"), []byte("blue"))

	err = db.View(func(s *bwkv.Snapshot) error {
		buf := make([]byte, 0, 64)
		// GetAppend reuses buf: no allocation when it has room.
		buf, err := s.GetAppend(buf, []byte("color"))
		if err != nil {
			return err
		}
		fmt.Printf("%s\n", buf)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output: blue
}

func ExampleSnapshot() {
	dir, cleanup := exampleDir()
	defer cleanup()
	db, err := bwkv.Open(dir, &bwkv.Options{Durability: bwkv.DurabilityRelaxed})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.Put([]byte("k"), []byte("before"))

	s, err := db.NewSnapshot()
	if err != nil {
		log.Fatal(err)
	}
	db.Put([]byte("k"), []byte("after"))

	old, _ := s.Get([]byte("k")) // the snapshot does not see later commits
	cur, _ := db.Get([]byte("k"))
	fmt.Printf("%s %s\n", old, cur)
	s.Close()
	fmt.Println(errors.Is(s.Close(), bwkv.ErrClosed))
	// Output:
	// before after
	// true
}

// printAll reads through either a *Txn or a *Snapshot.
func printAll(r bwkv.Reader, prefix string) error {
	it, err := r.NewIter(&bwkv.IterOptions{Prefix: []byte(prefix)})
	if err != nil {
		return err
	}
	defer it.Close()
	for k, v := range it.All() {
		// k and v are valid until the next step: copy to keep them.
		fmt.Printf("%s=%s\n", k, v)
	}
	return it.Error()
}

func ExampleIter_All() {
	dir, cleanup := exampleDir()
	defer cleanup()
	db, err := bwkv.Open(dir, &bwkv.Options{Durability: bwkv.DurabilityRelaxed})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"user/2", "order/1", "user/1", "user/3"} {
		db.Put([]byte(k), []byte("v"+k[len(k)-1:]))
	}

	// A snapshot and a transaction are both Readers.
	err = db.View(func(s *bwkv.Snapshot) error { return printAll(s, "user/") })
	if err != nil {
		log.Fatal(err)
	}
	err = db.Update(func(tx *bwkv.Txn) error {
		tx.Put([]byte("order/2"), []byte("v2")) // the txn sees its own writes
		return printAll(tx, "order/")
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// user/1=v1
	// user/2=v2
	// user/3=v3
	// order/1=v1
	// order/2=v2
}

func ExampleSnapshot_NewIter() {
	dir, cleanup := exampleDir()
	defer cleanup()
	db, err := bwkv.Open(dir, &bwkv.Options{Durability: bwkv.DurabilityRelaxed})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"a", "b", "c", "d"} {
		db.Put([]byte(k), []byte(k))
	}
	s, _ := db.NewSnapshot()
	defer s.Close()
	// [b, d), newest first.
	it, err := s.NewIter(&bwkv.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("d")})
	if err != nil {
		log.Fatal(err)
	}
	defer it.Close()
	for k := range it.Backward() {
		fmt.Printf("%s ", k)
	}
	fmt.Println(it.Error())
	// Output: c b <nil>
}

func ExampleDB_Sequence() {
	dir, cleanup := exampleDir()
	defer cleanup()
	db, err := bwkv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// Lease 100 ids per transaction; Next is lock-free in between.
	ids, err := db.Sequence([]byte("seq/orders"), 100)
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		id, err := ids.Next()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(id, " ")
	}
	// Release gives the unused rest of the lease back, so the next
	// sequence on the key continues at 3 (after a crash it would skip).
	if err := ids.Release(); err != nil {
		log.Fatal(err)
	}
	ids, _ = db.Sequence([]byte("seq/orders"), 100)
	id, _ := ids.Next()
	fmt.Println(id)
	// Output: 0 1 2 3
}

// Publishing the engine's statistics as an expvar (served at /debug/vars
// by net/http's default mux). Stats walks the tree: publish a function,
// evaluated only when scraped, rather than updating a variable per write.
func ExampleDB_Stats() {
	dir, cleanup := exampleDir()
	defer cleanup()
	db, err := bwkv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if expvar.Get("bwkv") == nil { // Publish panics on a reused name
		expvar.Publish("bwkv", expvar.Func(func() any { return db.Stats() }))
	}
	fmt.Println(db.Stats().Txn.Commits)
	// Output: 0
}
