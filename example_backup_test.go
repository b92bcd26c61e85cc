package bwkv_test

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/bwkv/bwkv"
)

// A Snapshot is an io.WriterTo: WriteTo streams an online backup while
// writers keep running, and Restore builds a new database from it.
func ExampleSnapshot_WriteTo() {
	dir, err := os.MkdirTemp("", "bwkv-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := bwkv.Open(filepath.Join(dir, "db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if err := db.Put([]byte("greeting"), []byte("hello")); err != nil {
		log.Fatal(err)
	}

	var backup bytes.Buffer // usually a file
	if err := db.View(func(s *bwkv.Snapshot) error {
		_, err := s.WriteTo(&backup)
		return err
	}); err != nil {
		log.Fatal(err)
	}

	// Restore refuses a directory that holds a database and leaves
	// nothing behind if the stream is damaged.
	restored := filepath.Join(dir, "restored")
	if err := bwkv.Restore(restored, &backup, nil); err != nil {
		log.Fatal(err)
	}
	rdb, err := bwkv.Open(restored, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer rdb.Close()
	v, err := rdb.Get([]byte("greeting"))
	fmt.Printf("%s %v\n", v, err)
	// Output: hello <nil>
}

// A read-only open writes nothing (recovery runs in memory) and shares
// the directory with other read-only handles.
func ExampleOptions_readOnly() {
	dir, err := os.MkdirTemp("", "bwkv-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := bwkv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		log.Fatal(err)
	}
	db.Close()

	r1, err := bwkv.Open(dir, &bwkv.Options{ReadOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	defer r1.Close()
	r2, err := bwkv.Open(dir, &bwkv.Options{ReadOnly: true}) // a second reader is fine
	if err != nil {
		log.Fatal(err)
	}
	defer r2.Close()
	v, _ := r2.Get([]byte("k"))
	err = r1.Put([]byte("k"), []byte("w"))
	fmt.Println(string(v), err)
	// Output: v bwkv: read-only
}
