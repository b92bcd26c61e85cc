package bwkv_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwkv/bwkv/failpoints"
	_ "github.com/bwkv/bwkv/failpoints/armed" // links pingcap/failpoint under -tags failpoints
)

// fpArm is the GO_FAILPOINTS entry that makes the catalogue point name
// act (failpoints.ActKill or ActError) once, at its n-th pass.
func fpArm(name, act string, n int) string {
	term := fmt.Sprintf("1*return(%q)", act)
	if n > 1 {
		term = fmt.Sprintf("%d*off->", n-1) + term
	}
	return "GO_FAILPOINTS=" + failpoints.Prefix + name + "=" + term
}

// syncBuffer is a bytes.Buffer safe for the exec package's copying
// goroutine and a reader polling it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFailpointMatrix is the failpoint crash matrix: for every catalogued
// failpoint, action (BWKV_FP_ACTIONS, default "kill"; "kill,error" in
// prod_test.sh chaos), hit count N (BWKV_FP_HITS, default "1"; a comma
// list runs several) and workload seed (BWKV_FP_SEEDS, the number of
// seeds, default 1; with more, each cell's name ends in its seed), a
// child armed through GO_FAILPOINTS acts at the N-th hit: kill dies
// there, error makes the step fail with an injected I/O error and the
// child is killed a little later. The parent reopens and
// checks I1–I6 each time. Round 1 (unarmed, killed at a random time)
// leaves a log with losers, so round 2's Open passes the recovery points
// too. Needs -tags failpoints. It logs "crash-reopen cycles: N" for
// prod_test.sh to add up.
func TestFailpointMatrix(t *testing.T) {
	if !failpoints.Enabled {
		t.Skip("failpoints are compiled in only with -tags failpoints (prod_test.sh runs this)")
	}
	hits := strings.Split(os.Getenv("BWKV_FP_HITS"), ",")
	if hits[0] == "" {
		hits = []string{"1"}
	}
	acts := strings.Split(os.Getenv("BWKV_FP_ACTIONS"), ",")
	if acts[0] == "" {
		acts = []string{failpoints.ActKill}
	}
	seeds := 1
	if v := os.Getenv("BWKV_FP_SEEDS"); v != "" {
		var err error
		if seeds, err = strconv.Atoi(v); err != nil || seeds < 1 {
			t.Fatalf("BWKV_FP_SEEDS: bad seed count %q", v)
		}
	}
	cycles := 0
	t.Cleanup(func() { t.Logf("crash-reopen cycles: %d", cycles) })
	for _, name := range failpoints.All {
		for _, act := range acts {
			for _, hs := range hits {
				n, err := strconv.Atoi(hs)
				if err != nil || n < 1 {
					t.Fatalf("BWKV_FP_HITS: bad hit count %q", hs)
				}
				for seed := range seeds {
					sub := name + "/" + act + "/" + hs
					if seeds > 1 {
						sub += "/" + strconv.Itoa(seed)
					}
					t.Run(sub, func(t *testing.T) {
						cycles += 2
						fpCase(t, name, act, n, seed)
					})
				}
			}
		}
	}
}

// fpCase runs one matrix cell: an unarmed round and an armed one, each
// followed by a reopen and the invariant checks. seed varies the child's
// workload (its writers' random streams); seed 0 is the matrix's first.
func fpCase(t *testing.T, name, act string, n, seed int) {
	dir := t.TempDir()
	m := newCrashModel()
	env := []string{"BWKV_CRASH_DIR=" + dir, "BWKV_CRASH_MODE=sync", "BWKV_CRASH_CKPT=1",
		"BWKV_CRASH_SEED=" + strconv.Itoa(seed)}
	if strings.HasPrefix(name, "recovery_") {
		// No checkpoints: round 2's Open then always has round 1's whole
		// log to redo (a checkpoint just before the kill could leave
		// nothing past the frontier).
		env[2] = "BWKV_CRASH_CKPT="
	}
	if name == failpoints.RecoveryUndo {
		// Except one that steals the txn left open: recovery undoes
		// only writes a checkpoint holds (a loser's writes after the
		// frontier are never installed).
		env = append(env, "BWKV_CRASH_STEAL=1")
	}
	// Round 1 must leave work behind, however slow the machine: recycling
	// needs whole segments (round 2's held-open txns soon pin the log),
	// the recovery points a log to redo with a txn left open to undo.
	acks, held := 0, false
	switch {
	case name == failpoints.WALRecycle:
		acks = 600
	case strings.HasPrefix(name, "recovery_"):
		acks, held = 50, true
	}
	lines := runChild(t, append(env, "BWKV_CRASH_ROUND=1"), func(ch <-chan string) bool {
		min, limit := time.After(300*time.Millisecond), time.After(20*time.Second)
		for waited := false; !waited || acks > 0 || held; {
			select {
			case l, ok := <-ch:
				if !ok {
					return false
				}
				switch {
				case strings.HasPrefix(l, "C "):
					acks--
				case strings.HasPrefix(l, "H "):
					held = false
				}
			case <-min:
				waited = true
			case <-limit:
				return true
			}
		}
		return true
	})
	m.absorb(lines, false)

	fired := false
	var stderr syncBuffer
	mark := "failpoint " + name + " fired"
	if act == failpoints.ActError {
		mark = "failpoint " + name + " injected an error"
	}
	lines = runChildStderr(t, append(env, "BWKV_CRASH_ROUND=2", fpArm(name, act, n)), io.MultiWriter(os.Stderr, &stderr), func(ch <-chan string) bool {
		deadline := time.After(10 * time.Second)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					fired = strings.Contains(stderr.String(), mark)
					return false // the child died (killed or exited)
				}
			case <-tick.C:
				if act == failpoints.ActError && !fired && strings.Contains(stderr.String(), mark) {
					fired = true
					// Let the child run on after the failure (its
					// error paths are part of what is checked).
					deadline = time.After(100 * time.Millisecond)
				}
			case <-deadline:
				return true
			}
		}
	})
	if !fired {
		fired = strings.Contains(stderr.String(), mark)
	}
	m.absorb(lines, false)
	// The parent killed the child if the point did not fire: the
	// invariants hold either way.
	reopenCheck(t, dir, m)
	if !fired {
		if n == 1 {
			t.Fatalf("failpoint %s (%s) never fired within 10 s", name, act)
		}
		// Some points are rare (recovery_end fires once per open,
		// rotation and recycling with the log's growth).
		t.Skipf("failpoint %s reached fewer than %d hits in 10 s", name, n)
	}
}
