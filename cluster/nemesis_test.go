package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/cluster"
)

var errNotFound = bwkv.ErrNotFound

// kvInput is one client operation on one key.
type kvInput struct {
	op       string // "put", "get", "cas"
	key      string
	val, old string // put/cas new value; cas expected value ("" = missing)
}

// kvOutput is what the client saw. unknown: the write's outcome is
// ambiguous (timeout, leadership lost, node closed): it may or may not
// have happened, and its return time is the end of the history.
type kvOutput struct {
	val     string // get: the value read ("" = missing)
	ok      bool   // cas: swapped
	unknown bool
}

// kvModel is a single register per key (histories are partitioned by key).
var kvModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(kvInput).key
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(string), input.(kvInput), output.(kvOutput)
		switch in.op {
		case "put":
			return true, in.val
		case "get":
			return out.val == s, s
		case "cas":
			swap := s == in.old
			if out.unknown {
				if swap {
					return true, in.val
				}
				return true, s
			}
			if swap != out.ok {
				return false, s
			}
			if swap {
				return true, in.val
			}
			return true, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvInput), output.(kvOutput)
		return fmt.Sprintf("%s(%s, old=%q new=%q) -> %+v", in.op, in.key, in.old, in.val, out)
	},
}

// history records client operations with times from one monotonic clock.
type history struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	// acked is the highest version (raft index) acknowledged per key: the
	// key's final version must be at least that (no acknowledged write
	// lost).
	acked map[string]uint64
}

func (h *history) now() int64 { return int64(time.Since(h.start)) }

func (h *history) add(client int, in kvInput, call int64, out kvOutput, ret int64) {
	if out.unknown {
		ret = math.MaxInt64
	}
	h.mu.Lock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	h.mu.Unlock()
}

func (h *history) ack(key string, idx uint64) {
	h.mu.Lock()
	h.acked[key] = max(h.acked[key], idx)
	h.mu.Unlock()
}

// runClient issues random put/get/cas operations against the current
// leader until ctx ends.
func runClient(ctx context.Context, c *testCluster, h *history, id, keys int, seed uint64, stats *clientStats) {
	rng := rand.New(rand.NewPCG(seed, uint64(id)))
	seen := map[string]string{}
	for n := 0; ctx.Err() == nil; n++ {
		ld := c.anyLeader(rng)
		if ld == nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		key := keyName(rng.IntN(keys))
		in := kvInput{key: key, val: fmt.Sprintf("c%d-%d", id, n)}
		octx, cancel := context.WithTimeout(ctx, time.Second)
		call := h.now()
		switch r := rng.IntN(10); {
		case r < 4:
			in.op = "put"
			idx, err := ld.Update(octx, new(cluster.Batch).Put([]byte(key), []byte(in.val)))
			if err == nil {
				h.ack(key, idx)
				stats.ok.Add(1)
			}
			if err == nil || cluster.Uncertain(err) {
				h.add(id, in, call, kvOutput{unknown: err != nil}, h.now())
			} else {
				stats.failed.Add(1) // certainly not applied: no effect
			}
		case r < 7:
			in.op, in.val = "get", ""
			v, _, err := ld.Get(octx, []byte(key))
			if errors.Is(err, errNotFound) {
				err = nil
			}
			if err == nil {
				seen[key] = string(v)
				stats.ok.Add(1)
				h.add(id, in, call, kvOutput{val: string(v)}, h.now())
			} else {
				stats.failed.Add(1) // a read that failed has no effect
			}
		default:
			in.op, in.old = "cas", seen[key]
			var old []byte
			if in.old != "" {
				old = []byte(in.old)
			}
			idx, err := ld.Update(octx, new(cluster.Batch).CompareAndSwap([]byte(key), old, []byte(in.val)))
			switch {
			case err == nil:
				h.ack(key, idx)
				seen[key] = in.val
				stats.ok.Add(1)
				h.add(id, in, call, kvOutput{ok: true}, h.now())
			case errors.Is(err, cluster.ErrConditionFailed):
				stats.ok.Add(1)
				h.add(id, in, call, kvOutput{ok: false}, h.now())
			case cluster.Uncertain(err):
				h.add(id, in, call, kvOutput{unknown: true}, h.now())
			default:
				stats.failed.Add(1)
			}
		}
		cancel()
	}
}

type clientStats struct{ ok, failed atomic.Int64 }

