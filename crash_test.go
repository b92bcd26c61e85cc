package bwkv_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/vfs"
)

// Crash tests with a real process (docs/crash-safety.md, layer 4 and invariants
// I1–I6). The child is this test binary re-executed with BWKV_CRASH_DIR
// set; it reports on stdout (a pipe survives SIGKILL):
//
//	P id k=ver ...  about to call Commit for txn id with these writes
//	C id            Commit returned nil (acknowledged)
//	E id            Commit returned an error (in doubt)
//	R id            rolled back
//	H id k=ver ...  txn left open on purpose (must never be visible)
//	s / S           a DB.Sync call starts / returned nil
//
// Values are "id:ver": each txn reads a key's version and writes ver+1, so
// first-writer-wins makes every key's versions a line.

const crashKeys = 48

func crashKey(i int) []byte { return []byte(fmt.Sprintf("ck%03d", i)) }

type crashOut struct {
	mu sync.Mutex
	w  io.Writer
}

func (o *crashOut) line(format string, a ...any) {
	o.mu.Lock()
	fmt.Fprintf(o.w, format+"\n", a...)
	o.mu.Unlock()
}

func parseVal(v []byte) (id int64, ver int) {
	s := string(v)
	i := strings.IndexByte(s, ':')
	if i < 0 {
		return -1, -1
	}
	id, _ = strconv.ParseInt(s[:i], 10, 64)
	rest := s[i+1:]
	if j := strings.IndexByte(rest, ':'); j >= 0 {
		rest = rest[:j] // padding (crashVal)
	}
	ver, _ = strconv.Atoi(rest)
	return id, ver
}

// crashVal is the value crashWrites writes: "id:ver", and with a small
// BlobThreshold (the tiny-checkpoint children) every other one padded
// past it, so blob frames are written, reused and collected too.
func crashVal(db *bwkv.DB, id int64, ver int) []byte {
	v := fmt.Appendf(nil, "%d:%d", id, ver)
	if bt := db.Options().BlobThreshold; bt > 0 && bt <= 256 && id%2 == 0 {
		v = append(v, ':')
		for len(v) < bt+int(id%64) {
			v = append(v, byte('a'+id%26))
		}
	}
	return v
}

// TestCrashChild is the child side; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("BWKV_CRASH_DIR")
	if dir == "" {
		t.Skip("crash child: runs only when re-executed by a crash test")
	}
	mode := os.Getenv("BWKV_CRASH_MODE")
	out := &crashOut{w: os.Stdout}
	switch mode {
	case "sync", "relaxed":
		crashWorkload(dir, mode, out)
	case "undo-prepare":
		undoPrepare(dir, out)
	case "steal":
		stealPrepare(dir, out)
	case "rollback-cut":
		rollbackCut(dir, out)
	case "undo-crash":
		k, _ := strconv.Atoi(os.Getenv("BWKV_CRASH_UNDO_AT"))
		n := 0
		db, err := bwkv.Open(dir, bwkv.WithTestRecoveryHook(nil, func() {
			if n++; n == k {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}))
		if err == nil {
			db.Close()
		}
		out.line("recovered %v", err)
		os.Exit(0)
	}
	select {} // wait to be killed
}

