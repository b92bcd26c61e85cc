package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Config configures a Node. Zero values take the defaults named below.
type Config struct {
	// ID is this node's raft server ID, unique in the cluster (required).
	ID string
	// Dir holds the node's state: raft/ (log and stable store), fsm/ (the
	// state machine) and snapshots/ (raft's snapshot store). Required.
	Dir string

	// BindAddr is the TCP address raft listens on (host:port); the node
	// owns and closes that transport. Exactly one of BindAddr and
	// Transport must be set.
	BindAddr string
	// AdvertiseAddr is the address peers dial (default: BindAddr, which
	// must then not be an unspecified address such as 0.0.0.0).
	AdvertiseAddr string
	// Transport is a transport the caller owns (raft's in-memory transport
	// in tests, or a custom one); Close does not close it.
	Transport raft.Transport

	// Bootstrap, when not empty and the node has no raft state yet, makes
	// it bootstrap a cluster of exactly these servers (include this node).
	// Every initial member may be given the same list; members added later
	// leave it empty and are added with AddVoter on the leader.
	Bootstrap []raft.Server

	// Raft tunes the raft library (timeouts, snapshot threshold, trailing
	// logs); nil means raft.DefaultConfig(). Open overrides LocalID and
	// sets NoSnapshotRestoreOnStart, because the state machine is durable
	// on its own and restarts from its database, not from a snapshot.
	Raft *raft.Config

	// LogOptions opens the bwkv database of the log and stable store (nil:
	// bwkv defaults; DurabilityRelaxed is rejected).
	LogOptions *bwkv.Options
	// FSMOptions opens the state machine's database (nil: bwkv defaults
	// with DurabilityRelaxed, safe because raft's log is durable; see FSM).
	FSMOptions *bwkv.Options
	// LogStore and StableStore replace the bwkv Store (for instance
	// raft-boltdb, to compare); set both or neither, and then leave
	// LogOptions nil. The node does not close them.
	LogStore    raft.LogStore
	StableStore raft.StableStore

	// SnapshotRetain is how many snapshots raft keeps on disk (default 2).
	SnapshotRetain int
	// Logger receives raft's log (nil: errors only, to stderr).
	Logger hclog.Logger
}

// Validate reports every problem of the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	if c.ID == "" {
		errs = append(errs, errors.New("missing ID"))
	}
	if c.Dir == "" {
		errs = append(errs, errors.New("missing Dir"))
	}
	if (c.BindAddr == "") == (c.Transport == nil) {
		errs = append(errs, errors.New("exactly one of BindAddr and Transport must be set"))
	}
	if c.AdvertiseAddr != "" && c.BindAddr == "" {
		errs = append(errs, errors.New("an AdvertiseAddr needs a BindAddr"))
	}
	if (c.LogStore == nil) != (c.StableStore == nil) {
		errs = append(errs, errors.New("set both LogStore and StableStore or neither"))
	}
	if c.LogStore != nil && c.LogOptions != nil {
		errs = append(errs, errors.New("a caller's LogStore leaves LogOptions without effect"))
	}
	if c.LogOptions != nil && c.LogOptions.Durability != bwkv.DurabilitySync {
		errs = append(errs, errors.New("the log store needs LogOptions.Durability = DurabilitySync"))
	}
	if c.FSMOptions != nil && c.FSMOptions.FS != nil {
		errs = append(errs, errors.New("unsupported FSMOptions.FS (snapshot install swaps OS directories)"))
	}
	if c.SnapshotRetain < 0 {
		errs = append(errs, errors.New("negative SnapshotRetain"))
	}
	if c.Raft != nil {
		rc := *c.Raft
		rc.LocalID = raft.ServerID(c.ID)
		if err := raft.ValidateConfig(&rc); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cluster: invalid config: %w", errors.Join(errs...))
	}
	return nil
}

