package bwkv_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/vfs"
)

// dirFingerprint hashes every entry under dir: name, size, mode, mtime and,
// for files, the contents. Two equal fingerprints mean nothing was written,
// created, removed or touched.
func dirFingerprint(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		line := fmt.Sprintf("%s %d %v %d", rel, info.Size(), info.Mode(), info.ModTime().UnixNano())
		if !d.IsDir() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// memToDisk copies the tree under src in m to the OS directory dst.
func memToDisk(t *testing.T, m *vfs.MemFS, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := m.List(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		from, to := filepath.Join(src, n), filepath.Join(dst, n)
		info, err := m.Stat(from)
		if err != nil {
			t.Fatal(err)
		}
		if info.IsDir() {
			memToDisk(t, m, from, to)
			continue
		}
		f, err := m.Open(from)
		if err != nil {
			t.Fatal(err)
		}
		size, _ := f.Size()
		b := make([]byte, size)
		if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		f.Close()
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// crashedDir leaves on disk a database that needs recovery: checkpointed
// pages, commits after the checkpoint only in the log, and a loser whose
// records are durable (a later commit's fsync covered them) but that never
// ended. It returns the committed state.
func crashedDir(t *testing.T) (string, map[string]string) {
	t.Helper()
	m := vfs.NewMem()
	db, err := bwkv.Open("db", memOpts(m))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	put := func(k, v string) {
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	for i := 0; i < 60; i++ {
		put(fmt.Sprintf("k%03d", i), fmt.Sprintf("v%d", i))
	}
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60; i += 3 {
		put(fmt.Sprintf("k%03d", i), fmt.Sprintf("w%d", i))
	}
	loser, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := loser.Put([]byte("k001"), []byte("uncommitted")); err != nil {
		t.Fatal(err)
	}
	if err := loser.Put([]byte("zz-loser"), []byte("uncommitted")); err != nil {
		t.Fatal(err)
	}
	put("k999", "after the loser") // its fsync makes the loser's records durable
	clone := m.CrashClone(vfs.CrashOptions{})
	dir := filepath.Join(t.TempDir(), "db")
	memToDisk(t, clone, "db", dir)
	_ = loser.Rollback()
	db.Close()
	return dir, want
}

func TestReadOnlyWritesNothing(t *testing.T) {
	crashed, wantCrashed := crashedDir(t)
	clean := filepath.Join(t.TempDir(), "clean")
	db, err := bwkv.Open(clean, &bwkv.Options{PageSplitEntries: 4})
	if err != nil {
		t.Fatal(err)
	}
	wantClean := map[string]string{}
	for i := 0; i < 50; i++ {
		k, v := fmt.Sprintf("c%02d", i), fmt.Sprint(i)
		if err := db.Put([]byte(k), []byte(v)); err != nil {
			t.Fatal(err)
		}
		wantClean[k] = v
	}
	db.Close()

	for _, tc := range []struct {
		name, dir string
		want      map[string]string
	}{{"clean", clean, wantClean}, {"needs-recovery", crashed, wantCrashed}} {
		t.Run(tc.name, func(t *testing.T) {
			before := dirFingerprint(t, tc.dir)
			ro := &bwkv.Options{ReadOnly: true, PageSplitEntries: 4, DeltaChainMax: 2, WALSegmentBytes: 8 << 10, MaxValueSize: 1 << 10}
			db, err := bwkv.Open(tc.dir, ro)
			if err != nil {
				t.Fatal(err)
			}
			// Any number of read-only handles share the directory.
			db2, err := bwkv.Open(tc.dir, ro)
			if err != nil {
				t.Fatalf("second read-only open: %v", err)
			}
			if _, err := bwkv.Open(tc.dir, nil); !errors.Is(err, bwkv.ErrLocked) {
				t.Fatalf("read-write open beside a reader: %v, want ErrLocked", err)
			}
			if got := dbState(t, db); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("read-only state:\n got %v\nwant %v", got, tc.want)
			}
			if err := db.Check(context.Background()); err != nil {
				t.Fatalf("check: %v", err)
			}
			if err := db.Put([]byte("x"), []byte("y")); !errors.Is(err, bwkv.ErrReadOnly) {
				t.Fatalf("put on a read-only DB: %v", err)
			}
			if rs := db.Stats().Recovery; tc.name == "needs-recovery" && (rs.LosersUndone == 0 || rs.RecordsReplayed == 0) {
				t.Fatalf("the crashed directory needed no recovery (%+v): the test proves nothing", rs)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if err := db2.Close(); err != nil {
				t.Fatal(err)
			}
			if after := dirFingerprint(t, tc.dir); after != before {
				t.Fatalf("read-only open changed the directory:\nbefore\n%s\nafter\n%s", before, after)
			}
			// A writer excludes readers; afterwards the read-write open
			// recovers to the same state.
			rwo := *ro
			rwo.ReadOnly = false
			rw, err := bwkv.Open(tc.dir, &rwo)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bwkv.Open(tc.dir, ro); !errors.Is(err, bwkv.ErrLocked) {
				t.Fatalf("read-only open beside a writer: %v, want ErrLocked", err)
			}
			if got := dbState(t, rw); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("read-write state after the read-only open:\n got %v\nwant %v", got, tc.want)
			}
			rw.Close()
		})
	}
}
