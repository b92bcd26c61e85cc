package gc

import (
	"slices"
	"testing"
	"time"
)

func TestWorkerNil(t *testing.T) {
	var w *Worker // a read-only DB's
	if w.Collect(true) || w.Due() || w.Running() {
		t.Fatal("a nil Worker runs nothing")
	}
	w.Published()
	if w.Stats() != (Stats{}) {
		t.Fatal("a nil Worker's stats are zero")
	}
}

func TestWorkerSkipKeepsDue(t *testing.T) {
	w := NewWorker(nil, WorkerEnv{Skip: func() bool { return true }})
	if !w.Due() {
		t.Fatal("a new Worker has a round due")
	}
	if w.Collect(true) {
		t.Fatal("a skipped round reports more")
	}
	if !w.Due() || w.Running() {
		t.Fatalf("after a skipped round: due %v running %v, want due, not running", w.Due(), w.Running())
	}
}

// quietEnv is a WorkerEnv whose rounds always run and whose failures
// the test sees.
func quietEnv(t *testing.T) WorkerEnv {
	return WorkerEnv{
		Skip:            func() bool { return false },
		RoundDone:       func(time.Duration, bool, error) {},
		Fatal:           func(error) bool { return false },
		BackgroundError: func(err error) { t.Errorf("round failed: %v", err) },
	}
}

// TestWorkerResumesSettling: a settle round that leaves work makes the
// round that resumes it (the checkpointer's retry on a quiet database)
// settle too, until a round finishes the work or a publish comes in
// between; a busy round's leftover work stays busy.
func TestWorkerResumesSettling(t *testing.T) {
	var got []bool
	more := []bool{}
	w := &Worker{env: quietEnv(t), round: func(settle bool) (bool, error) {
		got = append(got, settle)
		m := more[0]
		more = more[1:]
		return m, nil
	}}
	run := func(settle bool, m ...bool) {
		t.Helper()
		more, got = m, nil
		for range m {
			w.Collect(settle)
			settle = false // the retries the checkpointer runs
		}
		if len(more) != 0 {
			t.Fatalf("rounds ran %d times, want %d", len(m)-len(more), len(m))
		}
	}
	// DB.Checkpoint's round leaves work; the two retries settle, the
	// second finishes, and nothing is due after it.
	run(true, true, true, false)
	if want := []bool{true, true, true}; !slices.Equal(got, want) {
		t.Fatalf("settle flags %v, want %v", got, want)
	}
	if w.Due() {
		t.Fatal("due after the work was finished")
	}
	// A publish between the settle round and the retry: writes went
	// on, the retry is a busy round.
	run(true, true)
	w.Published()
	run(false, false)
	if want := []bool{false}; !slices.Equal(got, want) {
		t.Fatalf("after a publish: settle flags %v, want %v", got, want)
	}
	// A busy round's leftover work is resumed by busy rounds.
	w.Published()
	run(false, true, false)
	if want := []bool{false, false}; !slices.Equal(got, want) {
		t.Fatalf("busy retries: settle flags %v, want %v", got, want)
	}
}