// Node is one member of a replicated bwkv cluster: a hashicorp/raft
// instance whose log and stable store and whose state machine are bwkv
// databases. All methods are safe for concurrent use.
type Node struct {
	cfg   Config
	raft  *raft.Raft
	fsm   *FSM
	store *Store // nil when the caller supplied the log store
	logs  raft.LogStore
	trans raft.Transport
	tcp   *raft.NetworkTransport // owned transport, nil otherwise

	// barrierTerm is the last term in which this node, as leader, saw a
	// barrier of its own term applied: from then on its commit index
	// covers every entry committed before its term (read index).
	barrierTerm atomic.Uint64
	closed      atomic.Bool
}

// Open starts a node: it opens the stores, brings the state machine up to
// raft's newest snapshot if a crash interrupted a snapshot install, and
// starts raft (bootstrapping a new cluster if cfg.Bootstrap says so).
func Open(cfg Config) (n *Node, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n = &Node{cfg: cfg}
	var cleanup []func()
	defer func() {
		if err != nil {
			for i := len(cleanup) - 1; i >= 0; i-- {
				cleanup[i]()
			}
		}
	}()
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Error, Output: os.Stderr})
	}
	fo := cfg.FSMOptions
	if fo == nil {
		fo = &bwkv.Options{Durability: bwkv.DurabilityRelaxed}
	}
	if n.fsm, err = OpenFSM(filepath.Join(cfg.Dir, "fsm"), fo); err != nil {
		return nil, err
	}
	cleanup = append(cleanup, func() { _ = n.fsm.Close() })
	logs, stable := cfg.LogStore, cfg.StableStore
	if logs == nil {
		if n.store, err = OpenStore(filepath.Join(cfg.Dir, "raft"), cfg.LogOptions); err != nil {
			return nil, err
		}
		cleanup = append(cleanup, func() { _ = n.store.Close() })
		logs, stable = n.store, n.store
	}
	n.logs = logs
	retain := cfg.SnapshotRetain
	if retain == 0 {
		retain = 2
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, retain, logger)
	if err != nil {
		return nil, fmt.Errorf("cluster: open snapshot store: %w", err)
	}
	if err := n.catchUpSnapshot(snaps, logs); err != nil {
		return nil, err
	}
	n.trans = cfg.Transport
	if n.trans == nil {
		adv := cfg.AdvertiseAddr
		if adv == "" {
			adv = cfg.BindAddr
		}
		addr, err := net.ResolveTCPAddr("tcp", adv)
		if err != nil {
			return nil, fmt.Errorf("cluster: advertise address %q: %w", adv, err)
		}
		n.tcp, err = raft.NewTCPTransportWithLogger(cfg.BindAddr, addr, 3, 10*time.Second, logger)
		if err != nil {
			return nil, fmt.Errorf("cluster: listen %s: %w", cfg.BindAddr, err)
		}
		cleanup = append(cleanup, func() { _ = n.tcp.Close() })
		n.trans = n.tcp
	}
	rc := raft.DefaultConfig()
	if cfg.Raft != nil {
		c := *cfg.Raft
		rc = &c
	}
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.NoSnapshotRestoreOnStart = true
	rc.Logger = logger
	if len(cfg.Bootstrap) > 0 {
		has, err := raft.HasExistingState(logs, stable, snaps)
		if err != nil {
			return nil, fmt.Errorf("cluster: read raft state: %w", err)
		}
		if !has {
			conf := raft.Configuration{Servers: cfg.Bootstrap}
			if err := raft.BootstrapCluster(rc, logs, stable, snaps, n.trans, conf); err != nil {
				return nil, fmt.Errorf("cluster: bootstrap: %w", err)
			}
		}
	}
	if n.raft, err = raft.NewRaft(rc, n.fsm, logs, stable, snaps, n.trans); err != nil {
		return nil, fmt.Errorf("cluster: start raft: %w", err)
	}
	return n, nil
}

