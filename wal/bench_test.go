package wal_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bwkv/bwkv/vfs"
	"github.com/bwkv/bwkv/wal"
)

func benchWriter(b *testing.B, relaxed bool) (*wal.Writer, string) {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "wal")
	w, err := wal.Open(wal.Options{FS: vfs.Default(), Dir: dir, Relaxed: relaxed}, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.Close() })
	return w, dir
}

// BenchmarkAppend measures Append of a small record (16-byte key, 100-byte
// value) without waiting for durability; the buffer is written out as it
// fills.
func BenchmarkAppend(b *testing.B) {
	w, _ := benchWriter(b, false)
	r := wal.Record{Type: wal.Put, TxID: 1, Key: make([]byte, 16), Value: make([]byte, 100)}
	b.SetBytes(int64(wal.EncodedSize(&r)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Append(&r); err != nil {
			b.Fatal(err)
		}
	}
}

// discardFS keeps segment files (on a MemFS) but drops their data, so a
// benchmark on it measures Append's own cost: encoding, the append mutex
// and the buffer hand-off.
type discardFS struct{ vfs.FS }

type discardFile struct{ vfs.File }

func (d discardFS) Create(name string) (vfs.File, error) {
	f, err := d.FS.Create(name)
	return discardFile{f}, err
}

func (discardFile) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }

// BenchmarkAppendCPU is BenchmarkAppend without file I/O, serial and with
// every core appending.
func BenchmarkAppendCPU(b *testing.B) {
	r := wal.Record{Type: wal.Put, TxID: 1, Key: make([]byte, 16), Value: make([]byte, 100)}
	open := func(b *testing.B) *wal.Writer {
		w, err := wal.Open(wal.Options{FS: discardFS{vfs.NewMem()}, Dir: "/wal"}, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = w.Close() })
		b.SetBytes(int64(wal.EncodedSize(&r)))
		b.ReportAllocs()
		return w
	}
	b.Run("serial", func(b *testing.B) {
		w := open(b)
		for b.Loop() {
			if _, err := w.Append(&r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		w := open(b)
		b.RunParallel(func(pb *testing.PB) {
			r := r
			for pb.Next() {
				if _, err := w.Append(&r); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkSync measures a durable commit (append a commit record, Sync
// through it) with 1, 8 and 64 concurrent committers, and reports how many
// records one fsync covered.
func BenchmarkSync(b *testing.B) {
	for _, committers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("committers=%d", committers), func(b *testing.B) {
			w, _ := benchWriter(b, false)
			b.ReportAllocs()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for c := range committers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := wal.Record{Type: wal.Commit, TxID: wal.TxID(c)}
					for next.Add(1) <= int64(b.N) {
						lsn, err := w.Append(&r)
						if err == nil {
							err = w.Sync(lsn + 1)
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			st := w.Stats()
			b.ReportMetric(st.RecordsPerSync, "records/sync")
			if st.Syncs > 0 {
				b.ReportMetric(float64(st.SyncLatency.Microseconds())/float64(st.Syncs), "µs/fsync")
			}
		})
	}
}

// BenchmarkRelaxedAppend measures relaxed-mode throughput with 1 KiB values:
// no fsync per commit, the background flusher writes and fsyncs.
func BenchmarkRelaxedAppend(b *testing.B) {
	w, _ := benchWriter(b, true)
	r := wal.Record{Type: wal.Put, TxID: 1, Key: make([]byte, 32), Value: make([]byte, 1024)}
	b.SetBytes(int64(wal.EncodedSize(&r)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Append(&r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplay measures reading a log back.
func BenchmarkReplay(b *testing.B) {
	w, dir := benchWriter(b, false)
	r := wal.Record{Type: wal.Put, TxID: 1, Key: make([]byte, 16), Value: make([]byte, 100)}
	for range 100_000 {
		if _, err := w.Append(&r); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Sync(w.Head()); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(w.Head()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wal.Replay(vfs.Default(), dir, 0, 0, func(wal.LSN, *wal.Record) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplaySpareTail measures the open after a crash that found the
// newest segment a reused spare (Options.Spares): one 2 KiB record in it,
// then a whole segment (64 MiB) of the spare's old records, which replay
// reads past as a torn tail (scanning it for a valid record of this log).
// Reported per replay.
func BenchmarkReplaySpareTail(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "wal")
	o := wal.Options{FS: vfs.Default(), Dir: dir, BindLSN: true, Spares: 1}
	w, err := wal.Open(o, 0)
	if err != nil {
		b.Fatal(err)
	}
	val := make([]byte, 1000)
	r := wal.Record{Type: wal.Update, TxID: 1, Seq: 1, Key: make([]byte, 32), Value: val, OldValue: val, HasOld: true}
	appendUntil := func(end wal.LSN) {
		for w.Head() < end {
			if _, err := w.Append(&r); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Sync(w.Head()); err != nil {
			b.Fatal(err)
		}
	}
	appendUntil(wal.DefaultSegmentBytes + 1)    // fills segment 0, starts segment 1
	if err := w.Recycle(w.Head()); err != nil { // segment 0 becomes the spare
		b.Fatal(err)
	}
	appendUntil(2*wal.DefaultSegmentBytes + 1) // segment 2 is the reused spare
	from := w.Head()
	appendUntil(from + 1)
	if st := w.Stats(); st.ReusedSegments != 1 {
		b.Fatalf("%d segments reused, want 1", st.ReusedSegments)
	}
	// Leave the file as a crash would: no Close, which cuts the tail.
	b.ReportAllocs()
	for b.Loop() {
		res, err := wal.ReplayWith(vfs.Default(), dir, wal.ReplayOptions{From: from, Frontier: from, BindLSN: true}, nil)
		if err != nil || res.TornBytes < wal.DefaultSegmentBytes/2 {
			b.Fatalf("replay: %+v, %v", res, err)
		}
	}
	b.StopTimer()
	_ = w.Close()
}
