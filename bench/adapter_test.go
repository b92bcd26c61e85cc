package bench

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
)

// TestAdapterSemantics checks every compiled-in adapter does what the driver
// assumes: prefill, reads on both paths, RMW update, bounded scans, not found.
func TestAdapterSemantics(t *testing.T) {
	for _, name := range Engines() {
		t.Run(name, func(t *testing.T) {
			const n, ks, vs = 3000, 32, 100
			eng, err := Open(name, Config{Dir: t.TempDir(), CacheBytes: 8 << 20, ValueThreshold: 8192, KeySize: ks, ValueSize: vs})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := eng.Close(); err != nil {
					t.Error(err)
				}
			}()
			if err := Prefill(eng, n, 2, ks, vs, false); err != nil {
				t.Fatal(err)
			}
			if err := eng.Settle(); err != nil {
				t.Fatal(err)
			}
			want := FillValue(vs)
			for _, path := range []ReadPath{Snapshot, RWTxn} {
				for _, id := range []uint64{0, 1, 1500, n - 1} {
					v, err := eng.Read(make([]byte, 0, 8), AppendKey(nil, id, ks), path)
					if err != nil || !bytes.Equal(v, want) {
						t.Fatalf("%s read %d: %q %v", path, id, v, err)
					}
				}
				if _, err := eng.Read(nil, AppendKey(nil, n+5, ks), path); !errors.Is(err, ErrNotFound) {
					t.Fatalf("%s read missing: %v", path, err)
				}
				// Group 7 holds ids 7, 1031, 2055: three keys.
				lo := AppendPrefix(nil, 7)
				got, err := eng.Scan(lo, PrefixUpperBound(nil, lo), 100, path)
				if err != nil || got != 3 {
					t.Fatalf("%s scan: %d %v", path, got, err)
				}
				if got, err := eng.Scan(lo, PrefixUpperBound(nil, lo), 2, path); err != nil || got != 2 {
					t.Fatalf("%s scan limit 2: %d %v", path, got, err)
				}
			}
			nv := bytes.Repeat([]byte{'u'}, vs)
			key := AppendKey(nil, 42, ks)
			if err := eng.Update(key, nv); err != nil {
				t.Fatal(err)
			}
			if v, err := eng.Read(nil, key, Snapshot); err != nil || !bytes.Equal(v, nv) {
				t.Fatalf("read after update: %q %v", v, err)
			}
			info := eng.Info()
			if info.Durability == "" || (info.UpdateMode != "rmw_txn" && info.UpdateMode != "blind_set" && info.UpdateMode != "get_then_set") {
				t.Fatalf("info %+v", info)
			}
		})
	}
}

// TestAdapterSmokeRun runs every adapter through Run for one second on a
// temp dir with the mixed W5 (reads, updates, scans).
func TestAdapterSmokeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("one second per engine")
	}
	for _, name := range Engines() {
		t.Run(name, func(t *testing.T) {
			o := DefaultRunOptions()
			o.Engine, o.Workload, o.Threads = name, "W5", 2
			o.KeySize, o.ValueSize, o.PrefillKeys, o.MeasureSecs = 32, 256, 5000, 1
			o.CacheBytes = 16 << 20
			o.Path = filepath.Join(t.TempDir(), "db")
			r, err := Run(o)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(r.StdoutLine("-"))
			if r.TotalOp == 0 || r.Ops <= 0 || r.P99 == 0 || r.HDRP99 <= 0 || r.ElapsedUs < 900000 {
				t.Fatalf("empty result %+v", r)
			}
			if r.ErrOp > r.TotalOp/100 {
				t.Fatalf("%d of %d ops failed", r.ErrOp, r.TotalOp)
			}
			if r.GoVersion == "" || r.GOMAXPROCS == 0 || r.EngineDurability == "" {
				t.Fatalf("metadata %+v", r)
			}
		})
	}
}

// TestSettleWritesFiles checks that after prefill + settle every on-disk
// engine has bytes under its directory (the disk_bytes and space_amp
// columns), and that bwkv's settle step (DB.Compact) wrote data files.
func TestSettleWritesFiles(t *testing.T) {
	for _, name := range Engines() {
		if name == "quadratic" {
			continue // in memory by design
		}
		t.Run(name, func(t *testing.T) {
			const n, ks, vs = 3000, 32, 100
			dir := t.TempDir()
			eng, err := Open(name, Config{Dir: dir, CacheBytes: 8 << 20, ValueThreshold: 8192, KeySize: ks, ValueSize: vs})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			if err := Prefill(eng, n, 1, ks, vs, false); err != nil {
				t.Fatal(err)
			}
			if err := eng.Settle(); err != nil {
				t.Fatal(err)
			}
			if d := DiskBytes(dir); d <= 0 {
				t.Fatalf("disk bytes %d after settle", d)
			}
			if name == "bwkv" {
				data, err := filepath.Glob(filepath.Join(dir, "*.data"))
				if err != nil || len(data) == 0 {
					t.Fatalf("no data files after DB.Compact: %v %v", data, err)
				}
			}
		})
	}
}