// catchUpSnapshot restores raft's newest snapshot into the state machine
// when the snapshot is ahead of it. That happens only when a crash hit
// between raft saving an installed snapshot and the FSM swapping it in:
// raft restarts from the snapshot's index (and may have dropped the log
// before it), so the FSM must hold at least that state.
//
// A snapshot's index may be ahead of the FSM's applied index without any
// state missing: raft's index counts no-op, barrier and configuration
// entries, which never reach the FSM. If the log still holds every entry
// between the two and none is a command, the FSM is current and the
// (possibly large) restore is skipped; the walk stops at the first entry
// that is a command or no longer in the log.
func (n *Node) catchUpSnapshot(snaps raft.SnapshotStore, logs raft.LogStore) error {
	list, err := snaps.List()
	if err != nil {
		return fmt.Errorf("cluster: list snapshots: %w", err)
	}
	if len(list) == 0 || list[0].Index <= n.fsm.Applied() {
		return nil
	}
	behind := false
	var l raft.Log
	for i := list[0].Index; i > n.fsm.Applied(); i-- {
		if err := logs.GetLog(i, &l); err != nil || l.Type == raft.LogCommand {
			behind = true
			break
		}
	}
	if !behind {
		return nil
	}
	_, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		return fmt.Errorf("cluster: open snapshot %s: %w", list[0].ID, err)
	}
	return n.fsm.Restore(rc)
}

// NotLeaderError is returned (matching ErrNotLeader) by operations that
// need the leader; Leader and LeaderID name the leader this node knows of
// (empty when there is none, during an election).
type NotLeaderError struct {
	Leader   raft.ServerAddress
	LeaderID raft.ServerID
}

func (e *NotLeaderError) Error() string {
	if e.Leader == "" {
		return "cluster: not the leader (no leader known)"
	}
	return fmt.Sprintf("cluster: not the leader (leader %s at %s)", e.LeaderID, e.Leader)
}

// Unwrap makes errors.Is(err, ErrNotLeader) hold.
func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

func (n *Node) notLeader() error {
	addr, id := n.raft.LeaderWithID()
	return &NotLeaderError{Leader: addr, LeaderID: id}
}

// wait waits for a raft future, or for ctx. When ctx ends first the
// operation goes on in raft: an Update may still apply.
func (n *Node) wait(ctx context.Context, f raft.Future, what string) error {
	var err error
	if ctx.Done() == nil {
		err = f.Error()
	} else {
		done := make(chan error, 1)
		go func() { done <- f.Error() }()
		select {
		case err = <-done:
		case <-ctx.Done():
			return fmt.Errorf("cluster: %s: %w", what, ctx.Err())
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader):
		return fmt.Errorf("cluster: %s: %w", what, n.notLeader())
	case errors.Is(err, raft.ErrRaftShutdown):
		// Both sentinels: the node is closed, and Uncertain must see that
		// raft stopped with the operation possibly in its log.
		return fmt.Errorf("cluster: %s: %w (%w)", what, ErrClosed, err)
	}
	return fmt.Errorf("cluster: %s: %w", what, err)
}

func timeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return 0
}

// Uncertain reports whether an error from Update leaves the outcome
// unknown: the batch may have been applied, or may still be. It is false
// for nil, for a failed condition and for errors raised before the batch
// entered the leader's log (not the leader, a leadership transfer in
// progress, a full apply queue, a bad batch, a node closed before the
// call); those applied nothing.
func Uncertain(err error) bool {
	switch {
	case errors.Is(err, raft.ErrRaftShutdown):
		return true
	case err == nil,
		errors.Is(err, ErrClosed), // returned before anything was sent
		errors.Is(err, ErrConditionFailed),
		errors.Is(err, ErrNotLeader),
		errors.Is(err, ErrBadBatch),
		errors.Is(err, raft.ErrLeadershipTransferInProgress),
		errors.Is(err, raft.ErrEnqueueTimeout):
		return false
	}
	return true
}

