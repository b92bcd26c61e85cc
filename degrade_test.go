package bwkv_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/vfs"
)

// syncFaultFS routes every file through a vfs.Injector and, while armed,
// has the injector fail the next fsync of a file whose base name matches.
type syncFaultFS struct {
	*vfs.Injector
	match func(base string) bool
	armed atomic.Bool
	skip  atomic.Int64 // matching fsyncs to let through first while armed
	hits  atomic.Int64 // failed fsyncs
}

type syncFaultFile struct {
	vfs.File
	fs   *syncFaultFS
	name string
}

func (s *syncFaultFS) wrap(f vfs.File, name string, err error) (vfs.File, error) {
	if err != nil {
		return f, err
	}
	return &syncFaultFile{File: f, fs: s, name: name}, nil
}

func (s *syncFaultFS) Create(name string) (vfs.File, error) {
	f, err := s.Injector.Create(name)
	return s.wrap(f, name, err)
}

func (s *syncFaultFS) OpenReadWrite(name string) (vfs.File, error) {
	f, err := s.Injector.OpenReadWrite(name)
	return s.wrap(f, name, err)
}

func (f *syncFaultFile) Sync() error {
	if f.fs.armed.Load() && f.fs.match(filepath.Base(f.name)) && f.fs.skip.Add(-1) < 0 {
		// The injector counts the Sync below as its next operation.
		f.fs.Injector.SetFailAt(f.fs.Injector.Ops()+1, vfs.FaultEIO)
		err := f.File.Sync()
		f.fs.Injector.SetFailAt(0, vfs.FaultNone)
		if err != nil {
			f.fs.hits.Add(1)
		}
		return err
	}
	return f.File.Sync()
}

// TestFailedSyncDegrades: a failed fsync of the manifest or of a data file
// turns the DB read-only with the cause, instead of leaving it accepting
// writes that no checkpoint will ever publish (before: every later
// checkpoint failed, the log and dirty pages grew, puts stalled 10 s).
// Writes then fail at once with ErrReadOnly wrapping the injected error,
// Stats names it, background work stops, reads and Close work, and a
// reopen recovers every acknowledged commit.
func TestFailedSyncDegrades(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match func(string) bool
	}{
		{"manifest", func(b string) bool { return strings.HasPrefix(b, "MANIFEST-") }},
		{"data file", func(b string) bool { return strings.HasSuffix(b, ".data") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &syncFaultFS{Injector: vfs.NewInjector(vfs.NewMem()), match: tc.match}
			opts := &bwkv.Options{FS: fs, CheckpointBytes: 1 << 20}
			db, err := bwkv.Open("/db", opts)
			if err != nil {
				t.Fatal(err)
			}
			key := func(i int) []byte { return []byte(fmt.Sprintf("k%04d", i)) }
			acked := 0
			put := func(n int) {
				for ; n > 0; n-- {
					if err := db.Put(key(acked), []byte("v")); err != nil {
						t.Fatalf("put %d: %v", acked, err)
					}
					acked++
				}
			}
			put(100)
			if err := db.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			put(100)
			fs.armed.Store(true)
			err = db.Checkpoint()
			fs.armed.Store(false)
			if fs.hits.Load() != 1 {
				t.Fatalf("%d fsyncs failed, want 1", fs.hits.Load())
			}
			if !errors.Is(err, bwkv.ErrReadOnly) || !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("checkpoint with a failed %s fsync: %v, want ErrReadOnly wrapping the injected fault", tc.name, err)
			}
			// A generous hang detector: a degraded DB refuses writes at
			// once, it does not hold writers in backpressure.
			start := time.Now()
			err = db.Put([]byte("after"), []byte("x"))
			if !errors.Is(err, bwkv.ErrReadOnly) || !errors.Is(err, vfs.ErrInjected) {
				t.Fatalf("put after degrading: %v, want ErrReadOnly wrapping the injected fault", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("put after degrading took %v", d)
			}
			if _, err := db.Begin(); !errors.Is(err, bwkv.ErrReadOnly) {
				t.Fatalf("begin after degrading: %v", err)
			}
			st := db.Stats()
			if !strings.Contains(st.Degraded, "injected") {
				t.Fatalf("Stats.Degraded = %q, want the cause", st.Degraded)
			}
			// Background work stopped: no more failing attempts.
			opsBefore := fs.Ops()
			time.Sleep(300 * time.Millisecond)
			if now := db.Stats(); now.BackgroundErrors != st.BackgroundErrors || fs.Ops() != opsBefore {
				t.Fatalf("background work goes on after degrading: errors %d -> %d, file ops %d -> %d",
					st.BackgroundErrors, now.BackgroundErrors, opsBefore, fs.Ops())
			}
			if v, err := db.Get(key(150)); err != nil || string(v) != "v" {
				t.Fatalf("read after degrading: %q, %v", v, err)
			}
			if err := db.Close(); err != nil {
				t.Fatalf("close after degrading: %v", err)
			}
			db, err = bwkv.Open("/db", opts)
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer db.Close()
			for i := 0; i < acked; i++ {
				if _, err := db.Get(key(i)); err != nil {
					t.Fatalf("acknowledged %s lost: %v", key(i), err)
				}
			}
			if err := db.Put([]byte("after"), []byte("x")); err != nil {
				t.Fatalf("put after reopen: %v", err)
			}
		})
	}
}

