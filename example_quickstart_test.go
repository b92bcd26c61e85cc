package bwkv_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/bwkv/bwkv"
)

// quickStart is the README's quick start, kept here so that it compiles
// and runs with the tests.
func quickStart(dir string) error {
	db, err := bwkv.Open(dir, nil) // creates the directory; nil = defaults (DurabilitySync)
	if err != nil {
		return err
	}
	defer db.Close()

	// A read-modify-write transaction. On a conflict Update runs fn again in a
	// fresh transaction (so fn must have no effects outside tx).
	err = db.Update(func(tx *bwkv.Txn) error {
		v, err := tx.Get([]byte("counter"))
		if err != nil && !errors.Is(err, bwkv.ErrNotFound) {
			return err
		}
		n := uint64(0)
		if len(v) == 8 {
			n = binary.BigEndian.Uint64(v)
		}
		return tx.Put([]byte("counter"), binary.BigEndian.AppendUint64(nil, n+1))
	})
	if err != nil {
		return err
	}
	if err := db.Put([]byte("user/1"), []byte("ada")); err != nil {
		return err
	}

	// A consistent read-only view; a Snapshot and a Txn are both Readers.
	return db.View(func(s *bwkv.Snapshot) error {
		it, err := s.NewIter(&bwkv.IterOptions{Prefix: []byte("user/")})
		if err != nil {
			return err
		}
		defer it.Close()
		for k, v := range it.All() {
			fmt.Printf("%s=%s\n", k, v) // k and v are valid until the next step
		}
		return it.Error()
	})
}

func Example() {
	tmp, err := os.MkdirTemp("", "bwkv-quickstart-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := quickStart(filepath.Join(tmp, "data")); err != nil {
		log.Fatal(err)
	}
	// Output: user/1=ada
}
