package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bwkv/bwkv/cluster"
	"github.com/hashicorp/raft"
)

func mustPut(t *testing.T, c *testCluster, key, val string) uint64 {
	t.Helper()
	for try := 0; ; try++ {
		_, ld := c.waitLeader()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		idx, err := ld.Update(ctx, new(cluster.Batch).Put([]byte(key), []byte(val)))
		cancel()
		if err == nil {
			return idx
		}
		if try == 50 || cluster.Uncertain(err) && !errors.Is(err, raft.ErrLeadershipLost) {
			t.Fatalf("put %s: %v", key, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMembership removes a voter, writes without it, adds it back (it
// catches up), transfers leadership to a named node, and checks the
// errors of operations sent to a follower and to a closed node.
func TestMembership(t *testing.T) {
	c := newTestCluster(t, 3)
	li, ld := c.waitLeader()
	victim := (li + 1) % 3
	ctx := context.Background()
	if err := ld.RemoveServer(ctx, c.ids[victim]); err != nil {
		t.Fatal(err)
	}
	fut := ld.Raft().GetConfiguration()
	if err := fut.Error(); err != nil || len(fut.Configuration().Servers) != 2 {
		t.Fatalf("configuration after remove: %+v %v", fut.Configuration(), err)
	}
	c.kill(victim)
	for i := range 50 {
		mustPut(t, c, keyName(i), "v")
	}
	// Back in with its old directory: it is behind and catches up.
	c.restart(victim)
	_, ld = c.waitLeader()
	if err := ld.AddVoter(ctx, c.ids[victim], c.ids[victim]); err != nil {
		t.Fatal(err)
	}
	c.converge()

	// Leader transfer to a named follower.
	li, ld = c.waitLeader()
	target := (li + 1) % 3
	if err := ld.TransferLeadership(ctx, c.ids[target], c.ids[target]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second) // hang detector
	for !c.node(target).IsLeader() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not take over leadership", c.ids[target])
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A follower refuses writes and linearizable reads, naming the leader;
	// it serves stale reads.
	f := c.node((target + 1) % 3)
	for f.IsLeader() {
		time.Sleep(10 * time.Millisecond)
	}
	_, err := f.Update(ctx, new(cluster.Batch).Put([]byte("x"), []byte("y")))
	var nl *cluster.NotLeaderError
	if !errors.As(err, &nl) || cluster.Uncertain(err) {
		t.Fatalf("update on a follower: %v", err)
	}
	if _, _, err := f.Get(ctx, []byte(keyName(0))); !errors.Is(err, cluster.ErrNotLeader) {
		t.Fatalf("linearizable get on a follower: %v", err)
	}
	if v, _, err := f.StaleGet([]byte(keyName(0))); err != nil || string(v) != "v" {
		t.Fatalf("stale get on a caught-up follower: %q %v", v, err)
	}
	c.kill((target + 1) % 3)
	if _, err := f.Update(ctx, new(cluster.Batch).Put([]byte("x"), []byte("y"))); !errors.Is(err, cluster.ErrClosed) || cluster.Uncertain(err) {
		t.Fatalf("update on a closed node: %v", err)
	}
	if err := f.Close(); !errors.Is(err, cluster.ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
}

// TestUpdateSizeLimits: a batch the state machine or the log store would
// refuse is rejected by Update before it reaches the log (with certainty),
// and the cluster goes on.
func TestUpdateSizeLimits(t *testing.T) {
	c := newTestCluster(t, 3)
	_, ld := c.waitLeader()
	ctx := context.Background()
	big := make([]byte, 5<<20) // over the default 4 MiB MaxValueSize
	for name, b := range map[string]*cluster.Batch{
		"value":   new(cluster.Batch).Put([]byte("k"), big),
		"key":     new(cluster.Batch).Put(make([]byte, 4096), []byte("v")),
		"encoded": new(cluster.Batch).Put([]byte("a"), big[:3<<20]).Put([]byte("b"), big[:3<<20]),
	} {
		if _, err := ld.Update(ctx, b); !errors.Is(err, cluster.ErrBadBatch) || cluster.Uncertain(err) {
			t.Errorf("%s: %v", name, err)
		}
	}
	mustPut(t, c, "after", "ok")
	c.converge()
}
