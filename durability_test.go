package bwkv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/vfs"
)

// Power-loss and I/O-error sweeps (docs/crash-safety.md, layers 5 and 6), and the
// log's bad-input cases at the DB level (layer 7).

// seqWorkload runs a deterministic single-threaded workload and returns
// the states after each acknowledged commit (states[0] is empty) and the
// number of commits acknowledged. It stops at the first error.
type seqRun struct {
	states []map[string]string // states[j]: after j commits
	acked  int
	err    error
}

func seqWorkload(db *bwkv.DB, n int, onAck func(int)) seqRun {
	cur := map[string]string{}
	r := seqRun{states: []map[string]string{{}}}
	for i := 0; i < n; i++ {
		tx, err := db.Begin()
		if err != nil {
			r.err = err
			return r
		}
		next := cloneKV(cur)
		for j := 0; j <= i%3; j++ {
			k := fmt.Sprintf("key%02d", (i*7+j*13)%20)
			if (i+j)%5 == 4 {
				err = tx.Delete([]byte(k))
				delete(next, k)
			} else {
				v := fmt.Sprintf("v%d-%d", i, j)
				if bt := db.Options().BlobThreshold; bt > 0 && bt <= 256 && (i+j)%2 == 0 {
					// Blob files at a small threshold: every other
					// value goes to a blob.
					v += strings.Repeat("b", bt+i%8)
				}
				err = tx.Put([]byte(k), []byte(v))
				next[k] = v
			}
			if err != nil {
				r.err = err
				tx.Rollback()
				return r
			}
		}
		if i%7 == 6 {
			if err := tx.Rollback(); err != nil {
				r.err = err
				return r
			}
			continue
		}
		// The state after this commit is a legal outcome as soon as the
		// commit is attempted (in doubt), so record it first.
		r.states = append(r.states, next)
		if err := tx.Commit(); err != nil {
			r.err = err
			return r
		}
		cur = next
		r.acked++
		if onAck != nil {
			onAck(r.acked)
		}
	}
	return r
}

func dbState(t *testing.T, db *bwkv.DB) map[string]string {
	t.Helper()
	got := map[string]string{}
	s, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	it, _ := s.NewIter(nil)
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	if err := it.Error(); err != nil {
		t.Fatalf("scan: %v", err)
	}
	return got
}

// checkPrefix asserts I1/I4 for a sequential workload: the state equals the
// state after j commits for some acked <= j <= acked+1 (the one in flight).
func checkPrefix(t *testing.T, got map[string]string, r seqRun, acked int, what string) {
	t.Helper()
	for j := acked; j <= acked+1 && j < len(r.states); j++ {
		if fmt.Sprint(got) == fmt.Sprint(r.states[j]) {
			return
		}
	}
	t.Fatalf("%s: recovered state %v is not the state after %d (or %d) commits: %v", what, got, acked, acked+1, r.states[acked])
}

func memOpts(fs vfs.FS) *bwkv.Options {
	return &bwkv.Options{FS: fs, PageSplitEntries: 4, DeltaChainMax: 2, WALSegmentBytes: 8 << 10, MaxValueSize: 1 << 10}
}