func crashWorkload(dir, mode string, out *crashOut) {
	o := &bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 3, WALSegmentBytes: 64 << 10, MaxValueSize: 1 << 10}
	// Txns left open on purpose hold their keys until the kill: writes
	// meeting them wait only briefly (the waits still happen, and crash).
	o.LockTimeout = 2 * time.Millisecond
	if mode == "relaxed" {
		o.Durability = bwkv.DurabilityRelaxed
		o.FlushInterval = 5 * time.Millisecond
	}
	if os.Getenv("BWKV_CRASH_CKPT") != "" {
		// Tiny checkpoints: crashes land inside them. A tiny cache
		// too: leaves are evicted to stubs that take blind inserts, so
		// crashes land between a stub's chain and its durable head.
		o.CheckpointBytes = 16 << 10
		o.CacheBytes = 1
		// Blob files on, at a threshold every other value passes
		// (crashVal): the failpoint matrix runs this workload.
		o.BlobThreshold = 64
		// A small manifest too: crashes land in its rotation.
		o = bwkv.WithTestManifestRotateBytes(o, 8<<10)
	}
	db, err := bwkv.Open(dir, o)
	if err != nil {
		out.line("open error %v", err)
		os.Exit(3)
	}
	round, _ := strconv.ParseInt(os.Getenv("BWKV_CRASH_ROUND"), 10, 64)
	var next atomic.Int64
	next.Store(round * 1_000_000)
	if mode == "relaxed" {
		go func() {
			for {
				time.Sleep(3 * time.Millisecond)
				out.line("s")
				if db.Sync() == nil {
					out.line("S")
				}
			}
		}()
	}
	// BWKV_CRASH_SEED (the failpoint matrix's seed dimension) varies
	// the writers' random streams; 0 keeps the round's own.
	seed, _ := strconv.ParseUint(os.Getenv("BWKV_CRASH_SEED"), 10, 64)
	for w := 0; w < 4; w++ {
		go crashWrites(db, out, rand.New(rand.NewPCG(uint64(round)+seed<<32, uint64(w))), &next, 2, -1)
	}
}

// crashWrites is one crash-model writer, run until the DB refuses a
// Begin: read-modify-write transactions over the hot keys, reported on
// out for crashModel (P before Commit, then C or E; R for a rollback; H
// for a transaction left open for the crash to find). A transaction is
// left open with probability holdPct%, at most maxHeld times (< 0: no
// limit).
func crashWrites(db *bwkv.DB, out *crashOut, rng *rand.Rand, next *atomic.Int64, holdPct, maxHeld int) {
	held := 0
	for {
		id := next.Add(1)
		tx, err := db.Begin()
		if err != nil {
			return
		}
		var writes []string
		ok := true
		for i, n := 0, 1+rng.IntN(4); i < n && ok; i++ {
			k := crashKey(rng.IntN(crashKeys))
			ver := 0
			if v, err := tx.Get(k); err == nil {
				_, ver = parseVal(v)
			} else if !errors.Is(err, bwkv.ErrNotFound) {
				ok = false
				break
			}
			if err := tx.Put(k, crashVal(db, id, ver+1)); err != nil {
				ok = false
				break
			}
			writes = append(writes, fmt.Sprintf("%s=%d", k, ver+1))
		}
		switch r := rng.IntN(100); {
		case !ok:
			tx.Rollback()
		case r < 10:
			tx.Rollback()
			out.line("R %d", id)
		case r < 10+holdPct && (maxHeld < 0 || held < maxHeld):
			held++
			if os.Getenv("BWKV_CRASH_STEAL") != "" {
				// A checkpoint steals the open txn's versions, so the
				// next recovery has writes below the frontier to undo
				// (those after it are never installed).
				_ = db.Checkpoint()
			}
			out.line("H %d %s", id, strings.Join(writes, " "))
			// Left open: the crash finds it in flight.
		default:
			out.line("P %d %s", id, strings.Join(writes, " "))
			if err := tx.Commit(); err == nil {
				out.line("C %d", id)
			} else if !errors.Is(err, bwkv.ErrConflict) {
				out.line("E %d", id)
			}
		}
	}
}

// crashModel accumulates what children reported across rounds.
type crashModel struct {
	prepared map[int64]map[string]int // P: writes of txns that called Commit
	held     map[int64]bool           // H: never committed
	rolled   map[int64]bool           // R
	acked    []int64                  // C ids whose durability is promised
}

func newCrashModel() *crashModel {
	return &crashModel{prepared: map[int64]map[string]int{}, held: map[int64]bool{}, rolled: map[int64]bool{}}
}

