package cluster_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwkv/bwkv/cluster"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// BenchmarkReplicatedWrites measures replicated single-key puts (16-byte
// keys, 128-byte values) on 3 in-process nodes over raft's in-memory
// transport, with the bwkv log store or raft-boltdb as the raft log and
// stable store; the state machine is the same bwkv FSM in both. It reports
// writes/s and the p99 latency of one Update as seen by a client.
func BenchmarkReplicatedWrites(b *testing.B) {
	for _, store := range []string{"bwkv", "boltdb"} {
		for _, clients := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("store=%s/clients=%d", store, clients), func(b *testing.B) {
				benchWrites(b, store, clients)
			})
		}
	}
}

func benchCluster(b *testing.B, store string) []*cluster.Node {
	root := b.TempDir()
	const n = 3
	var trans []*raft.InmemTransport
	var servers []raft.Server
	for i := range n {
		id := "n" + strconv.Itoa(i)
		_, tr := raft.NewInmemTransport(raft.ServerAddress(id))
		trans = append(trans, tr)
		servers = append(servers, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(id)})
	}
	for i := range n {
		for j := range n {
			if i != j {
				trans[i].Connect(raft.ServerAddress("n"+strconv.Itoa(j)), trans[j])
			}
		}
	}
	var nodes []*cluster.Node
	for i := range n {
		id := "n" + strconv.Itoa(i)
		cfg := cluster.Config{
			ID: id, Dir: filepath.Join(root, id), Transport: trans[i], Bootstrap: servers,
			Raft: raft.DefaultConfig(), Logger: hclog.NewNullLogger(),
		}
		// Default timeouts (1 s heartbeat): the fast ones of the nemesis
		// test cause elections on a loaded 2-core machine, which would
		// measure elections, not the stores.
		cfg.Raft.SnapshotThreshold = 8192
		cfg.Raft.SnapshotInterval = 5 * time.Second
		cfg.Raft.TrailingLogs = 10240
		if store == "boltdb" {
			bs, err := raftboltdb.NewBoltStore(filepath.Join(root, id+".bolt"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { bs.Close() })
			cfg.LogStore, cfg.StableStore = bs, bs
		}
		nd, err := cluster.Open(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { nd.Close() })
		nodes = append(nodes, nd)
	}
	return nodes
}

func benchWrites(b *testing.B, store string, clients int) {
	nodes := benchCluster(b, store)
	var ld *cluster.Node
	for ld == nil {
		for _, nd := range nodes {
			if nd.IsLeader() {
				ld = nd
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	val := make([]byte, 128)
	var next atomic.Int64
	lats := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := make([]byte, 0, 16)
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				key = fmt.Appendf(key[:0], "key%013d", i%100000)
				t0 := time.Now()
				if _, err := ld.Update(context.Background(), new(cluster.Batch).Put(key, val)); err != nil {
					b.Error(err)
					return
				}
				lats[c] = append(lats[c], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lats...)
	slices.Sort(all)
	if len(all) > 0 {
		b.ReportMetric(float64(len(all))/el.Seconds(), "writes/s")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-us")
	}
}
