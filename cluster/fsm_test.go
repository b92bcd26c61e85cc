package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/cluster"
	"github.com/hashicorp/raft"
)

func openFSM(t *testing.T, dir string) *cluster.FSM {
	t.Helper()
	f, err := cluster.OpenFSM(dir, &bwkv.Options{Durability: bwkv.DurabilityRelaxed})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func apply(t *testing.T, f *cluster.FSM, idx uint64, b *cluster.Batch) cluster.Result {
	t.Helper()
	data, err := cluster.EncodeBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	res, ok := f.Apply(&raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: data}).(cluster.Result)
	if !ok {
		t.Fatal("Apply returned no Result")
	}
	return res
}

func wantValue(t *testing.T, f *cluster.FSM, key, val string, ver uint64) {
	t.Helper()
	v, gotVer, err := f.Get([]byte(key))
	if val == "" {
		if !errors.Is(err, bwkv.ErrNotFound) {
			t.Fatalf("Get(%s) = %q, %v; want not found", key, v, err)
		}
		return
	}
	if err != nil || string(v) != val || gotVer != ver {
		t.Fatalf("Get(%s) = %q v%d, %v; want %q v%d", key, v, gotVer, err, val, ver)
	}
}

func TestFSMApply(t *testing.T) {
	dir := t.TempDir()
	f := openFSM(t, dir)
	if r := apply(t, f, 1, new(cluster.Batch).Put([]byte("a"), []byte("1")).Put([]byte("b"), []byte("2"))); r.Err != nil || r.Index != 1 {
		t.Fatalf("put: %+v", r)
	}
	wantValue(t, f, "a", "1", 1)
	// CAS on value: wrong old value fails and applies nothing of the batch.
	r := apply(t, f, 2, new(cluster.Batch).Put([]byte("c"), []byte("3")).CompareAndSwap([]byte("a"), []byte("x"), []byte("9")))
	var ce *cluster.ConditionError
	if !errors.As(r.Err, &ce) || !errors.Is(r.Err, cluster.ErrConditionFailed) || ce.Op != 1 || ce.Version != 1 {
		t.Fatalf("failed CAS: %+v", r)
	}
	wantValue(t, f, "c", "", 0)
	if f.Applied() != 2 {
		t.Fatalf("applied %d after a failed condition, want 2", f.Applied())
	}
	// CAS on value succeeds, CAS on version, create-if-missing.
	if r := apply(t, f, 3, new(cluster.Batch).CompareAndSwap([]byte("a"), []byte("1"), []byte("10"))); r.Err != nil {
		t.Fatal(r.Err)
	}
	wantValue(t, f, "a", "10", 3)
	if r := apply(t, f, 4, new(cluster.Batch).CheckVersion([]byte("a"), 1).Put([]byte("a"), []byte("x"))); !errors.Is(r.Err, cluster.ErrConditionFailed) {
		t.Fatalf("stale version accepted: %+v", r)
	}
	if r := apply(t, f, 5, new(cluster.Batch).CheckVersion([]byte("a"), 3).Delete([]byte("a")).CompareAndSwap([]byte("n"), nil, []byte("new"))); r.Err != nil {
		t.Fatal(r.Err)
	}
	wantValue(t, f, "a", "", 0)
	wantValue(t, f, "n", "new", 5)
	// A check sees the batch's own earlier writes.
	if r := apply(t, f, 6, new(cluster.Batch).Put([]byte("p"), []byte("q")).CheckValue([]byte("p"), []byte("q")).CheckVersion([]byte("a"), 0)); r.Err != nil {
		t.Fatal(r.Err)
	}
	// Replays at or below the applied index are skipped, across a restart.
	_, h1, err := f.Hash()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	f = openFSM(t, dir)
	defer f.Close()
	if f.Applied() != 6 {
		t.Fatalf("applied %d after reopen, want 6", f.Applied())
	}
	apply(t, f, 3, new(cluster.Batch).Put([]byte("a"), []byte("replayed")))
	wantValue(t, f, "a", "", 0)
	idx, h2, err := f.Hash()
	if err != nil || idx != 6 || h1 != h2 {
		t.Fatalf("hash after replay: %d %x %v, want 6 %x", idx, h2, err, h1)
	}
	// A malformed entry is applied as a no-op on every node (same outcome).
	if res, _ := f.Apply(&raft.Log{Index: 7, Type: raft.LogCommand, Data: []byte{99}}).(cluster.Result); !errors.Is(res.Err, cluster.ErrBadBatch) || f.Applied() != 7 {
		t.Fatalf("malformed entry: %+v applied %d", res, f.Applied())
	}
}

