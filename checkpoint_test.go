package bwkv_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/bwkv/bwkv"
)

func TestCheckpointReopen(t *testing.T) {
	dir := t.TempDir()
	o := &bwkv.Options{PageSplitEntries: 8, DeltaChainMax: 3, Durability: bwkv.DurabilityRelaxed}
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for round := 0; round < 3; round++ {
		for i := 0; i < 2000; i++ {
			k := fmt.Sprintf("k%05d", (i*37+round*11)%3000)
			if i%5 == 4 {
				if err := db.Delete([]byte(k)); err != nil {
					t.Fatal(err)
				}
				delete(want, k)
				continue
			}
			v := fmt.Sprintf("v%d-%d", round, i)
			if err := db.Put([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		}
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	st := db.Stats()
	if st.Checkpoint.Count < 3 || st.Checkpoint.FramesWritten == 0 {
		t.Fatalf("checkpoint stats %+v", st.Checkpoint)
	}
	db.Close()
	datas, _ := filepath.Glob(filepath.Join(dir, "*.data"))
	if len(datas) == 0 {
		t.Fatal("no data files written")
	}
	for reopen := 0; reopen < 2; reopen++ {
		db, err = bwkv.Open(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := dbState(t, db); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("reopen %d: state differs (%d keys vs %d)", reopen, len(got), len(want))
		}
		if err := db.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
		rs := db.Stats().Recovery
		t.Logf("reopen %d: replayed %d records", reopen, rs.RecordsReplayed)
		db.Close()
	}
}
