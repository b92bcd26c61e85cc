package bwkv_test

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
)

// The soak (prod_test.sh soak [minutes]): a child process runs a mixed
// workload for a few seconds and is killed with SIGKILL, the parent
// reopens the directory and checks the crash model's invariants, and so
// on until BWKV_SOAK_MINUTES have passed. Throughout, the child samples
// its heap, open descriptors, data files and the versions of its hottest
// keys every soakSample and reports them ("M" lines); a sample over a
// bound is a violation ("X" line) and fails the test. Child lines reuse
// the crash tests' protocol (P, C, E, R, H; see crash_test.go).

const (
	soakBulkKeys = 20000
	soakSample   = 250 * time.Millisecond
	// Bounds the soak asserts, for the options below (1 MiB cache, 32 KiB
	// checkpoints, 16 KiB data files, MaxOpenFiles 32, chains of 4).
	//
	// soakHeapBound: heap in use. The data (20k keys of ~0.5 KiB, 10 MiB)
	// does not fit the cache; what stays is the cache (1 MiB, hard limit
	// 2x + 4 MiB), dirty pages (2x CheckpointBytes), inner pages, the
	// ledger, the open txns and the runtime's own slack.
	soakHeapBound = 64 << 20
	// soakFDBound: MaxOpenFiles, plus the log, manifest, lock, directory,
	// a file being written, a GC output and the test binary's own.
	soakFDBound = 32 + 24
	// soakVersionBound: versions of one key in its leaf: one per
	// distinct reader (at most 16 live txns and snapshots here) + 2,
	// plus a chain not yet consolidated (up to 6x DeltaChainMax on a stub
	// that took blind writes).
	soakVersionBound = 16 + 2 + 6*4
	// Data files: O(live data / DataFileBytes). The GC rewrites files
	// below 90% live and keeps the space amplification near 1.1, and a
	// checkpoint writes about CheckpointBytes (2x DataFileBytes) per file,
	// so the count stays within soakFilesPerTarget x live / DataFileBytes
	// plus soakFileSlack (the files of the last checkpoints and a GC
	// round in flight).
	soakFilesPerTarget = 2
	soakFileSlack      = 64
)

// soakFileBound is the data-file bound for live bytes of live data.
func soakFileBound(live int64) int {
	return int(soakFilesPerTarget*live/soakOptions().DataFileBytes) + soakFileSlack
}

func soakOptions() *bwkv.Options {
	return &bwkv.Options{
		CacheBytes:       1 << 20,
		CheckpointBytes:  32 << 10,
		DataFileBytes:    16 << 10,
		GCLiveRatio:      0.9,
		GCSpaceAmp:       1.1,
		MaxOpenFiles:     32,
		PageSplitEntries: 16,
		DeltaChainMax:    4,
		MaxKeySize:       256,
		MaxValueSize:     4 << 10,
		WALSegmentBytes:  1 << 20,
	}
}

func soakBulkKey(i int) []byte { return fmt.Appendf(nil, "b%05d", i) }

// soakValue is self-checking: key, version, then filler derived from both.
func soakValue(key []byte, ver int) []byte {
	h := fnv.New64a()
	h.Write(key)
	fmt.Fprint(h, ver)
	seed := h.Sum64()
	v := fmt.Appendf(nil, "%s|%d|", key, ver)
	n := 100 + int(seed%700)
	for len(v) < n {
		v = append(v, byte('a'+seed%26))
		seed = seed*6364136223846793005 + 1442695040888963407
	}
	return v
}

func soakValueOK(key, v []byte) bool {
	f := bytes.SplitN(v, []byte("|"), 3)
	if len(f) != 3 || !bytes.Equal(f[0], key) {
		return false
	}
	ver, err := strconv.Atoi(string(f[1]))
	return err == nil && bytes.Equal(v, soakValue(key, ver))
}

func countFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// TestSoakChild is the child side; it runs only when re-executed.
func TestSoakChild(t *testing.T) {
	dir := os.Getenv("BWKV_SOAK_DIR")
	if dir == "" {
		t.Skip("soak child: runs only when re-executed by TestSoak")
	}
	out := &crashOut{w: os.Stdout}
	db, err := bwkv.Open(dir, soakOptions())
	if err != nil {
		out.line("open error %v", err)
		os.Exit(3)
	}
	round, _ := strconv.ParseInt(os.Getenv("BWKV_SOAK_ROUND"), 10, 64)
	fail := func(format string, a ...any) { out.line("X "+format, a...) }
	var next atomic.Int64
	next.Store(round * 1_000_000)
	// Crash-model writers on the 48 hot keys (crash_test.go's protocol).
	// One txn left open per writer: each pins a reader timestamp.
	for w := 0; w < 4; w++ {
		go crashWrites(db, out, rand.New(rand.NewPCG(uint64(round), uint64(w))), &next, 1, 1)
	}
	// Bulk writers: random updates and deletes over 20k keys (the data
	// does not fit the cache; tiny checkpoints and the GC churn files).
	for w := 0; w < 2; w++ {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(round), uint64(100+w)))
			for {
				err := db.Update(func(tx *bwkv.Txn) error {
					for range 1 + rng.IntN(8) {
						k := soakBulkKey(rng.IntN(soakBulkKeys))
						if rng.IntN(10) == 0 {
							if err := tx.Delete(k); err != nil {
								return err
							}
							continue
						}
						if err := tx.Put(k, soakValue(k, rng.IntN(1<<20))); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil && !errors.Is(err, bwkv.ErrConflict) {
					if errors.Is(err, bwkv.ErrClosed) {
						return
					}
					fail("bulk write: %v", err)
				}
			}
		}()
	}
	// Readers: every value read is whole and belongs to its key.
	for r := 0; r < 2; r++ {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(round), uint64(200+r)))
			for {
				k := soakBulkKey(rng.IntN(soakBulkKeys))
				v, err := db.Get(k)
				switch {
				case errors.Is(err, bwkv.ErrNotFound):
				case err != nil:
					fail("get %s: %v", k, err)
				case !soakValueOK(k, v):
					fail("get %s: damaged value %.40q", k, v)
				}
			}
		}()
	}
	// Scanner: whole-range snapshot scans, keys ascending, values whole.
	go func() {
		for {
			s, err := db.NewSnapshot()
			if err != nil {
				return
			}
			it, err := s.NewIter(nil)
			if err != nil {
				fail("iter: %v", err)
				s.Close()
				return
			}
			var prev []byte
			for ok := it.First(); ok; ok = it.Next() {
				k := it.Key()
				if prev != nil && bytes.Compare(prev, k) >= 0 {
					fail("scan: key %q after %q", k, prev)
				}
				prev = append(prev[:0], k...)
				if k[0] == 'b' && !soakValueOK(k, it.Value()) {
					fail("scan %s: damaged value", k)
				}
			}
			if err := it.Error(); err != nil {
				fail("scan: %v", err)
			}
			it.Close()
			s.Close()
		}
	}()
	// Snapshot holders: a snapshot held for 1-4 s reads the same values
	// at its end as at its start while every writer runs.
	for h := 0; h < 2; h++ {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(round), uint64(300+h)))
			for {
				s, err := db.NewSnapshot()
				if err != nil {
					return
				}
				keys := make([][]byte, 0, 40)
				for i := range 40 {
					if i < 8 {
						keys = append(keys, crashKey(rng.IntN(crashKeys)))
					} else {
						keys = append(keys, soakBulkKey(rng.IntN(soakBulkKeys)))
					}
				}
				read := func() []string {
					var out []string
					for _, k := range keys {
						v, err := s.Get(k)
						if err != nil && !errors.Is(err, bwkv.ErrNotFound) {
							fail("snapshot get %s: %v", k, err)
						}
						out = append(out, string(v))
					}
					return out
				}
				first := read()
				time.Sleep(time.Duration(1000+rng.IntN(3000)) * time.Millisecond)
				if again := read(); fmt.Sprint(again) != fmt.Sprint(first) {
					fail("snapshot held %d keys: reads changed", len(keys))
				}
				s.Close()
			}
		}()
	}
	// Monitor: sample and check the bounds.
	for {
		time.Sleep(soakSample)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fds := countFDs()
		files, _ := filepath.Glob(filepath.Join(dir, "*.data"))
		live := db.Stats().GC.LiveBytes
		vers := 0
		for i := 0; i < crashKeys; i++ {
			n, err := db.KeyVersions(crashKey(i))
			if err != nil {
				fail("versions of %s: %v", crashKey(i), err)
			}
			vers = max(vers, n)
		}
		out.line("M heap=%d fds=%d files=%d versions=%d live=%d", ms.HeapInuse, fds, len(files), vers, live)
		switch {
		case ms.HeapInuse > soakHeapBound:
			fail("heap in use %d > %d", ms.HeapInuse, soakHeapBound)
		case fds > soakFDBound:
			fail("%d open descriptors > %d", fds, soakFDBound)
		case live > 0 && len(files) > soakFileBound(live):
			// (live is 0 until the first GC round after Open reads the
			// accounting: no bound is checked before.)
			fail("%d data files > %d (%d live bytes)", len(files), soakFileBound(live), live)
		case vers > soakVersionBound:
			fail("%d versions of one key > %d", vers, soakVersionBound)
		}
	}
}