// Update replicates b and applies it on every node; it returns the raft
// index the batch was applied at (the version of every key it wrote).
// Only the leader accepts writes (*NotLeaderError otherwise). A failed
// condition returns a *ConditionError and applies nothing. Uncertain
// tells the errors that leave the outcome unknown (ctx ended, leadership
// lost, the node closed): the batch may still be applied.
func (n *Node) Update(ctx context.Context, b *Batch) (uint64, error) {
	if n.closed.Load() {
		return 0, fmt.Errorf("cluster: update: %w", ErrClosed) // nothing sent: certain
	}
	data, err := b.encode(nil)
	if err != nil {
		return 0, err
	}
	if err := n.checkSizes(b, len(data)); err != nil {
		return 0, err
	}
	f := n.raft.Apply(data, timeout(ctx))
	if err := n.wait(ctx, f, "update"); err != nil {
		return 0, err
	}
	res, ok := f.Response().(Result)
	if !ok {
		return 0, fmt.Errorf("cluster: update: unexpected apply response %T", f.Response())
	}
	return res.Index, res.Err
}

// logEntryOverhead bounds what the log store adds to a batch's bytes
// (codec version, type, flags, term, time, lengths).
const logEntryOverhead = 64

// checkSizes rejects a batch whose keys or values the state machine's
// database would refuse, or whose encoding exceeds the log store's value
// limit, before it reaches the log: once in the log, every node must
// apply it, and a leader that cannot store an entry steps down.
func (n *Node) checkSizes(b *Batch, encoded int) error {
	maxKey, maxValue := n.fsm.limits()
	for i, op := range b.Ops {
		if len(op.Key) > maxKey {
			return fmt.Errorf("%w: op %d: key of %d bytes (limit %d)", ErrBadBatch, i, len(op.Key), maxKey)
		}
		if op.Kind == OpPut && len(op.Value) > maxValue {
			return fmt.Errorf("%w: op %d: value of %d bytes (limit %d)", ErrBadBatch, i, len(op.Value), maxValue)
		}
	}
	if n.store != nil {
		if lim := n.store.maxValue - logEntryOverhead; encoded > lim {
			return fmt.Errorf("%w: %d bytes encoded, the log store takes %d", ErrBadBatch, encoded, lim)
		}
	}
	return nil
}

// Get returns key's value and version with linearizable semantics: the
// read reflects every Update acknowledged before Get was called. It runs
// on the leader only (*NotLeaderError otherwise) as a read index: a
// barrier once per leader term (so the commit index covers all earlier
// terms), then the commit index, a quorum heartbeat confirming leadership
// (raft.VerifyLeader), and a wait until the state machine has applied that
// index. A missing key is bwkv.ErrNotFound. The value belongs to the
// caller.
func (n *Node) Get(ctx context.Context, key []byte) ([]byte, uint64, error) {
	if n.closed.Load() {
		return nil, 0, ErrClosed
	}
	idx, err := n.readIndex(ctx)
	if err != nil {
		return nil, 0, err
	}
	if idx, err = n.lastCommand(idx); err != nil {
		return nil, 0, err
	}
	if err := n.fsm.WaitApplied(ctx, idx); err != nil {
		return nil, 0, err
	}
	return n.fsm.Get(key)
}

func (n *Node) readIndex(ctx context.Context) (uint64, error) {
	if n.raft.State() != raft.Leader {
		return 0, fmt.Errorf("cluster: get: %w", n.notLeader())
	}
	term := n.raft.CurrentTerm()
	if n.barrierTerm.Load() != term {
		if err := n.wait(ctx, n.raft.Barrier(timeout(ctx)), "get: barrier"); err != nil {
			return 0, err
		}
		n.barrierTerm.Store(term)
	}
	ci := n.raft.CommitIndex()
	if err := n.wait(ctx, n.raft.VerifyLeader(), "get: verify leader"); err != nil {
		return 0, err
	}
	if n.raft.CurrentTerm() != term {
		return 0, fmt.Errorf("cluster: get: term changed: %w", n.notLeader())
	}
	return ci, nil
}