// TestFailedGCSyncDegrades: a data-file GC rewrite whose fsync fails
// degrades the DB like a checkpoint's (before: logged and retried every
// round while writes went on).
func TestFailedGCSyncDegrades(t *testing.T) {
	fs := &syncFaultFS{Injector: vfs.NewInjector(vfs.NewMem()), match: func(b string) bool { return strings.HasSuffix(b, ".data") }}
	opts := &bwkv.Options{FS: fs, GCLiveRatio: 0.9, GCSpaceAmp: 1}
	db, err := bwkv.Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	key := func(i int) []byte { return []byte(fmt.Sprintf("k%04d", i)) }
	for i := 0; i < 200; i++ {
		if err := db.Put(key(i), []byte("0")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 150; i++ { // 3/4 of the first file becomes junk
		if err := db.Put(key(i), []byte("1")); err != nil {
			t.Fatal(err)
		}
	}
	// The checkpoint's own data-file fsync passes; the GC round after it
	// rewrites the first file, and that fsync fails.
	fs.skip.Store(1)
	fs.armed.Store(true)
	err = db.Checkpoint()
	if err == nil {
		err = db.Checkpoint() // the round's degradation shows on the next call
	}
	fs.armed.Store(false)
	if fs.hits.Load() != 1 || !errors.Is(err, bwkv.ErrReadOnly) || !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("GC with a failed data-file fsync: %d fsyncs failed, %v; want 1 and ErrReadOnly wrapping it", fs.hits.Load(), err)
	}
	if st := db.Stats(); st.GC.FilesRewritten != 0 || !strings.Contains(st.Degraded, "gc: sync") {
		t.Fatalf("Stats: %d files rewritten, Degraded %q; want the failed rewrite named", st.GC.FilesRewritten, st.Degraded)
	}
	if err := db.Put([]byte("after"), []byte("x")); !errors.Is(err, bwkv.ErrReadOnly) {
		t.Fatalf("put after degrading: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close after degrading: %v", err)
	}
	db, err = bwkv.Open("/db", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < 200; i++ {
		want := "1"
		if i >= 150 {
			want = "0"
		}
		if v, err := db.Get(key(i)); err != nil || string(v) != want {
			t.Fatalf("%s = %q, %v; want %q", key(i), v, err, want)
		}
	}
	if err := bwkv.CollectGarbage(db); err != nil {
		t.Fatalf("GC after reopen: %v", err)
	}
}