// absorb reads one child's report. In relaxed mode only commits
// acknowledged before a sync that started after them and returned count.
func (m *crashModel) absorb(lines []string, relaxed bool) {
	var pending []int64 // acked, not yet covered by a sync (relaxed)
	var covered []int64 // acked before the current "s"
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "P", "H":
			id, _ := strconv.ParseInt(f[1], 10, 64)
			w := map[string]int{}
			for _, kv := range f[2:] {
				i := strings.IndexByte(kv, '=')
				w[kv[:i]], _ = strconv.Atoi(kv[i+1:])
			}
			if f[0] == "P" {
				m.prepared[id] = w
			} else {
				m.held[id] = true
				m.prepared[id] = w
			}
		case "R":
			id, _ := strconv.ParseInt(f[1], 10, 64)
			m.rolled[id] = true
		case "C":
			id, _ := strconv.ParseInt(f[1], 10, 64)
			if relaxed {
				pending = append(pending, id)
			} else {
				m.acked = append(m.acked, id)
			}
		case "s":
			covered = append(covered, pending...)
			pending = nil
		case "S":
			m.acked = append(m.acked, covered...)
			covered = nil
		}
	}
}

// check verifies I1–I3 on the reopened DB and returns the state.
func (m *crashModel) check(t *testing.T, db *bwkv.DB) map[string]string {
	t.Helper()
	state := map[string]string{}
	ver := map[string]int{}
	for i := 0; i < crashKeys; i++ {
		k := string(crashKey(i))
		v, err := db.Get([]byte(k))
		if errors.Is(err, bwkv.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("get %s: %v", k, err)
		}
		state[k] = string(v)
		id, vr := parseVal(v)
		ver[k] = vr
		w, ok := m.prepared[id]
		switch {
		case !ok:
			t.Fatalf("I3: %s = %s written by txn %d that never reached Commit", k, v, id)
		case m.held[id]:
			t.Fatalf("I3: %s = %s written by txn %d that was left uncommitted", k, v, id)
		case m.rolled[id]:
			t.Fatalf("I3: %s = %s written by rolled-back txn %d", k, v, id)
		case w[k] != vr:
			t.Fatalf("%s = %s but txn %d wrote version %d", k, v, id, w[k])
		}
	}
	// I2: a txn visible anywhere is present (or superseded) everywhere.
	for _, v := range state {
		id, _ := parseVal([]byte(v))
		for k, wv := range m.prepared[id] {
			if ver[k] < wv {
				t.Fatalf("I2: txn %d visible but its write %s=%d lost (now version %d)", id, k, wv, ver[k])
			}
		}
	}
	// I1: acknowledged (and, in relaxed mode, synced) commits are present.
	for _, id := range m.acked {
		for k, wv := range m.prepared[id] {
			if ver[k] < wv {
				t.Fatalf("I1: acknowledged txn %d's write %s=%d lost (now version %d)", id, k, wv, ver[k])
			}
		}
	}
	if err := db.Check(context.Background()); err != nil {
		t.Fatalf("I5: %v", err)
	}
	return state
}

// waitFirstCommit consumes lines until the child reports a commit ("C "),
// its output ends, or limit passes.
func waitFirstCommit(lines <-chan string, limit time.Duration) {
	deadline := time.After(limit)
	for {
		select {
		case l, ok := <-lines:
			if !ok || strings.HasPrefix(l, "C ") {
				return
			}
		case <-deadline:
			return
		}
	}
}

func runChild(t *testing.T, env []string, kill func(lines <-chan string) bool) []string {
	t.Helper()
	return runChildStderr(t, env, os.Stderr, kill)
}

