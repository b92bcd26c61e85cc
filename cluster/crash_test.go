package cluster_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bwkv/bwkv/cluster"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// The crash test runs two nodes in this process and a third in a child
// process (this test binary re-executed), all over TCP on loopback. The
// child is killed with SIGKILL while it applies a stream of writes, then
// restarted; at the end it must catch up and report the leader's state
// hash at the leader's applied index.

const crashChildEnv = "BWKV_CLUSTER_CRASH_CHILD" // dir|addr0,addr1,addr2|target index (0: run until killed)

func freeAddrs(t *testing.T, n int) []string {
	var addrs []string
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		addrs = append(addrs, l.Addr().String())
	}
	for _, l := range ls {
		l.Close()
	}
	return addrs
}

func crashServers(addrs []string) []raft.Server {
	var s []raft.Server
	for i, a := range addrs {
		s = append(s, raft.Server{ID: raft.ServerID("n" + strconv.Itoa(i)), Address: raft.ServerAddress(a)})
	}
	return s
}

func crashRaft(slow bool) *raft.Config {
	rc := fastRaft()
	rc.SnapshotThreshold = 300
	rc.SnapshotInterval = 200 * time.Millisecond
	if slow { // the child should rarely win an election: the writes go through the parent's nodes
		rc.HeartbeatTimeout = time.Second
		rc.ElectionTimeout = time.Second
	}
	return rc
}

// TestCrashChild is the child's body; it does nothing unless run by
// TestCrashKill9.
func TestCrashChild(t *testing.T) {
	spec := os.Getenv(crashChildEnv)
	if spec == "" {
		t.Skip("child process of TestCrashKill9 only")
	}
	parts := strings.Split(spec, "|")
	addrs := strings.Split(parts[1], ",")
	target, _ := strconv.ParseUint(parts[2], 10, 64)
	nd, err := cluster.Open(cluster.Config{
		ID: "n2", Dir: parts[0], BindAddr: addrs[2],
		Bootstrap: crashServers(addrs), Raft: crashRaft(true), Logger: hclog.NewNullLogger(),
	})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	fmt.Println("STARTED", nd.Applied())
	if target == 0 {
		select {} // applies until killed
	}
	deadline := time.Now().Add(30 * time.Second) // hang detector
	for nd.Applied() < target && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	idx, sum, err := nd.Hash()
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	fmt.Printf("HASH %d %s\n", idx, hex.EncodeToString(sum[:]))
	if err := nd.Close(); err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
}

func startChild(t *testing.T, dir string, addrs []string, target uint64) (*exec.Cmd, *bufio.Scanner) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%d", crashChildEnv, dir, strings.Join(addrs, ","), target))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "ERROR") {
			t.Fatalf("child: %s", line)
		}
		if strings.HasPrefix(line, "STARTED") {
			t.Logf("child %s (durable applied index at start)", line)
			return cmd, sc
		}
	}
	t.Fatalf("child exited before starting: %v", cmd.Wait())
	return nil, nil
}

// TestCrashKill9 kills the child node with SIGKILL mid-apply several
// times; after each restart it replays from its durable applied index
// (relaxed state machine, durable raft log) and must end with the
// leader's state hash. BWKV_CLUSTER_CRASH_ROUNDS sets the rounds (default
// 3, 2 under -short).
func TestCrashKill9(t *testing.T) {
	rounds := 3
	if testing.Short() {
		rounds = 2
	}
	rounds = envInt("BWKV_CLUSTER_CRASH_ROUNDS", rounds)
	root := t.TempDir()
	addrs := freeAddrs(t, 3)
	var nodes []*cluster.Node
	for i := range 2 {
		nd, err := cluster.Open(cluster.Config{
			ID: "n" + strconv.Itoa(i), Dir: filepath.Join(root, strconv.Itoa(i)), BindAddr: addrs[i],
			Bootstrap: crashServers(addrs), Raft: crashRaft(false), Logger: hclog.NewNullLogger(),
		})
		if err != nil {
			t.Fatal(err)
		}
		defer nd.Close()
		nodes = append(nodes, nd)
	}
	childDir := filepath.Join(root, "2")
	leader := func() *cluster.Node {
		deadline := time.Now().Add(20 * time.Second) // hang detector
		for time.Now().Before(deadline) {
			for _, nd := range nodes {
				if nd.IsLeader() {
					return nd
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("no leader among the parent's nodes within 20 s")
		return nil
	}
	var written int
	write := func(d time.Duration) {
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			b := new(cluster.Batch)
			for j := range 8 {
				k := fmt.Appendf(nil, "key%05d", (written*8+j)%5000)
				b.Put(k, fmt.Appendf(nil, "value-%d-%d", written, j))
			}
			if written%7 == 0 {
				b.Delete(fmt.Appendf(nil, "key%05d", (written*13)%5000))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := leader().Update(ctx, b)
			cancel()
			if err == nil {
				written++
			}
		}
	}
	write(300 * time.Millisecond)
	for r := range rounds {
		cmd, _ := startChild(t, childDir, addrs, 0)
		done := make(chan struct{})
		go func() {
			write(time.Duration(600+r*200) * time.Millisecond)
			close(done)
		}()
		time.Sleep(time.Duration(300+r*150) * time.Millisecond) // mid-stream
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		<-done
	}
	write(300 * time.Millisecond)
	var ld *cluster.Node
	for try := 0; ; try++ { // a read index: the leader has applied everything committed
		ld = leader()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _, err := ld.Get(ctx, []byte("key00000"))
		cancel()
		if err == nil || errors.Is(err, errNotFound) {
			break
		}
		if try == 20 {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	want, wantSum, err := ld.Hash()
	if err != nil {
		t.Fatal(err)
	}
	cmd, sc := startChild(t, childDir, addrs, want)
	var got string
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "HASH") || strings.HasPrefix(line, "ERROR") {
			got = line
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v (%s)", err, got)
	}
	if exp := fmt.Sprintf("HASH %d %s", want, hex.EncodeToString(wantSum[:])); got != exp {
		t.Fatalf("restarted child reports %q, leader %q", got, exp)
	}
	t.Logf("%d rounds of kill -9, %d batches written, child caught up at index %d", rounds, written, want)
}