// TestSoak runs the soak for BWKV_SOAK_MINUTES (skipped when unset).
func TestSoak(t *testing.T) {
	minutes, err := strconv.ParseFloat(os.Getenv("BWKV_SOAK_MINUTES"), 64)
	if err != nil || minutes <= 0 {
		t.Skip("set BWKV_SOAK_MINUTES (prod_test.sh soak [minutes])")
	}
	if countFDs() < 0 {
		t.Skip("needs /proc/self/fd")
	}
	dir := t.TempDir()
	m := newCrashModel()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	end := time.Now().Add(time.Duration(minutes * float64(time.Minute)))
	var peak struct{ heap, fds, files, vers, samples, live, fileRoom int }
	peak.fileRoom = 1 << 30 // the smallest margin under the file bound
	rounds, commits := 0, 0
	for time.Now().Before(end) {
		rounds++
		life := time.Duration(2000+rng.IntN(6000)) * time.Millisecond
		lines := soakRunChild(t, dir, rounds, life)
		m.absorb(lines, false)
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "C "):
				commits++
			case strings.HasPrefix(l, "X "), strings.HasPrefix(l, "open error"):
				t.Fatalf("round %d: %s", rounds, l)
			case strings.HasPrefix(l, "M "):
				var h, f, n, v, lv int
				if _, err := fmt.Sscanf(l, "M heap=%d fds=%d files=%d versions=%d live=%d", &h, &f, &n, &v, &lv); err == nil {
					peak.heap, peak.fds = max(peak.heap, h), max(peak.fds, f)
					peak.files, peak.vers = max(peak.files, n), max(peak.vers, v)
					peak.live = max(peak.live, lv)
					if lv > 0 {
						peak.fileRoom = min(peak.fileRoom, soakFileBound(int64(lv))-n)
					}
					peak.samples++
				}
			}
		}
		soakReopenCheck(t, dir, m)
		files, _ := filepath.Glob(filepath.Join(dir, "*.data"))
		if rounds == 1 || time.Now().After(end) || rounds%10 == 0 {
			t.Logf("round %d: %d data files after recovery", rounds, len(files))
		}
	}
	if commits == 0 || peak.samples == 0 {
		t.Fatalf("%d acknowledged commits, %d samples: the children did nothing", commits, peak.samples)
	}
	t.Logf("soak %.1f min: %d kill -9 rounds, %d acknowledged commits, %d samples", minutes, rounds, commits, peak.samples)
	t.Logf("peaks (bounds): heap in use %d MiB (%d), descriptors %d (%d), data files %d (bound %d x live/DataFileBytes + %d; live peak %d KiB; smallest margin %d files), versions of one key %d (%d)",
		peak.heap>>20, soakHeapBound>>20, peak.fds, soakFDBound, peak.files, soakFilesPerTarget, soakFileSlack, peak.live>>10, peak.fileRoom, peak.vers, soakVersionBound)
}

// soakRunChild runs one child for life, then kills it with SIGKILL, and
// returns its report.
func soakRunChild(t *testing.T, dir string, round int, life time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSoakChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "BWKV_SOAK_DIR="+dir, fmt.Sprintf("BWKV_SOAK_ROUND=%d", round))
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(life)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	return strings.Split(out.String(), "\n")
}

// soakReopenCheck reopens the directory (recovery), checks I1-I3 and I5
// (crashModel.check) and that every bulk value is whole, then reopens
// again and requires the same state (I6).
func soakReopenCheck(t *testing.T, dir string, m *crashModel) {
	t.Helper()
	var states [2]string
	for i := range states {
		db, err := bwkv.Open(dir, soakOptions())
		if err != nil {
			t.Fatalf("reopen %d: %v", i+1, err)
		}
		st := m.check(t, db)
		var b strings.Builder
		fmt.Fprint(&b, st)
		s, _ := db.NewSnapshot()
		it, _ := s.NewIter(&bwkv.IterOptions{LowerBound: []byte("b"), UpperBound: []byte("c")})
		for ok := it.First(); ok; ok = it.Next() {
			if !soakValueOK(it.Key(), it.Value()) {
				t.Fatalf("reopen: %s holds a damaged value %.40q", it.Key(), it.Value())
			}
			h := fnv.New64a()
			h.Write(it.Value())
			fmt.Fprintf(&b, "%s=%x;", it.Key(), h.Sum64())
		}
		if err := it.Error(); err != nil {
			t.Fatalf("reopen: scan: %v", err)
		}
		it.Close()
		s.Close()
		states[i] = b.String()
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if states[0] != states[1] {
		t.Fatal("I6: the state changed between two recoveries")
	}
}