// TestPowerLoss (layer 5) clones the file system at every k-th operation
// of a workload of BWKV_POWER_COMMITS commits (default 80), for k in
// steps of BWKV_POWER_STRIDE (default 1; 7 with -short, 3 under -race).
func TestPowerLoss(t *testing.T) {
	commits := envInt("BWKV_POWER_COMMITS", 80)
	// Count the operations of one run.
	fs := vfs.NewMem()
	db, err := bwkv.Open("db", memOpts(fs))
	if err != nil {
		t.Fatal(err)
	}
	full := seqWorkload(db, commits, nil)
	if full.err != nil {
		t.Fatal(full.err)
	}
	db.Close()
	total := fs.Ops()
	stride := int64(1)
	switch {
	case testing.Short():
		stride = 7
	case raceEnabled:
		// Every third point under the detector (31 s for all of them
		// here); the run without it takes all.
		stride = 3
	}
	stride = int64(envInt("BWKV_POWER_STRIDE", int(stride)))
	checked := 0
	for k := int64(1); k <= total; k += stride {
		for _, keep := range []float64{0, 0.5, 1} {
			fs := vfs.NewMem()
			var clone *vfs.MemFS
			var ackedAtClone int
			acked := 0
			fs.SetHook(func(op vfs.Op) {
				if op.Index == k && clone == nil {
					clone = fs.CrashClone(vfs.CrashOptions{KeepUnsynced: keep, TornLastWrite: true, Seed: k})
					ackedAtClone = acked
				}
			})
			db, err := bwkv.Open("db", memOpts(fs))
			if err != nil {
				t.Fatal(err)
			}
			r := seqWorkload(db, commits, func(n int) { acked = n })
			db.Close()
			if r.err != nil {
				t.Fatal(r.err)
			}
			if clone == nil {
				continue
			}
			rdb, err := bwkv.Open("db", memOpts(clone))
			if err != nil {
				if ackedAtClone == 0 && errors.Is(err, os.ErrNotExist) {
					continue
				}
				t.Fatalf("power loss at op %d (keep %.1f): reopen: %v", k, keep, err)
			}
			what := fmt.Sprintf("power loss at op %d/%d (keep %.1f)", k, total, keep)
			got := dbState(t, rdb)
			checkPrefix(t, got, r, ackedAtClone, what)
			if err := rdb.Check(context.Background()); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			rdb.Close()
			// I6: a second recovery gives the same state.
			rdb, err = bwkv.Open("db", memOpts(clone))
			if err != nil {
				t.Fatalf("%s: second reopen: %v", what, err)
			}
			if got2 := dbState(t, rdb); fmt.Sprint(got2) != fmt.Sprint(got) {
				t.Fatalf("%s: I6: %v then %v", what, got, got2)
			}
			rdb.Close()
			checked++
		}
	}
	t.Logf("%d crash points over %d operations", checked, total)
}

// TestIOErrors (layer 6) fails the i-th file-system operation of a
// workload of BWKV_IOERR_COMMITS commits (default 30), for i in steps of
// BWKV_IOERR_STRIDE (default 1; 5 with -short). With -short the sweep
// also stops after BWKV_IOERR_SECS seconds (default 300), a cap a slow
// machine may reach; every point before it is checked in full.
func TestIOErrors(t *testing.T) {
	commits := envInt("BWKV_IOERR_COMMITS", 30)
	fs := vfs.NewMem()
	inj := vfs.NewInjector(fs)
	db, err := bwkv.Open("db", memOpts(inj))
	if err != nil {
		t.Fatal(err)
	}
	if r := seqWorkload(db, commits, nil); r.err != nil {
		t.Fatal(r.err)
	}
	db.Close()
	total := inj.Ops()
	stride := int64(1)
	var deadline time.Time
	if testing.Short() {
		stride = 5
		deadline = time.Now().Add(time.Duration(envInt("BWKV_IOERR_SECS", 300)) * time.Second)
	}
	stride = int64(envInt("BWKV_IOERR_STRIDE", int(stride)))
	checked := 0
	defer func() { t.Logf("%d failure points of %d operations checked, stride %d", checked, total, stride) }()
	for i := int64(1); i <= total; i += stride {
		if !deadline.IsZero() && time.Now().After(deadline) {
			t.Logf("time cap reached at operation %d", i)
			break
		}
		checked++
		for _, kind := range []vfs.FaultKind{vfs.FaultEIO, vfs.FaultENOSPC, vfs.FaultShortWrite} {
			fs := vfs.NewMem()
			inj := vfs.NewInjector(fs)
			inj.SetFailAt(i, kind)
			what := fmt.Sprintf("%v at op %d/%d", kind, i, total)
			db, err := bwkv.Open("db", memOpts(inj))
			var r seqRun
			if err == nil {
				r = seqWorkload(db, commits, nil)
				if r.err != nil && !errors.Is(r.err, bwkv.ErrReadOnly) {
					t.Fatalf("%s: workload error %v does not wrap ErrReadOnly", what, r.err)
				}
				if r.err != nil {
					if err := db.Put([]byte("after"), []byte("x")); !errors.Is(err, bwkv.ErrReadOnly) {
						t.Fatalf("%s: write after a log failure: %v, want ErrReadOnly", what, err)
					}
				}
				db.Close()
			}
			rdb, err := bwkv.Open("db", memOpts(fs))
			if err != nil {
				t.Fatalf("%s: reopen: %v", what, err)
			}
			if r.states != nil {
				checkPrefix(t, dbState(t, rdb), r, r.acked, what)
			}
			if err := rdb.Check(context.Background()); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			rdb.Close()
		}
	}
}

