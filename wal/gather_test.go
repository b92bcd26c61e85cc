package wal_test

import (
	"sync"
	"testing"
	"time"

	"github.com/bwkv/bwkv/wal"
)

// primeSync makes one timed fsync of about d, so a leader's gathering
// bound (half the recent fsync time) is about d/2.
func primeSync(t *testing.T, w *wal.Writer, h *hookFS, d time.Duration) {
	t.Helper()
	h.syncDelay.Store(int64(d))
	lsn, err := w.Append(&wal.Record{Type: wal.Commit, TxID: 1})
	if err == nil {
		err = w.Sync(lsn + 1)
	}
	if err != nil {
		t.Fatal(err)
	}
	h.syncDelay.Store(0)
}

// A leader waits for a joined writer's commit, so one fsync covers both.
func TestGatherWaitsForJoinedWriter(t *testing.T) {
	o, h := newLog(t, 1<<20)
	w := openWriter(t, o, 0)
	defer w.Close()
	wal.SetGatherLimit(w, time.Minute) // only the joined writer ends the wait
	primeSync(t, w, h, 400*time.Millisecond)
	base := w.Stats()

	w.Join() // writer A: in the middle of a transaction
	if _, err := w.Append(&wal.Record{Type: wal.Put, TxID: 2, Key: []byte("a"), Value: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	var errB error
	go func() { // writer B commits and leads
		defer wg.Done()
		lsn, err := w.Append(&wal.Record{Type: wal.Commit, TxID: 3})
		if err == nil {
			err = w.Sync(lsn + 1)
		}
		errB = err
	}()
	// B's leader waits (no fsync yet) until A leaves.
	time.Sleep(50 * time.Millisecond)
	if s := w.Stats(); s.Syncs != base.Syncs {
		t.Fatalf("the leader fsynced (%d syncs) while a joined writer had not committed", s.Syncs-base.Syncs)
	}
	lsnA, err := w.Append(&wal.Record{Type: wal.Commit, TxID: 2})
	if err != nil {
		t.Fatal(err)
	}
	w.Leave()
	if err := w.Sync(lsnA + 1); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if errB != nil {
		t.Fatal(errB)
	}
	s := w.Stats()
	if n := s.Syncs - base.Syncs; n != 1 {
		t.Fatalf("%d fsyncs for two commits; want one that covers both", n)
	}
	if n := s.Gathers - base.Gathers; n != 1 {
		t.Fatalf("%d gathers, want 1", n)
	}
}

// A joined writer that never commits holds a leader back no longer than
// half the recent fsync time.
func TestGatherIsBounded(t *testing.T) {
	o, h := newLog(t, 1<<20)
	w := openWriter(t, o, 0)
	defer w.Close()
	wal.SetGatherLimit(w, time.Minute)
	primeSync(t, w, h, 200*time.Millisecond)
	w.Join() // and never Leave
	start := time.Now()
	lsn, err := w.Append(&wal.Record{Type: wal.Commit, TxID: 2})
	if err == nil {
		err = w.Sync(lsn + 1)
	}
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	s := w.Stats()
	if s.Gathers != 1 || s.GatherWait < 80*time.Millisecond || s.GatherWait > 5*time.Second {
		t.Fatalf("gathers %d, wait %v: want one wait of about 100ms", s.Gathers, s.GatherWait)
	}
	t.Logf("commit took %v, of which %v gathering", took, s.GatherWait)
}

// A lone committer (nobody joined) never waits.
func TestGatherLoneCommitter(t *testing.T) {
	o, h := newLog(t, 1<<20)
	w := openWriter(t, o, 0)
	defer w.Close()
	wal.SetGatherLimit(w, time.Minute)
	primeSync(t, w, h, 100*time.Millisecond)
	for i := range 5 {
		w.Join()
		lsn, err := w.Append(&wal.Record{Type: wal.Commit, TxID: wal.TxID(10 + i)})
		w.Leave()
		if err == nil {
			err = w.Sync(lsn + 1)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if s := w.Stats(); s.Gathers != 0 {
		t.Fatalf("%d gathers with no other writer joined", s.Gathers)
	}
}
