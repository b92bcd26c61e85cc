package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bwkv/bwkv/cluster"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

func TestParsePeers(t *testing.T) {
	for _, bad := range []string{"", "n1", "n1=a", "n1=a=", "=a=b", "n1=a=b,n2"} {
		if _, err := parsePeers(bad); err == nil {
			t.Errorf("parsePeers(%q) accepted", bad)
		}
	}
	ps, err := parsePeers("n1=127.0.0.1:7001=127.0.0.1:8001,n2=h:1=h:2")
	if err != nil || len(ps) != 2 || ps[1] != (peer{"n2", "h:1", "h:2"}) {
		t.Fatalf("parsePeers = %+v, %v", ps, err)
	}
}

// TestHTTPAPI runs the handler on a one-node cluster.
func TestHTTPAPI(t *testing.T) {
	_, tr := raft.NewInmemTransport("n1")
	rc := raft.DefaultConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
	node, err := cluster.Open(cluster.Config{
		ID: "n1", Dir: t.TempDir(), Transport: tr, Raft: rc, Logger: hclog.NewNullLogger(),
		Bootstrap: []raft.Server{{ID: "n1", Address: "n1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	for !node.IsLeader() {
		time.Sleep(5 * time.Millisecond)
	}
	srv := httptest.NewServer(newHandler(node, []peer{{"n1", "n1", "unused"}}))
	defer srv.Close()
	do := func(method, path, body string, wantCode int) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != wantCode {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, wantCode)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	do("GET", "/kv/a", "", http.StatusNotFound)
	put := do("PUT", "/kv/a", "one", http.StatusOK)
	got := do("GET", "/kv/a", "", http.StatusOK)
	if got["value"] != "one" || got["version"] != put["index"] {
		t.Fatalf("GET after PUT: %v (put %v)", got, put)
	}
	do("POST", "/cas", `{"key":"a","old":"two","new":"x"}`, http.StatusConflict)
	do("POST", "/cas", `{"key":"a","old":"one","new":"two"}`, http.StatusOK)
	do("POST", "/cas", `{"key":"b","new":"created"}`, http.StatusOK)
	do("POST", "/cas", `{"key":"b","new":"again"}`, http.StatusConflict)
	ver := do("GET", "/kv/b", "", http.StatusOK)["version"].(float64)
	do("POST", "/cas", `{"key":"b","version":1,"new":"x"}`, http.StatusConflict)
	do("POST", "/cas", `{"key":"b","version":`+jsonNum(ver)+`,"new":"by-version"}`, http.StatusOK)
	if got := do("GET", "/kv/b?stale=1", "", http.StatusOK); got["value"] != "by-version" {
		t.Fatalf("stale GET: %v", got)
	}
	do("DELETE", "/kv/a", "", http.StatusOK)
	do("GET", "/kv/a", "", http.StatusNotFound)
	do("POST", "/cas", `not json`, http.StatusBadRequest)
	if st := do("GET", "/status", "", http.StatusOK); st["is_leader"] != true || st["leader"] != "n1" {
		t.Fatalf("status: %v", st)
	}
}

func jsonNum(f float64) string {
	b, _ := json.Marshal(uint64(f))
	return string(b)
}
