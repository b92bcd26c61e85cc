package bwkv_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/vfs"
)

// backupKeys is the round trip's key count: BWKV_BACKUP_KEYS (1000000 for
// the full-size run), a CI-sized default otherwise.
func backupKeys(t testing.TB) int {
	if s := os.Getenv("BWKV_BACKUP_KEYS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("BWKV_BACKUP_KEYS=%q: %v", s, err)
		}
		return n
	}
	if testing.Short() {
		return 5_000
	}
	return 40_000
}

func backupKey(i int) []byte { return fmt.Appendf(nil, "key%09d", i) }

// backupValue varies the size: empty values, small ones and some above a
// page's usual size.
func backupValue(i, gen int) []byte {
	n := (i * 7919) % 200
	if i%97 == 0 {
		n = 9000
	}
	if i%31 == 0 {
		n = 0
	}
	v := make([]byte, n)
	for j := range v {
		v[j] = byte(i + j + gen)
	}
	return v
}

type bkEntry struct{ k, v []byte }

func scanAll(t testing.TB, r interface {
	NewIter(*bwkv.IterOptions) (*bwkv.Iter, error)
}) []bkEntry {
	t.Helper()
	it, err := r.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var out []bkEntry
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, bkEntry{bytes.Clone(it.Key()), bytes.Clone(it.Value())})
	}
	if err := it.Error(); err != nil {
		t.Fatalf("scan: %v", err)
	}
	return out
}

func equalKVs(t testing.TB, got, want []bkEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d keys, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].k, want[i].k) || !bytes.Equal(got[i].v, want[i].v) {
			t.Fatalf("entry %d: %q=%d bytes, want %q=%d bytes", i, got[i].k, len(got[i].v), want[i].k, len(want[i].v))
		}
	}
}