func TestBatchValidation(t *testing.T) {
	for name, b := range map[string]*cluster.Batch{
		"empty":     {},
		"empty key": new(cluster.Batch).Put(nil, []byte("v")),
		"bad kind":  {Ops: []cluster.Op{{Kind: 77, Key: []byte("k")}}},
	} {
		if _, err := cluster.EncodeBatch(b); !errors.Is(err, cluster.ErrBadBatch) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// memSink is a raft.SnapshotSink into a buffer.
type memSink struct {
	bytes.Buffer
	closed, canceled bool
}

func (s *memSink) ID() string                  { return "mem" }
func (s *memSink) Close() error                { s.closed = true; return nil }
func (s *memSink) Cancel() error               { s.canceled = true; return nil }
func (s *memSink) Write(p []byte) (int, error) { return s.Buffer.Write(p) }

func TestFSMSnapshotRestore(t *testing.T) {
	src := openFSM(t, t.TempDir())
	defer src.Close()
	for i := uint64(1); i <= 500; i++ {
		apply(t, src, i, new(cluster.Batch).Put([]byte{byte(i), byte(i >> 8)}, bytes.Repeat([]byte{byte(i)}, int(i))))
	}
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	wantIdx, wantSum, _ := src.Hash()
	// Writes after the snapshot must not show up in it.
	apply(t, src, 501, new(cluster.Batch).Put([]byte("late"), []byte("x")))
	var sink memSink
	if err := snap.Persist(&sink); err != nil || !sink.closed {
		t.Fatal(err)
	}
	snap.Release()

	dir := t.TempDir()
	dst := openFSM(t, dir)
	apply(t, dst, 1, new(cluster.Batch).Put([]byte("old"), []byte("gone")))
	if err := dst.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	idx, sum, err := dst.Hash()
	if err != nil || idx != wantIdx || sum != wantSum || dst.Applied() != 500 {
		t.Fatalf("restored %d %x %v (applied %d), want %d %x", idx, sum, err, dst.Applied(), wantIdx, wantSum)
	}
	wantValue(t, dst, "old", "", 0)
	wantValue(t, dst, "late", "", 0)
	// The swap is durable: a reopen finds the restored state.
	dst.Close()
	dst = openFSM(t, dir)
	defer dst.Close()
	if idx, sum, _ := dst.Hash(); idx != wantIdx || sum != wantSum {
		t.Fatalf("after reopen: %d %x", idx, sum)
	}
	// A damaged stream leaves the current state in place.
	bad := bytes.Clone(sink.Bytes())
	bad[len(bad)/2] ^= 0xff
	if err := dst.Restore(io.NopCloser(bytes.NewReader(bad))); err == nil {
		t.Fatal("damaged snapshot restored")
	}
	if idx, sum, _ := dst.Hash(); idx != wantIdx || sum != wantSum {
		t.Fatalf("after a failed restore: %d %x", idx, sum)
	}
}

func TestFSMWaitApplied(t *testing.T) {
	f := openFSM(t, t.TempDir())
	done := make(chan error, 1)
	go func() { done <- f.WaitApplied(context.Background(), 2) }()
	apply(t, f, 1, new(cluster.Batch).Put([]byte("a"), []byte("1")))
	select {
	case err := <-done:
		t.Fatalf("WaitApplied(2) returned at index 1: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	apply(t, f, 2, new(cluster.Batch).Put([]byte("a"), []byte("2")))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { done <- f.WaitApplied(context.Background(), 10) }()
	time.Sleep(20 * time.Millisecond)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, cluster.ErrClosed) {
		t.Fatalf("WaitApplied across Close: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g := openFSM(t, t.TempDir())
	defer g.Close()
	if err := g.WaitApplied(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitApplied with an ended ctx: %v", err)
	}
}