// runChildStderr is runChild with the child's stderr going to stderr.
func runChildStderr(t *testing.T, env []string, stderr io.Writer, kill func(lines <-chan string) bool) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 1024)
	var lines []string
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			select {
			case ch <- sc.Text():
			default:
			}
		}
		close(ch)
		close(done)
	}()
	if kill(ch) {
		cmd.Process.Signal(syscall.SIGKILL)
	}
	<-done
	cmd.Wait()
	return lines
}

func reopenCheck(t *testing.T, dir string, m *crashModel) {
	t.Helper()
	db, err := bwkv.Open(dir, &bwkv.Options{Durability: bwkv.DurabilityRelaxed, PageSplitEntries: 8, DeltaChainMax: 3, WALSegmentBytes: 64 << 10, MaxValueSize: 1 << 10})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	s1 := m.check(t, db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// I6: recovering again without a crash gives the same state.
	db, err = bwkv.Open(dir, &bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 3, WALSegmentBytes: 64 << 10, MaxValueSize: 1 << 10})
	if err != nil {
		t.Fatalf("second reopen: %v", err)
	}
	s2 := m.check(t, db)
	db.Close()
	if fmt.Sprint(s1) != fmt.Sprint(s2) {
		t.Fatalf("I6: state changed between two recoveries:\n%v\n%v", s1, s2)
	}
}

func TestCrashKill9(t *testing.T) {
	rounds := envInt("BWKV_CRASH_ROUNDS", crashRoundsDefault)
	if testing.Short() {
		rounds = 6
	}
	for _, c := range []struct{ mode, ckpt string }{{"sync", ""}, {"relaxed", ""}, {"sync", "1"}, {"relaxed", "1"}} {
		mode := c.mode
		name := mode
		if c.ckpt != "" {
			name += "-tiny-checkpoints"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			m := newCrashModel()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
			commits := 0
			// BWKV_CRASH_ROUNDS rounds per durability mode; the
			// tiny-checkpoint variants add half as many again.
			n := rounds
			if c.ckpt != "" {
				n = rounds / 2
			}
			for r := 1; r <= n; r++ {
				delay := time.Duration(20+rng.IntN(200)) * time.Millisecond
				lines := runChild(t, []string{
					"BWKV_CRASH_DIR=" + dir, "BWKV_CRASH_MODE=" + mode, fmt.Sprintf("BWKV_CRASH_ROUND=%d", r),
					"BWKV_CRASH_CKPT=" + c.ckpt,
				}, func(lines <-chan string) bool {
					// The random delay runs from the child's first
					// acknowledged commit, not from its start: on a loaded
					// machine a child may need longer than the delay to
					// start and open, and a round killed before any commit
					// tests nothing.
					waitFirstCommit(lines, 30*time.Second)
					time.Sleep(delay)
					return true
				})
				m.absorb(lines, mode == "relaxed")
				for _, l := range lines {
					if strings.HasPrefix(l, "C ") {
						commits++
					}
					if strings.HasPrefix(l, "open error") {
						t.Fatalf("round %d: child: %s", r, l)
					}
				}
				reopenCheck(t, dir, m)
			}
			if commits == 0 {
				t.Fatal("children acknowledged no commit")
			}
			if c.ckpt != "" {
				datas, _ := filepath.Glob(filepath.Join(dir, "*.data"))
				if len(datas) == 0 {
					t.Fatal("tiny-checkpoint children wrote no data file")
				}
				if blobFrames(t, vfs.Default(), dir) == 0 {
					t.Fatal("tiny-checkpoint children left no blob frame")
				}
			}
			t.Logf("%d rounds, %d acknowledged commits, %d protected", n, commits, len(m.acked))
		})
	}
}

// undoPrepare commits base values, then leaves a txn that overwrote and
// deleted them open, with its records durable, and reports "ready".
func undoPrepare(dir string, out *crashOut) {
	db, err := bwkv.Open(dir, nil)
	if err != nil {
		out.line("open error %v", err)
		os.Exit(3)
	}
	openLoser(db, out)
	// The checkpoint steals the loser's versions to disk: recovery must
	// undo them, with the old values the cut logged (before-images).
	if err := db.Checkpoint(); err != nil {
		out.line("error %v", err)
		os.Exit(3)
	}
	if err := db.Sync(); err != nil {
		out.line("error %v", err)
		os.Exit(3)
	}
	out.line("ready")
}