// TestBackupRoundTrip backs up a snapshot while writers change every part
// of the key space, restores the stream, and requires the restored
// database to equal the snapshot exactly (and to work as a database).
func TestBackupRoundTrip(t *testing.T) {
	n := backupKeys(t)
	dir := t.TempDir()
	db, err := bwkv.Open(filepath.Join(dir, "src"), &bwkv.Options{Durability: bwkv.DurabilityRelaxed, CheckpointBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const batch = 1000
	for i := 0; i < n; i += batch {
		if err := db.Update(func(tx *bwkv.Txn) error {
			for j := i; j < min(i+batch, n); j++ {
				if err := tx.Put(backupKey(j), backupValue(j, 0)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Writers run through the backup: updates, deletes and new keys.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			for !stop.Load() {
				i := rng.IntN(n + n/10)
				var err error
				if rng.IntN(4) == 0 {
					err = db.Delete(backupKey(i))
				} else {
					err = db.Put(backupKey(i), backupValue(i, 1+rng.IntN(100)))
				}
				if err != nil && !errors.Is(err, bwkv.ErrConflict) {
					t.Error(err)
					return
				}
				writes.Add(1)
			}
		}(uint64(w))
	}
	// The writers must be running when the backup starts (on a busy
	// machine the backup could otherwise finish before they are scheduled).
	for start := time.Now(); writes.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			stop.Store(true)
			wg.Wait()
			t.Fatal("no writer got a write through in 30 s")
		}
	}
	path := filepath.Join(dir, "backup")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	written, err := snap.WriteTo(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	stop.Store(true)
	wg.Wait()
	if info, _ := os.Stat(path); info.Size() != written {
		t.Fatalf("WriteTo returned %d, the file holds %d bytes", written, info.Size())
	}
	if writes.Load() == 0 {
		t.Fatal("no write ran during the backup: the test proves nothing")
	}
	want := scanAll(t, snap)
	snap.Close()
	if len(want) != n {
		t.Fatalf("snapshot holds %d keys, want %d", len(want), n)
	}

	f, err = os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	target := filepath.Join(dir, "restored")
	if err := bwkv.Restore(target, f, nil); err != nil {
		t.Fatal(err)
	}
	if names, _ := os.ReadDir(dir); len(names) != 3 {
		t.Fatalf("restore left %d entries beside the target: %v", len(names), names)
	}
	rdb, err := bwkv.Open(target, nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(db *bwkv.DB) {
		t.Helper()
		if err := db.View(func(s *bwkv.Snapshot) error {
			equalKVs(t, scanAll(t, s), want)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := db.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	check(rdb)
	// The restored database takes writes and survives a reopen.
	if err := rdb.Put([]byte("after-restore"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Delete([]byte("after-restore")); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Close(); err != nil {
		t.Fatal(err)
	}
	rdb, err = bwkv.Open(target, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(rdb)
	rdb.Close()
}

// smallStream returns a valid stream of a few chunks' worth of entries
// and the entries.
func smallStream(t testing.TB, keys, valSize int) ([]byte, []bkEntry) {
	t.Helper()
	db, err := bwkv.Open("db", &bwkv.Options{FS: vfs.NewMem(), Durability: bwkv.DurabilityRelaxed})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var want []bkEntry
	for i := 0; i < keys; i++ {
		v := bytes.Repeat([]byte{byte(i)}, valSize)
		if err := db.Put(backupKey(i), v); err != nil {
			t.Fatal(err)
		}
		want = append(want, bkEntry{backupKey(i), v})
	}
	var buf bytes.Buffer
	if err := db.View(func(s *bwkv.Snapshot) error {
		_, err := s.Backup(&buf, &bwkv.BackupOptions{Metadata: []byte("meta")})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), want
}

// decodeAll reads a whole stream.
func decodeAll(stream []byte) ([]bkEntry, error) {
	br, err := bwkv.NewBackupReader(bytes.NewReader(stream))
	if err != nil {
		return nil, err
	}
	var out []bkEntry
	for {
		k, v, err := br.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, bkEntry{bytes.Clone(k), bytes.Clone(v)})
	}
}

func wantCorruption(t *testing.T, err error, what string) *bwkv.CorruptionError {
	t.Helper()
	var ce *bwkv.CorruptionError
	if !errors.As(err, &ce) || !errors.Is(err, bwkv.ErrCorruption) {
		t.Fatalf("%s: %v, want a *CorruptionError", what, err)
	}
	return ce
}

// TestBackupStreamDamage cuts the stream at every byte and flips every
// byte: each must be a *CorruptionError naming the chunk, never a panic
// and never a silently shorter result.
func TestBackupStreamDamage(t *testing.T) {
	stream, want := smallStream(t, 60, 40)
	got, err := decodeAll(stream)
	if err != nil {
		t.Fatal(err)
	}
	equalKVs(t, got, want)
	h, err := bwkv.ReadBackupHeader(bytes.NewReader(stream))
	if err != nil || string(h.Metadata) != "meta" || h.Version != 1 {
		t.Fatalf("header %+v, %v", h, err)
	}
	for cut := 0; cut < len(stream); cut++ {
		_, err := decodeAll(stream[:cut])
		ce := wantCorruption(t, err, fmt.Sprintf("cut at %d of %d", cut, len(stream)))
		if cut >= 12 && !bytes.Contains([]byte(ce.Reason), []byte("chunk")) {
			t.Fatalf("cut at %d: %q does not name the chunk", cut, ce.Reason)
		}
	}
	for i := 0; i < len(stream); i++ {
		bad := bytes.Clone(stream)
		bad[i] ^= 0x10
		_, err := decodeAll(bad)
		if i >= 8 && i < 12 {
			if !errors.Is(err, bwkv.ErrVersion) {
				t.Fatalf("flipped version byte %d: %v, want ErrVersion", i, err)
			}
			continue
		}
		wantCorruption(t, err, fmt.Sprintf("byte %d flipped", i))
	}
	// Bytes after the trailer are damage too.
	_, err = decodeAll(append(bytes.Clone(stream), 0))
	wantCorruption(t, err, "trailing byte")
}

// TestRestoreDamagedLeavesNothing: a restore from a damaged stream fails
// with a *CorruptionError naming the chunk and leaves no directory.
func TestRestoreDamagedLeavesNothing(t *testing.T) {
	stream, _ := smallStream(t, 3000, 300) // several chunks
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"truncated", stream[:len(stream)*2/3]},
		{"flipped", func() []byte { b := bytes.Clone(stream); b[len(b)/2] ^= 1; return b }()},
		{"no-trailer", stream[:len(stream)-(1+8+4+48+4)]},
	} {
		target := filepath.Join(dir, tc.name)
		err := bwkv.Restore(target, bytes.NewReader(tc.data), nil)
		ce := wantCorruption(t, err, tc.name)
		if !bytes.Contains([]byte(ce.Error()), []byte("chunk ")) {
			t.Fatalf("%s: %v does not name the chunk", tc.name, err)
		}
		if names, _ := os.ReadDir(dir); len(names) != 0 {
			t.Fatalf("%s: restore left %v", tc.name, names)
		}
	}
}

func TestRestoreRefusesExisting(t *testing.T) {
	stream, want := smallStream(t, 10, 10)
	dir := t.TempDir()
	src := filepath.Join(dir, "db")
	db, err := bwkv.Open(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if err := bwkv.Restore(src, bytes.NewReader(stream), nil); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("restore over a database: %v, want ErrExist", err)
	}
	other := filepath.Join(dir, "other")
	os.Mkdir(other, 0o755)
	os.WriteFile(filepath.Join(other, "x"), nil, 0o644)
	if err := bwkv.Restore(other, bytes.NewReader(stream), nil); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("restore over a non-empty directory: %v, want ErrExist", err)
	}
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	if err := bwkv.Restore(empty, bytes.NewReader(stream), nil); err != nil {
		t.Fatalf("restore into an empty directory: %v", err)
	}
	db, err = bwkv.Open(empty, &bwkv.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(s *bwkv.Snapshot) error { equalKVs(t, scanAll(t, s), want); return nil }); err != nil {
		t.Fatal(err)
	}
}

// FuzzBackupReader: the decoder never panics and never returns a result
// for a stream whose verification failed. The seed corpus (a valid stream
// and damaged variants) runs in every go test.
func FuzzBackupReader(f *testing.F) {
	stream, _ := smallStream(f, 20, 8)
	f.Add(stream)
	f.Add(stream[:len(stream)/2])
	b := bytes.Clone(stream)
	b[40] ^= 0xff
	f.Add(b)
	f.Add([]byte("bwkvbak\x00\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeAll(data)
		if err == nil {
			// A stream that verified decodes the same way again and has
			// strictly increasing keys.
			for i := 1; i < len(got); i++ {
				if bytes.Compare(got[i-1].k, got[i].k) >= 0 {
					t.Fatalf("keys out of order in a verified stream: %q, %q", got[i-1].k, got[i].k)
				}
			}
			return
		}
		var ce *bwkv.CorruptionError
		if !errors.As(err, &ce) && !errors.Is(err, bwkv.ErrVersion) {
			t.Fatalf("decode error is neither corruption nor version: %v", err)
		}
	})
}

// TestRestoreShapes restores streams of every small size into trees with
// tiny pages (several inner levels, one-leaf and empty trees), checks the
// structure, then writes into the restored tree and reopens it.
func TestRestoreShapes(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 4, 5, 17, 64, 65, 300} {
		stream, want := smallStream(t, n, 5)
		target := filepath.Join(dir, fmt.Sprint(n))
		o := &bwkv.Options{PageSplitEntries: 4, DeltaChainMax: 2}
		if err := bwkv.Restore(target, bytes.NewReader(stream), o); err != nil {
			t.Fatalf("%d keys: %v", n, err)
		}
		db, err := bwkv.Open(target, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Check(context.Background()); err != nil {
			t.Fatalf("%d keys: check: %v", n, err)
		}
		if err := db.View(func(s *bwkv.Snapshot) error { equalKVs(t, scanAll(t, s), want); return nil }); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n+10; i += 2 {
			if err := db.Put(backupKey(i), []byte("new")); err != nil {
				t.Fatal(err)
			}
			if err := db.Delete(backupKey(i + 1)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Check(context.Background()); err != nil {
			t.Fatalf("%d keys: check after writes: %v", n, err)
		}
		db.Close()
		db, err = bwkv.Open(target, o)
		if err != nil {
			t.Fatal(err)
		}
		got := scanAll(t, mustSnap(t, db))
		if len(got) != (n+10+1)/2 {
			t.Fatalf("%d keys: %d after writes and reopen, want %d", n, len(got), (n+10+1)/2)
		}
		db.Close()
	}
}

func mustSnap(t *testing.T, db *bwkv.DB) *bwkv.Snapshot {
	t.Helper()
	s, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
