package bwkv_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
)

// slowReader feeds a stream in small steps with a pause, so a kill lands
// anywhere in a restore: while reading, between checkpoints, at the final
// checkpoint, around the rename.
type slowReader struct {
	r     io.Reader
	pause time.Duration
}

func (s *slowReader) Read(p []byte) (int, error) {
	time.Sleep(s.pause)
	return s.r.Read(p[:min(len(p), 8<<10)])
}

// TestRestoreChild is the child side of TestRestoreKill9; it does nothing
// in a normal run.
func TestRestoreChild(t *testing.T) {
	src, target := os.Getenv("BWKV_RESTORE_SRC"), os.Getenv("BWKV_RESTORE_TARGET")
	if src == "" {
		t.Skip("restore child: runs only when re-executed by TestRestoreKill9")
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	// Small checkpoints, so the restore writes several data files.
	o := &bwkv.Options{CheckpointBytes: 256 << 10}
	if err := bwkv.Restore(target, &slowReader{r: f, pause: 100 * time.Microsecond}, o); err != nil {
		t.Fatal(err)
	}
	fmt.Println("restored")
}

// TestRestoreKill9 kills a restoring child at random moments: the target
// is then absent, or a complete database equal to the stream.
func TestRestoreKill9(t *testing.T) {
	rounds := 6
	if s := os.Getenv("BWKV_RESTORE_KILL_ROUNDS"); s != "" {
		rounds, _ = strconv.Atoi(s)
	} else if testing.Short() {
		rounds = 2
	}
	stream, want := smallStream(t, 4000, 300)
	dir := t.TempDir()
	src := filepath.Join(dir, "stream")
	if err := os.WriteFile(src, stream, 0o644); err != nil {
		t.Fatal(err)
	}
	child := func(target string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRestoreChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "BWKV_RESTORE_SRC="+src, "BWKV_RESTORE_TARGET="+target)
		return cmd
	}
	// One full run measures how long a restore takes.
	start := time.Now()
	if out, err := child(filepath.Join(dir, "full")).CombinedOutput(); err != nil || !bytes.Contains(out, []byte("restored")) {
		t.Fatalf("child restore: %v\n%s", err, out)
	}
	full := time.Since(start)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, a full restore takes %v", seed, full)
	rng := rand.New(rand.NewPCG(seed, 7))
	absent, complete := 0, 0
	for r := 0; r < rounds; r++ {
		target := filepath.Join(dir, fmt.Sprintf("t%d", r))
		cmd := child(target)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Int64N(int64(full)))
		time.Sleep(delay)
		_ = cmd.Process.Kill() // SIGKILL
		_ = cmd.Wait()
		if _, err := os.Stat(target); errors.Is(err, os.ErrNotExist) {
			absent++
			continue
		}
		db, err := bwkv.Open(target, nil)
		if err != nil {
			t.Fatalf("round %d (kill after %v): target exists but does not open: %v", r, delay, err)
		}
		if err := db.View(func(s *bwkv.Snapshot) error { equalKVs(t, scanAll(t, s), want); return nil }); err != nil {
			t.Fatal(err)
		}
		db.Close()
		complete++
	}
	t.Logf("%d rounds: target absent %d, complete %d", rounds, absent, complete)
}
