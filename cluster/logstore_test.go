package cluster_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/cluster"
	"github.com/hashicorp/raft"
)

func openStore(t *testing.T, dir string) *cluster.Store {
	t.Helper()
	s, err := cluster.OpenStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testLog(i uint64) *raft.Log {
	l := &raft.Log{Index: i, Term: i/10 + 1, Type: raft.LogCommand, Data: fmt.Appendf(nil, "data-%d", i)}
	if i%3 == 0 {
		l.AppendedAt = time.Unix(1700000000, int64(i))
		l.Extensions = []byte{byte(i)}
	}
	if i%5 == 0 {
		l.Data = nil
	}
	return l
}

func checkEnds(t *testing.T, s *cluster.Store, first, last uint64) {
	t.Helper()
	f, _ := s.FirstIndex()
	l, _ := s.LastIndex()
	if f != first || l != last {
		t.Fatalf("ends %d..%d, want %d..%d", f, l, first, last)
	}
}

func checkLog(t *testing.T, s *cluster.Store, i uint64) {
	t.Helper()
	var got raft.Log
	if err := s.GetLog(i, &got); err != nil {
		t.Fatalf("GetLog(%d): %v", i, err)
	}
	want := testLog(i)
	if got.Index != i || got.Term != want.Term || got.Type != want.Type || !bytes.Equal(got.Data, want.Data) ||
		!bytes.Equal(got.Extensions, want.Extensions) || !got.AppendedAt.Equal(want.AppendedAt) {
		t.Fatalf("GetLog(%d) = %+v, want %+v", i, got, *want)
	}
}

func TestStoreLogs(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	checkEnds(t, s, 0, 0)
	var batch []*raft.Log
	for i := uint64(1); i <= 3000; i++ {
		batch = append(batch, testLog(i))
		if len(batch) == 7 || i == 3000 {
			if err := s.StoreLogs(batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	checkEnds(t, s, 1, 3000)
	for _, i := range []uint64{1, 2, 3, 5, 1500, 2999, 3000} {
		checkLog(t, s, i)
	}
	var l raft.Log
	if err := s.GetLog(3001, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog past the end: %v", err)
	}
	// Compaction of a prefix longer than one delete chunk.
	if err := s.DeleteRange(0, 2500); err != nil {
		t.Fatal(err)
	}
	checkEnds(t, s, 2501, 3000)
	if err := s.GetLog(2500, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog of a compacted entry: %v", err)
	}
	// Suffix truncation, as raft does on a log conflict.
	if err := s.DeleteRange(2900, 3000); err != nil {
		t.Fatal(err)
	}
	checkEnds(t, s, 2501, 2899)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir)
	defer s.Close()
	checkEnds(t, s, 2501, 2899)
	checkLog(t, s, 2501)
	checkLog(t, s, 2899)
	if err := s.DeleteRange(1, 1<<62); err != nil {
		t.Fatal(err)
	}
	checkEnds(t, s, 0, 0)
	if err := s.StoreLog(testLog(5000)); err != nil {
		t.Fatal(err)
	}
	checkEnds(t, s, 5000, 5000)
}

func TestStableStore(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	if _, err := s.Get([]byte("k")); !errors.Is(err, cluster.ErrKeyNotFound) || err.Error() != "not found" {
		t.Fatalf("Get missing: %v", err)
	}
	if v, err := s.GetUint64([]byte("term")); v != 0 || err == nil || err.Error() != "not found" {
		t.Fatalf("GetUint64 missing: %d, %v", v, err)
	}
	if err := s.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUint64([]byte("term"), 42); err != nil {
		t.Fatal(err)
	}
	// A log entry with an index that spells a stable key must not collide.
	if err := s.StoreLog(testLog(1)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, dir)
	defer s.Close()
	v, err := s.Get([]byte("k"))
	if err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	v[0] = 'x' // the caller owns it
	if v, _ := s.Get([]byte("k")); string(v) != "v" {
		t.Fatalf("returned value aliased: %q", v)
	}
	if n, err := s.GetUint64([]byte("term")); n != 42 || err != nil {
		t.Fatalf("GetUint64 = %d, %v", n, err)
	}
	checkEnds(t, s, 1, 1)
}

func TestOpenStoreRejectsRelaxed(t *testing.T) {
	if _, err := cluster.OpenStore(t.TempDir(), &bwkv.Options{Durability: bwkv.DurabilityRelaxed}); err == nil {
		t.Fatal("relaxed log store accepted")
	}
}
