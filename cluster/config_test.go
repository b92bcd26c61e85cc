package cluster_test

import (
	"strings"
	"testing"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/cluster"
	"github.com/hashicorp/raft"
)

func TestConfigValidate(t *testing.T) {
	_, tr := raft.NewInmemTransport("x")
	store, err := cluster.OpenStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	badRaft := raft.DefaultConfig()
	badRaft.HeartbeatTimeout = 0
	for name, tc := range map[string]struct {
		cfg  cluster.Config
		want []string // every problem is reported
	}{
		"empty":           {cluster.Config{}, []string{"missing ID", "missing Dir", "exactly one of BindAddr and Transport"}},
		"both transports": {cluster.Config{ID: "a", Dir: "d", BindAddr: "127.0.0.1:1", Transport: tr}, []string{"exactly one"}},
		"advertise":       {cluster.Config{ID: "a", Dir: "d", Transport: tr, AdvertiseAddr: "x:1"}, []string{"AdvertiseAddr"}},
		"half store":      {cluster.Config{ID: "a", Dir: "d", Transport: tr, LogStore: store}, []string{"both LogStore and StableStore"}},
		"options unused":  {cluster.Config{ID: "a", Dir: "d", Transport: tr, LogStore: store, StableStore: store, LogOptions: &bwkv.Options{}}, []string{"LogOptions without effect"}},
		"relaxed log":     {cluster.Config{ID: "a", Dir: "d", Transport: tr, LogOptions: &bwkv.Options{Durability: bwkv.DurabilityRelaxed}}, []string{"DurabilitySync"}},
		"retain":          {cluster.Config{ID: "a", Dir: "d", Transport: tr, SnapshotRetain: -1}, []string{"SnapshotRetain"}},
		"raft":            {cluster.Config{ID: "a", Dir: "d", Transport: tr, Raft: badRaft}, []string{"eartbeat"}},
	} {
		err := tc.cfg.Validate()
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v does not mention %q", name, err, w)
			}
		}
	}
	if err := (&cluster.Config{ID: "a", Dir: "d", Transport: tr}).Validate(); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
}