// openLoser commits old values for keys 0..9, then leaves open a txn that
// overwrote or deleted each of them and inserted key 20 (checkUndone
// verifies the undo).
func openLoser(db *bwkv.DB, out *crashOut) *bwkv.Txn {
	for i := 0; i < 10; i++ {
		if err := db.Put(crashKey(i), []byte(fmt.Sprintf("old%d", i))); err != nil {
			out.line("error %v", err)
			os.Exit(3)
		}
	}
	tx, _ := db.Begin()
	for i := 0; i < 10; i++ {
		if i%3 == 0 {
			tx.Delete(crashKey(i))
		} else {
			tx.Put(crashKey(i), []byte("loser"))
		}
	}
	tx.Put(crashKey(20), []byte("loser-insert"))
	return tx
}

func waitReady(lines <-chan string) bool {
	for l := range lines {
		if l == "ready" {
			return true
		}
	}
	return false
}

func checkUndone(t *testing.T, db *bwkv.DB) {
	t.Helper()
	for i := 0; i < 10; i++ {
		wantValue(t, db.Get, string(crashKey(i)), fmt.Sprintf("old%d", i))
	}
	wantValue(t, db.Get, string(crashKey(20)), "")
}

// TestRecoveryUndo: a txn that overwrote, deleted and inserted keys is open
// at the kill; after reopen every key holds its old value, restored from
// the log's old values with CLRs.
func TestRecoveryUndo(t *testing.T) {
	dir := t.TempDir()
	lines := runChild(t, []string{"BWKV_CRASH_DIR=" + dir, "BWKV_CRASH_MODE=undo-prepare"}, waitReady)
	if len(lines) == 0 || lines[len(lines)-1] != "ready" {
		t.Fatalf("child: %q", lines)
	}
	db, err := bwkv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := db.Stats().Recovery
	if st.LosersUndone != 1 || st.CLRsWritten != 11 {
		t.Fatalf("recovery stats %+v, want 1 loser and 11 CLRs", st)
	}
	checkUndone(t, db)
	db.Close()
	db, err = bwkv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := db.Stats().Recovery; st.LosersUndone != 0 {
		t.Fatalf("second recovery undid again: %+v", st)
	}
	checkUndone(t, db)
	db.Close()
}

// TestCrashDuringRecovery kills the process in the middle of undo; the next
// open finishes the job with the same result.
func TestCrashDuringRecovery(t *testing.T) {
	for _, at := range []int{1, 4, 11} {
		t.Run(fmt.Sprint("undo-step-", at), func(t *testing.T) {
			dir := t.TempDir()
			runChild(t, []string{"BWKV_CRASH_DIR=" + dir, "BWKV_CRASH_MODE=undo-prepare"}, waitReady)
			lines := runChild(t, []string{"BWKV_CRASH_DIR=" + dir, "BWKV_CRASH_MODE=undo-crash",
				fmt.Sprintf("BWKV_CRASH_UNDO_AT=%d", at)}, func(ch <-chan string) bool {
				for range ch {
				}
				return false
			})
			for _, l := range lines {
				if strings.HasPrefix(l, "recovered") {
					t.Fatalf("child finished recovery instead of dying at undo step %d: %s", at, l)
				}
			}
			db, err := bwkv.Open(dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			st := db.Stats().Recovery
			if st.LosersUndone != 1 || st.CLRsWritten < uint64(11-(at-1)) || st.CLRsWritten > 11 {
				t.Fatalf("recovery after a crash at undo step %d: %+v", at, st)
			}
			checkUndone(t, db)
			db.Close()
		})
	}
}