// monitorApplied fails the test if any node's applied index goes
// backwards, across restarts too (Close syncs the state machine).
func monitorApplied(ctx context.Context, t *testing.T, c *testCluster, done chan<- struct{}) {
	defer close(done)
	high := make([]uint64, len(c.ids))
	for ctx.Err() == nil {
		for i := range c.ids {
			if nd := c.node(i); nd != nil {
				a := nd.Applied()
				if a < high[i] {
					t.Errorf("applied index of %s went back from %d to %d", c.ids[i], high[i], a)
					return
				}
				high[i] = a
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// forceSnapshotInstall cuts node i off, lets the others write and compact
// their logs past it, heals, and waits until the leader has sent it a
// snapshot (its Restores count grows). Timeouts are hang detectors.
func forceSnapshotInstall(t *testing.T, c *testCluster, i int) {
	nd := c.node(i)
	if nd == nil {
		return
	}
	before := nd.Restores()
	c.isolate(i, true)
	defer c.isolate(i, false)
	lagging := nd.Applied()
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, ld := c.leader()
		if ld != nil && ld.Applied() > lagging+200 {
			if err := ld.Snapshot(); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot past %s's index %d within 20 s", c.ids[i], lagging)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.isolate(i, false)
	for nd.Restores() == before {
		if time.Now().After(deadline) {
			t.Fatalf("%s installed no snapshot within 20 s", c.ids[i])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNemesis runs clients against 3- and 5-node clusters while a nemesis
// kills and restarts nodes (the leader too), isolates and heals them,
// transfers leadership and forces a snapshot install on a lagging node;
// then it checks the history for linearizability per key (porcupine),
// equal state hashes at equal applied indexes, monotonic applied indexes
// and that no acknowledged write was lost. BWKV_CLUSTER_SECONDS sets the
// run length per cluster size (default 20 s, 4 s under -short);
// BWKV_CLUSTER_SEED replays a seed.
func TestNemesis(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) { testNemesis(t, n) })
	}
}

func testNemesis(t *testing.T, n int) {
	secs := 20
	if testing.Short() {
		secs = 4
	}
	secs = envInt("BWKV_CLUSTER_SECONDS", secs)
	seed := uint64(envInt("BWKV_CLUSTER_SEED", int(time.Now().UnixNano()%1e9)))
	t.Logf("seed %d (BWKV_CLUSTER_SEED), %d s", seed, secs)
	rng := rand.New(rand.NewPCG(seed, 0))
	c := newTestCluster(t, n)
	c.waitLeader()

	h := &history{start: time.Now(), acked: map[string]uint64{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var stats clientStats
	const clients, keys = 4, 5
	for id := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runClient(ctx, c, h, id, keys, seed, &stats)
		}()
	}
	monCtx, stopMon := context.WithCancel(context.Background())
	monDone := make(chan struct{})
	go monitorApplied(monCtx, t, c, monDone)

	// The lagging-node snapshot install runs once for sure, early.
	forceSnapshotInstall(t, c, rng.IntN(n))
	maxFaults := (n - 1) / 2
	end := time.Now().Add(time.Duration(secs) * time.Second)
	var actions []string
	for time.Now().Before(end) && !t.Failed() {
		time.Sleep(time.Duration(150+rng.IntN(300)) * time.Millisecond)
		c.checkHashes()
		i := rng.IntN(n)
		if rng.IntN(3) == 0 { // aim at the leader a third of the time
			if li, _ := c.leader(); li >= 0 {
				i = li
			}
		}
		switch a := rng.IntN(6); {
		case a == 0 && c.faults() < maxFaults && c.node(i) != nil:
			actions = append(actions, "kill "+c.ids[i])
			c.kill(i)
		case a == 1:
			for j := range n {
				if c.node(j) == nil {
					actions = append(actions, "restart "+c.ids[j])
					c.restart(j)
					break
				}
			}
		case a == 2 && c.faults() < maxFaults:
			actions = append(actions, "isolate "+c.ids[i])
			c.isolate(i, true)
		case a == 3:
			actions = append(actions, "heal")
			for j := range n {
				c.isolate(j, false)
			}
		case a == 4 && c.faults() < maxFaults:
			actions = append(actions, "snapshot-install "+c.ids[i])
			forceSnapshotInstall(t, c, i)
		case a == 5:
			if _, ld := c.leader(); ld != nil {
				actions = append(actions, "transfer")
				tctx, tcancel := context.WithTimeout(context.Background(), 2*time.Second)
				_ = ld.TransferLeadership(tctx, "", "") // may fail mid-fault; that is fine
				tcancel()
			}
		}
	}
	cancel()
	wg.Wait()
	applied := c.converge()
	stopMon()
	<-monDone

	// Final linearizable reads join the history; each key's version must
	// cover every acknowledged write.
	_, ld := c.waitLeader()
	for k := range keys {
		key := keyName(k)
		call := h.now()
		v, ver, err := ld.Get(context.Background(), []byte(key))
		if err != nil && !errors.Is(err, errNotFound) {
			t.Fatalf("final get %s: %v", key, err)
		}
		h.add(0, kvInput{op: "get", key: key}, call, kvOutput{val: string(v)}, h.now())
		if ver < h.acked[key] {
			t.Errorf("key %s: version %d, but a write at %d was acknowledged (lost write)", key, ver, h.acked[key])
		}
	}
	var unknown int
	for _, op := range h.ops {
		if op.Output.(kvOutput).unknown {
			unknown++
		}
	}
	t.Logf("%d ops ok, %d failed (no effect), %d ambiguous writes; applied index %d; nemesis: %v",
		stats.ok.Load(), stats.failed.Load(), unknown, applied, actions)
	if stats.ok.Load() < 50 {
		t.Errorf("only %d operations succeeded: the cluster made too little progress to test anything", stats.ok.Load())
	}
	res, info := porcupine.CheckOperationsVerbose(kvModel, h.ops, 60*time.Second)
	switch res {
	case porcupine.Illegal:
		path := t.TempDir() + "/history.html"
		if err := porcupine.VisualizePath(kvModel, info, path); err == nil {
			t.Logf("visualization: %s", path)
		}
		t.Fatalf("history of %d operations is not linearizable (seed %d)", len(h.ops), seed)
	case porcupine.Unknown:
		t.Logf("linearizability check timed out (inconclusive)")
	}
}

func isNotFound(err error) bool { return errors.Is(err, errNotFound) }
