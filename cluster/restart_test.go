package cluster_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bwkv/bwkv/cluster"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

func openSingle(t *testing.T, dir string, tr *raft.InmemTransport) *cluster.Node {
	t.Helper()
	rc := fastRaft()
	rc.TrailingLogs = 5 // compact almost everything a snapshot covers
	nd, err := cluster.Open(cluster.Config{
		ID: "n0", Dir: dir, Transport: tr, Raft: rc, Logger: hclog.NewNullLogger(),
		Bootstrap: []raft.Server{{ID: "n0", Address: "n0"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second) // hang detector
	for !nd.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("single node did not lead within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nd
}

// TestRestartBehindSnapshot: a node whose state machine is behind raft's
// newest snapshot (a crash between raft saving an installed snapshot and
// the FSM swapping it in; here simulated by putting back an older state
// machine) installs that snapshot at Open, before raft replays the log
// after it. Without that step the entries the snapshot covers (and the
// compacted log no longer holds) would be missing.
func TestRestartBehindSnapshot(t *testing.T) {
	dir := t.TempDir()
	_, tr := raft.NewInmemTransport("n0")
	nd := openSingle(t, dir, tr)
	ctx := context.Background()
	put := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := nd.Update(ctx, new(cluster.Batch).Put([]byte(keyName(i)), []byte("v"))); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(0, 5)
	// An old copy of the state machine (closed cleanly to copy it).
	if err := nd.Close(); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(t.TempDir(), "fsm-old")
	if err := os.CopyFS(old, os.DirFS(filepath.Join(dir, "fsm"))); err != nil {
		t.Fatal(err)
	}
	nd = openSingle(t, dir, tr)
	put(5, 100)
	if err := nd.Snapshot(); err != nil {
		t.Fatal(err)
	}
	put(100, 110)
	if _, _, err := nd.Get(ctx, []byte("x")); err != nil && !isNotFound(err) {
		t.Fatal(err)
	}
	want, wantSum, err := nd.Hash()
	if err != nil {
		t.Fatal(err)
	}
	if err := nd.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "fsm")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "fsm"), os.DirFS(old)); err != nil {
		t.Fatal(err)
	}
	nd = openSingle(t, dir, tr)
	defer nd.Close()
	if _, _, err := nd.Get(ctx, []byte("x")); err != nil && !isNotFound(err) {
		t.Fatal(err)
	}
	got, sum, err := nd.Hash()
	if err != nil {
		t.Fatal(err)
	}
	if got < want || (got == want && sum != wantSum) || nd.Restores() != 1 {
		t.Fatalf("after restart: index %d (restores %d), want %d with the same hash", got, nd.Restores(), want)
	}
	for i := range 110 {
		if _, _, err := nd.StaleGet([]byte(keyName(i))); err != nil {
			t.Fatalf("key %d lost: %v", i, err)
		}
	}
}

// TestRestartSnapshotEndsInBarrier: a snapshot whose index is a barrier
// (never passed to the FSM) is not mistaken for a state the FSM lacks: a
// clean restart installs nothing.
func TestRestartSnapshotEndsInBarrier(t *testing.T) {
	dir := t.TempDir()
	_, tr := raft.NewInmemTransport("n0")
	nd := openSingle(t, dir, tr)
	ctx := context.Background()
	for i := range 20 {
		if _, err := nd.Update(ctx, new(cluster.Batch).Put([]byte(keyName(i)), []byte("v"))); err != nil {
			t.Fatal(err)
		}
	}
	if err := nd.Raft().Barrier(0).Error(); err != nil {
		t.Fatal(err)
	}
	if err := nd.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if li := nd.Raft().LastIndex(); li <= nd.Applied() {
		t.Fatalf("setup: the log (last %d) should end past the FSM's applied index %d", li, nd.Applied())
	}
	want, wantSum, _ := nd.Hash()
	if err := nd.Close(); err != nil {
		t.Fatal(err)
	}
	nd = openSingle(t, dir, tr)
	defer nd.Close()
	got, sum, err := nd.Hash()
	if err != nil || got != want || sum != wantSum || nd.Restores() != 0 {
		t.Fatalf("after restart: index %d, %d restores, %v; want index %d, no restore", got, nd.Restores(), err, want)
	}
}
