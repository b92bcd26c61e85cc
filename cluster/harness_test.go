package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bwkv/bwkv/cluster"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// testCluster runs n in-process nodes over raft's in-memory transport. A
// killed node is closed (its directory stays) and disconnected; restart
// opens it again on the same directory and transport. Partitions cut the
// in-memory routes in both directions.
type testCluster struct {
	t     testing.TB
	root  string
	ids   []string
	trans []*raft.InmemTransport

	mu       sync.Mutex
	nodes    []*cluster.Node // nil while killed; under mu
	isolated []bool          // under mu
}

func fastRaft() *raft.Config {
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout = 100 * time.Millisecond
	rc.ElectionTimeout = 100 * time.Millisecond
	rc.LeaderLeaseTimeout = 50 * time.Millisecond
	rc.CommitTimeout = 5 * time.Millisecond
	rc.SnapshotThreshold = 512
	rc.SnapshotInterval = 500 * time.Millisecond
	rc.TrailingLogs = 64
	return rc
}

func newTestCluster(t testing.TB, n int) *testCluster {
	t.Helper()
	c := &testCluster{t: t, root: t.TempDir(), nodes: make([]*cluster.Node, n), isolated: make([]bool, n)}
	var servers []raft.Server
	for i := range n {
		id := "n" + strconv.Itoa(i)
		c.ids = append(c.ids, id)
		_, tr := raft.NewInmemTransportWithTimeout(raft.ServerAddress(id), 500*time.Millisecond)
		c.trans = append(c.trans, tr)
		servers = append(servers, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(id)})
	}
	for i := range n {
		for j := range n {
			if i != j {
				c.trans[i].Connect(raft.ServerAddress(c.ids[j]), c.trans[j])
			}
		}
	}
	for i := range n {
		c.nodes[i] = c.open(i, servers)
	}
	t.Cleanup(c.close)
	return c
}

func (c *testCluster) open(i int, bootstrap []raft.Server) *cluster.Node {
	c.t.Helper()
	nd, err := cluster.Open(cluster.Config{
		ID:        c.ids[i],
		Dir:       filepath.Join(c.root, c.ids[i]),
		Transport: c.trans[i],
		Bootstrap: bootstrap,
		Raft:      fastRaft(),
		Logger:    hclog.NewNullLogger(),
	})
	if err != nil {
		c.t.Fatalf("open %s: %v", c.ids[i], err)
	}
	return nd
}

func (c *testCluster) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, nd := range c.nodes {
		if nd != nil {
			if err := nd.Close(); err != nil {
				c.t.Errorf("close %s: %v", c.ids[i], err)
			}
			c.nodes[i] = nil
		}
	}
}

// route connects or cuts i<->j.
func (c *testCluster) route(i, j int, up bool) {
	if up {
		c.trans[i].Connect(raft.ServerAddress(c.ids[j]), c.trans[j])
		c.trans[j].Connect(raft.ServerAddress(c.ids[i]), c.trans[i])
	} else {
		c.trans[i].Disconnect(raft.ServerAddress(c.ids[j]))
		c.trans[j].Disconnect(raft.ServerAddress(c.ids[i]))
	}
}

// setRoutes makes the routes match who is alive and not isolated; under mu.
func (c *testCluster) setRoutesLocked() {
	for i := range c.ids {
		for j := i + 1; j < len(c.ids); j++ {
			up := c.nodes[i] != nil && c.nodes[j] != nil && !c.isolated[i] && !c.isolated[j]
			c.route(i, j, up)
		}
	}
}

func (c *testCluster) kill(i int) {
	c.mu.Lock()
	nd := c.nodes[i]
	c.nodes[i] = nil
	c.setRoutesLocked()
	c.mu.Unlock()
	if nd != nil {
		if err := nd.Close(); err != nil {
			c.t.Errorf("kill %s: %v", c.ids[i], err)
		}
	}
}

func (c *testCluster) restart(i int) {
	nd := c.open(i, nil)
	c.mu.Lock()
	c.nodes[i] = nd
	c.setRoutesLocked()
	c.mu.Unlock()
}