// listDir returns name -> size for every file under dir.
func listDir(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			m[p] = info.Size()
		}
		return nil
	})
	return m
}

func segments(t *testing.T, dir string) []string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "wal", "*.log"))
	sort.Strings(names)
	return names
}

func flipByte(t *testing.T, name string, off int64) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	f.ReadAt(b, off)
	b[0] ^= 0x40
	f.WriteAt(b, off)
}

func TestBadLog(t *testing.T) {
	opts := func() *bwkv.Options {
		return &bwkv.Options{WALSegmentBytes: 16 << 10, MaxValueSize: 1 << 10}
	}
	build := func(t *testing.T) string {
		dir := t.TempDir()
		db, err := bwkv.Open(dir, opts())
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 400; i++ {
			if err := db.Put([]byte(fmt.Sprintf("k%04d", i)), make([]byte, 100)); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
		if n := len(segments(t, dir)); n < 3 {
			t.Fatalf("want >= 3 segments, got %d", n)
		}
		return dir
	}
	cases := []struct {
		name    string
		damage  func(t *testing.T, dir string)
		corrupt bool
	}{
		{"bit flip in an older segment", func(t *testing.T, dir string) {
			flipByte(t, segments(t, dir)[0], 200)
		}, true},
		{"missing middle segment", func(t *testing.T, dir string) {
			os.Remove(segments(t, dir)[1])
		}, true},
		{"torn tail", func(t *testing.T, dir string) {
			// Cut into the last record: the segment is preallocated, so
			// its records end where its zero tail begins.
			s := segments(t, dir)
			last := s[len(s)-1]
			b, _ := os.ReadFile(last)
			end := len(b)
			for end > 0 && b[end-1] == 0 {
				end--
			}
			os.Truncate(last, int64(end-7))
		}, false},
		{"garbage tail", func(t *testing.T, dir string) {
			s := segments(t, dir)
			f, _ := os.OpenFile(s[len(s)-1], os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte("this is not a record at all......"))
			f.Close()
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := build(t)
			c.damage(t, dir)
			before := listDir(t, dir)
			db, err := bwkv.Open(dir, opts())
			if c.corrupt {
				var ce *bwkv.CorruptionError
				if !errors.Is(err, bwkv.ErrCorruption) || !errors.As(err, &ce) || ce.File == "" {
					t.Fatalf("open: %v, want a *CorruptionError naming a file", err)
				}
				if after := listDir(t, dir); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Fatalf("a failed open changed the directory:\n%v\n%v", before, after)
				}
				return
			}
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			defer db.Close()
			if st := db.Stats().Recovery; st.TornBytes == 0 {
				t.Fatalf("torn tail not counted: %+v", st)
			}
			// Everything but the last record or two survives.
			n := 0
			for i := 0; i < 400; i++ {
				if _, err := db.Get([]byte(fmt.Sprintf("k%04d", i))); err == nil {
					n++
				}
			}
			if n < 399 {
				t.Fatalf("only %d of 400 keys after a torn tail", n)
			}
			if err := db.Put([]byte("after"), []byte("x")); err != nil {
				t.Fatalf("write after truncating the tail: %v", err)
			}
		})
	}
}
