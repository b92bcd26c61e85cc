package gc

import "testing"

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
