package bwkv_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/bwkv/bwkv"
)

func TestSequenceBasics(t *testing.T) {
	dir := t.TempDir()
	db, err := bwkv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Sequence([]byte("s"), 0); err == nil {
		t.Fatal("lease 0 accepted")
	}
	q, err := db.Sequence([]byte("s"), 3)
	if err != nil {
		t.Fatal(err)
	}
	for want := uint64(0); want < 7; want++ {
		if n, err := q.Next(); err != nil || n != want {
			t.Fatalf("Next = %d, %v; want %d", n, err, want)
		}
	}
	// 0..6 handed out, the lease reaches 9: Release gives 7 and 8 back.
	if err := q.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Next(); !errors.Is(err, bwkv.ErrClosed) {
		t.Fatalf("Next after Release: %v", err)
	}
	if err := q.Release(); !errors.Is(err, bwkv.ErrClosed) {
		t.Fatalf("second Release: %v", err)
	}
	q2, _ := db.Sequence([]byte("s"), 100)
	if n, err := q2.Next(); err != nil || n != 7 {
		t.Fatalf("after Release: Next = %d, %v; want 7", n, err)
	}
	// Two sequences on one key share it without repeats.
	q3, _ := db.Sequence([]byte("s"), 100)
	n3, _ := q3.Next()
	if n3 != 107 {
		t.Fatalf("second sequence on the key starts at %d, want 107", n3)
	}
	// Not released: a reopen skips the rest of both leases.
	db.Close()
	db, err = bwkv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q4, _ := db.Sequence([]byte("s"), 10)
	if n, err := q4.Next(); err != nil || n != 207 {
		t.Fatalf("after reopen: Next = %d, %v; want 207", n, err)
	}
}

// Concurrent Next calls hand out every number once.
func TestSequenceConcurrent(t *testing.T) {
	db := openTest(t, nil)
	q, err := db.Sequence([]byte("seq"), 50)
	if err != nil {
		t.Fatal(err)
	}
	const workers, per = 8, 2000
	got := make([][]uint64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				n, err := q.Next()
				if err != nil {
					t.Error(err)
					return
				}
				got[w] = append(got[w], n)
			}
		}()
	}
	wg.Wait()
	seen := make(map[uint64]bool)
	for w, ns := range got {
		for i, n := range ns {
			if i > 0 && n <= ns[i-1] {
				t.Fatalf("worker %d: %d after %d", w, n, ns[i-1])
			}
			if seen[n] {
				t.Fatalf("%d handed out twice", n)
			}
			seen[n] = true
		}
	}
	// Relaxed durability: the leases were synced (the restart test
	// checks that they survive a kill).
	if len(seen) != workers*per {
		t.Fatalf("%d numbers, want %d", len(seen), workers*per)
	}
}

// TestSequenceChild is the child side of TestSequenceKill.
func TestSequenceChild(t *testing.T) {
	dir := os.Getenv("BWKV_SEQ_DIR")
	if dir == "" {
		t.Skip("sequence child: runs only when re-executed by TestSequenceKill")
	}
	per, _ := strconv.Atoi(os.Getenv("BWKV_SEQ_PER"))
	db, err := bwkv.Open(dir, &bwkv.Options{Durability: bwkv.DurabilityRelaxed})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	q, err := db.Sequence([]byte("seq"), 97)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	out := &crashOut{w: os.Stdout}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b strings.Builder
			for i := range per {
				n, err := q.Next()
				if err != nil {
					out.line("error %v", err)
					return
				}
				fmt.Fprintf(&b, " %d", n)
				// Report in batches: numbers handed out but never
				// reported are simply not checked.
				if i%64 == 63 || i == per-1 {
					out.line("n %d%s", w, b.String())
					b.Reset()
				}
			}
		}()
	}
	wg.Wait()
	out.line("done")
	select {} // wait to be killed
}

// TestSequenceKill: 8 goroutines x BWKV_SEQ_PER Next calls per process run,
// the process killed with SIGKILL (twice in the middle of the run, once
// after it), reopened each time: per goroutine and run the numbers are
// strictly increasing, and no number is ever handed out twice.
func TestSequenceKill(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	def := 10_000
	if raceEnabled {
		def = 3_000
	}
	per := envInt("BWKV_SEQ_PER", def)
	dir := t.TempDir()
	seen := make(map[uint64]int)
	for run := 1; run <= 3; run++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSequenceChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "BWKV_SEQ_DIR="+dir, "BWKV_SEQ_PER="+strconv.Itoa(per))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Runs 1 and 2 die half way through; run 3 after finishing.
		killAt := 8 * per / 2
		if run == 3 {
			killAt = -1
		}
		count := 0
		last := map[int]uint64{}
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
		killed := false
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch f[0] {
			case "error":
				t.Fatalf("run %d: child: %s", run, sc.Text())
			case "done":
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			case "n":
				w, _ := strconv.Atoi(f[1])
				for _, s := range f[2:] {
					n, _ := strconv.ParseUint(s, 10, 64)
					if prev, ok := last[w]; ok && n <= prev {
						t.Fatalf("run %d worker %d: %d after %d", run, w, n, prev)
					}
					last[w] = n
					if r, dup := seen[n]; dup {
						t.Fatalf("run %d: %d was handed out in run %d already", run, n, r)
					}
					seen[n] = run
					count++
				}
			}
			if !killed && killAt > 0 && count >= killAt {
				cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
		cmd.Wait()
		if !killed {
			t.Fatalf("run %d: child exited by itself after %d numbers", run, count)
		}
		if run == 3 && count != 8*per {
			t.Fatalf("run 3 reported %d numbers, want %d", count, 8*per)
		}
		t.Logf("run %d: %d numbers checked", run, count)
	}
}