// lastCommand returns the index of the last command entry at or below
// idx that the state machine has not applied yet (or its applied index).
// Raft hands the FSM only command entries: a commit index that ends in a
// no-op, barrier or configuration entry is never reached by the FSM's
// applied index, so the read waits for the last command instead. The walk
// covers only the trailing non-command entries (a leader's no-op and
// barrier, configuration changes): a handful, since every term starts
// with one and writes follow. A compacted entry is covered by a snapshot
// the leader's own state machine took, so it is applied.
func (n *Node) lastCommand(idx uint64) (uint64, error) {
	var l raft.Log
	for ; idx > n.fsm.Applied(); idx-- {
		err := n.logs.GetLog(idx, &l)
		if errors.Is(err, raft.ErrLogNotFound) {
			return n.fsm.Applied(), nil
		}
		if err != nil {
			return 0, fmt.Errorf("cluster: get: read log %d: %w", idx, err)
		}
		if l.Type == raft.LogCommand {
			return idx, nil
		}
	}
	return idx, nil
}

// StaleGet reads key from this node's state machine without contacting
// any other node: fast and available on followers and during partitions,
// but it may miss recent writes (it sees a prefix of the committed history
// as of this node's applied index; see docs/cluster.md).
func (n *Node) StaleGet(key []byte) ([]byte, uint64, error) {
	if n.closed.Load() {
		return nil, 0, ErrClosed
	}
	return n.fsm.Get(key)
}

// AddVoter adds (or promotes) a voting member; leader only.
func (n *Node) AddVoter(ctx context.Context, id, addr string) error {
	f := n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeout(ctx))
	return n.wait(ctx, f, "add voter "+id)
}

// RemoveServer removes a member; leader only.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	f := n.raft.RemoveServer(raft.ServerID(id), 0, timeout(ctx))
	return n.wait(ctx, f, "remove server "+id)
}

// TransferLeadership hands leadership to another voter (id empty: the most
// up-to-date one); leader only.
func (n *Node) TransferLeadership(ctx context.Context, id, addr string) error {
	var f raft.Future
	if id == "" {
		f = n.raft.LeadershipTransfer()
	} else {
		f = n.raft.LeadershipTransferToServer(raft.ServerID(id), raft.ServerAddress(addr))
	}
	return n.wait(ctx, f, "transfer leadership")
}

// Leader returns the leader's ID and address as this node knows them
// (empty when unknown).
func (n *Node) Leader() (id string, addr string) {
	a, i := n.raft.LeaderWithID()
	return string(i), string(a)
}

// IsLeader reports whether this node believes it is the leader.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Applied returns the state machine's applied index.
func (n *Node) Applied() uint64 { return n.fsm.Applied() }

// Hash returns the state machine's content hash and the applied index it
// describes (see FSM.Hash).
func (n *Node) Hash() (uint64, [32]byte, error) { return n.fsm.Hash() }

// Restores returns how many snapshots this node installed from the leader
// since Open (a follower too far behind for the leader's log).
func (n *Node) Restores() uint64 { return n.fsm.Restores() }

// Snapshot asks raft to take a snapshot now (and compact its log).
func (n *Node) Snapshot() error { return n.raft.Snapshot().Error() }

// Raft returns the raft instance, for what this API does not cover
// (configuration, stats). Do not Shutdown it; use Close.
func (n *Node) Raft() *raft.Raft { return n.raft }

// Close stops raft and closes what the node owns: the state machine, the
// bwkv log store and a TCP transport. A second Close returns ErrClosed.
func (n *Node) Close() error {
	if !n.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	err := n.raft.Shutdown().Error()
	if cerr := n.fsm.Close(); err == nil {
		err = cerr
	}
	if n.store != nil {
		if cerr := n.store.Close(); err == nil {
			err = cerr
		}
	}
	if n.tcp != nil {
		if cerr := n.tcp.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("cluster: close %s: %w", n.cfg.ID, err)
	}
	return nil
}
