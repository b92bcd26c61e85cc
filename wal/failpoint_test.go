package wal_test

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwkv/bwkv/failpoints"
	_ "github.com/bwkv/bwkv/failpoints/armed" // links pingcap/failpoint under -tags failpoints
	"github.com/bwkv/bwkv/vfs"
)

// childDirEnv tells a re-executed test binary to run the crash workload in
// that directory (docs/crash-safety.md, layer 3).
const childDirEnv = "BWKV_WAL_CHILD_DIR"

const childRecords = 300

// armKill is the GO_FAILPOINTS setting that kills a child at the hit-th
// pass through the catalogue point name.
func armKill(name string, hit int) string {
	term := `return("kill")`
	if hit > 1 {
		term = fmt.Sprintf("%d*off->%s", hit-1, term)
	}
	return "GO_FAILPOINTS=" + failpoints.Prefix + name + "=" + term
}

// TestFailpointChild is the child side of TestFailpointCrash: it runs the
// workload on the OS file system, printing every acknowledgement before the
// armed failpoint kills it.
func TestFailpointChild(t *testing.T) {
	dir := os.Getenv(childDirEnv)
	if dir == "" {
		t.Skip("child of TestFailpointCrash only")
	}
	out := bufio.NewWriter(os.Stdout)
	run := walRun{onAck: func(r *walRun) {
		fmt.Fprintf(out, "ack %d %d\n", r.acked, r.from)
		out.Flush() // a pipe survives SIGKILL; a buffer does not
	}}
	if err := runWorkload(vfs.Default(), rand.New(rand.NewPCG(1, 2)), childRecords, &run, dir); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(out, "done")
	out.Flush()
}

// TestFailpointCrash kills a child at the N-th hit of each WAL failpoint
// and checks the log it leaves: it replays with the last acknowledged LSN
// as frontier, holds every acknowledged record and only a prefix of what
// the (deterministic) workload appended, and continues.
func TestFailpointCrash(t *testing.T) {
	if !failpoints.Enabled {
		t.Skip("needs -tags failpoints")
	}
	if os.Getenv(childDirEnv) != "" {
		t.Skip("in the child")
	}
	// The workload is deterministic: replay it in memory for the records.
	var model walRun
	if err := runWorkload(vfs.NewMem(), rand.New(rand.NewPCG(1, 2)), childRecords, &model, "/db/wal"); err != nil {
		t.Fatal(err)
	}
	points := []string{failpoints.WALAppend, failpoints.WALBeforeSync, failpoints.WALAfterSync,
		failpoints.WALRotate, failpoints.WALRecycle}
	for _, fp := range points {
		for _, hit := range []int{1, 2, 7} {
			t.Run(fmt.Sprintf("%s:%d", fp, hit), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "wal")
				cmd := exec.Command(os.Args[0], "-test.run=^TestFailpointChild$", "-test.count=1")
				cmd.Env = append(os.Environ(), childDirEnv+"="+dir, armKill(fp, hit))
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				if strings.Contains(stdout.String(), "done") {
					t.Skipf("%s hit fewer than %d times", fp, hit)
				}
				if err == nil || !strings.Contains(stderr.String(), "failpoint "+fp+" fired") {
					t.Fatalf("child was not killed by the failpoint: %v\n%s", err, stderr.String())
				}
				run := walRun{appended: model.appended}
				for line := range strings.Lines(stdout.String()) {
					if _, err := fmt.Sscanf(line, "ack %d %d", &run.acked, &run.from); err != nil {
						t.Fatalf("bad child line %q", line)
					}
				}
				checkRecovered(t, vfs.Default(), run, dir, "crash at "+fp)
			})
		}
	}
}
