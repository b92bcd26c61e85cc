package bwkv_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/vfs"
)

// slowLogFS delays every fsync of a log segment.
type slowLogFS struct {
	vfs.FS
	delay time.Duration
}

type slowLogFile struct {
	vfs.File
	delay time.Duration
}

func (s *slowLogFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(filepath.Base(name), ".log") {
		return f, err
	}
	return &slowLogFile{File: f, delay: s.delay}, nil
}

func (s *slowLogFS) Create(name string) (vfs.File, error) {
	f, err := s.FS.Create(name)
	return s.wrap(f, name, err)
}

func (s *slowLogFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := s.FS.OpenReadWrite(name)
	return s.wrap(f, name, err)
}

func (f *slowLogFile) Sync() error {
	time.Sleep(f.delay)
	return f.File.Sync()
}

// TestWritesDoNotWaitForRotation: a log rotation fsyncs the full segment,
// and that must not happen in a write, which holds its page lock and the
// cut gate. Every segment fsync takes 60 ms here; a transaction writes
// 300 KiB over 8 KiB segments while another goroutine writes other pages
// and a third asks for checkpoints. No single write may take a second
// (a generous hang detector). Before, the write that took the log buffer
// past its soft flush threshold (256 KiB) rotated through ~30 segments itself,
// seconds under its page lock, and a cut waiting for the gate held up the
// other writers meanwhile.
func TestWritesDoNotWaitForRotation(t *testing.T) {
	fs := &slowLogFS{FS: vfs.NewMem(), delay: 60 * time.Millisecond}
	db, err := bwkv.Open("/db", &bwkv.Options{
		FS: fs, Durability: bwkv.DurabilityRelaxed, FlushInterval: time.Hour,
		MaxKeySize: 64, MaxValueSize: 1 << 10, WALSegmentBytes: 8 << 10,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mu sync.Mutex
	var slowest time.Duration
	var slowWhat string
	timed := func(what string, f func() error) {
		start := time.Now()
		if err := f(); err != nil {
			t.Errorf("%s: %v", what, err)
		}
		d := time.Since(start)
		mu.Lock()
		if d > slowest {
			slowest, slowWhat = d, what
		}
		mu.Unlock()
	}
	val := make([]byte, 1000)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // other pages
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			timed(fmt.Sprintf("put b%05d", i), func() error { return db.Put([]byte(fmt.Sprintf("b%05d", i)), val[:100]) })
		}
	}()
	go func() { // cuts
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			_ = db.Checkpoint()
		}
	}()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		timed(fmt.Sprintf("txn put a%04d", i), func() error { return tx.Put([]byte(fmt.Sprintf("a%04d", i)), val) })
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	close(done)
	wg.Wait()
	t.Logf("slowest write: %s, %v", slowWhat, slowest)
	if slowest > time.Second {
		t.Fatalf("%s took %v: a write waited for log rotation fsyncs", slowWhat, slowest)
	}
}
