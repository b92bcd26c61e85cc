package bench

import (
	"strings"
	"testing"
)

// TestCompressionConfig: --compression reaches each engine (its Info
// names the codec), an engine without compression refuses it, and a bad
// value is refused by Validate.
func TestCompressionConfig(t *testing.T) {
	want := map[string]map[string]string{
		"bwkv":   {"fast": "Compression s2", "good": "Compression zstd"},
		"pebble": {"fast": "DBCompressionFastest", "good": "DBCompressionGood"},
		"badger": {"fast": "compression Snappy", "good": "compression ZSTD"},
	}
	for engine, levels := range want {
		for level, setting := range levels {
			eng, err := Open(engine, Config{Dir: t.TempDir(), CacheBytes: 8 << 20, ValueThreshold: 8192,
				KeySize: 16, ValueSize: 100, Compression: level})
			if err != nil {
				t.Fatalf("%s/%s: %v", engine, level, err)
			}
			info := eng.Info()
			eng.Close()
			if !strings.Contains(info.Settings, setting) {
				t.Fatalf("%s/%s: settings %q lack %q", engine, level, info.Settings, setting)
			}
		}
	}
	if _, err := Open("bbolt", Config{Dir: t.TempDir(), Compression: "good"}); err == nil {
		t.Fatal("bbolt accepted --compression good")
	}
	o := DefaultRunOptions()
	o.Path, o.Workload, o.Compression = "x", "W1", "lz4"
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--compression") {
		t.Fatalf("Validate = %v", err)
	}
}