func (c *testCluster) isolate(i int, cut bool) {
	c.mu.Lock()
	c.isolated[i] = cut
	c.setRoutesLocked()
	c.mu.Unlock()
}

// faults counts nodes that are killed or isolated.
func (c *testCluster) faults() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for i := range c.ids {
		if c.nodes[i] == nil || c.isolated[i] {
			n++
		}
	}
	return n
}

func (c *testCluster) node(i int) *cluster.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// leader returns a live, connected node that believes it leads, or -1.
func (c *testCluster) leader() (int, *cluster.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, nd := range c.nodes {
		if nd != nil && !c.isolated[i] && nd.IsLeader() {
			return i, nd
		}
	}
	return -1, nil
}

// anyLeader returns a random live node that believes it leads, isolated
// or not: a client may well reach a deposed leader cut off from the rest,
// and must not get a stale answer from it.
func (c *testCluster) anyLeader(rng *rand.Rand) *cluster.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ls []*cluster.Node
	for _, nd := range c.nodes {
		if nd != nil && nd.IsLeader() {
			ls = append(ls, nd)
		}
	}
	if len(ls) == 0 {
		return nil
	}
	return ls[rng.IntN(len(ls))]
}

// waitLeader waits for a leader; the timeout is only a hang detector.
func (c *testCluster) waitLeader() (int, *cluster.Node) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if i, nd := c.leader(); nd != nil {
			return i, nd
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatal("no leader within 20 s")
	return -1, nil
}

// converge heals everything, restarts killed nodes, and waits until every
// node has applied what the leader has; then every node's state hash must
// be equal. The timeout is a hang detector.
func (c *testCluster) converge() (applied uint64) {
	c.t.Helper()
	for i := range c.ids {
		if c.node(i) == nil {
			c.restart(i)
		}
		c.isolate(i, false)
	}
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		_, ld := c.waitLeader()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _, err := ld.Get(ctx, []byte("converge")) // a read index: the leader has applied all committed entries
		cancel()
		if err != nil && !errors.Is(err, errNotFound) {
			last = fmt.Sprintf("read index: %v", err)
			time.Sleep(20 * time.Millisecond)
			continue
		}
		target := ld.Applied()
		ok := true
		last = fmt.Sprintf("leader applied %d; nodes", target)
		for i := range c.ids {
			a := c.node(i).Applied()
			last += fmt.Sprintf(" %s:%d", c.ids[i], a)
			if a < target {
				ok = false
			}
		}
		if !ok {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		var want [32]byte
		for i := range c.ids {
			idx, sum, err := c.node(i).Hash()
			if err != nil {
				c.t.Fatal(err)
			}
			if idx != target {
				ok = false // something applied meanwhile (a config entry does not count; retry)
				break
			}
			if i == 0 {
				want = sum
			} else if sum != want {
				c.t.Fatalf("state hash of %s at index %d differs from %s's", c.ids[i], idx, c.ids[0])
			}
		}
		if ok {
			return target
		}
	}
	c.t.Fatalf("cluster did not converge within 30 s: %s", last)
	return 0
}

// checkHashes compares the state hash of every live node pair that is at
// the same applied index (each hash is read with its index from one
// consistent bwkv snapshot).
func (c *testCluster) checkHashes() {
	c.t.Helper()
	byIndex := map[uint64]int{}
	sums := map[uint64][32]byte{}
	for i := range c.ids {
		nd := c.node(i)
		if nd == nil {
			continue
		}
		idx, sum, err := nd.Hash()
		if errors.Is(err, cluster.ErrClosed) {
			continue
		}
		if err != nil {
			c.t.Fatalf("hash %s: %v", c.ids[i], err)
		}
		if j, ok := byIndex[idx]; ok && sums[idx] != sum {
			c.t.Fatalf("state hashes of %s and %s differ at applied index %d", c.ids[i], c.ids[j], idx)
		}
		byIndex[idx], sums[idx] = i, sum
	}
}

// envInt reads a positive integer from the environment, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func keyName(i int) string { return fmt.Sprintf("k%d", i) }
