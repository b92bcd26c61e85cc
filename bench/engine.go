package bench

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Durability is the harness-level durability mode; each adapter maps it to
// its engine's own knob and reports the mapping in Engine.Info.
type Durability int

const (
	// Relaxed: no fsync per commit (each engine's background flush applies).
	Relaxed Durability = iota
	// Durable: a commit returns after its data is fsynced.
	Durable
)

func (d Durability) String() string {
	if d == Durable {
		return "durable"
	}
	return "relaxed"
}

// ParseDurability parses "relaxed" or "durable".
func ParseDurability(s string) (Durability, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "relaxed":
		return Relaxed, nil
	case "durable":
		return Durable, nil
	}
	return 0, fmt.Errorf("invalid durability %q (supported: relaxed, durable)", s)
}

// ReadPath selects how a point read or a scan reaches the data.
type ReadPath int

const (
	// Snapshot: a fresh read-only snapshot (view) per read.
	Snapshot ReadPath = iota
	// RWTxn: begin a read-write transaction, read, commit.
	RWTxn
)

func (p ReadPath) String() string {
	if p == RWTxn {
		return "rw_txn"
	}
	return "snapshot"
}

// ParseReadPath parses "snapshot" or "rw_txn" (kv_bench also accepts
// "rwtxn" and "txn").
func ParseReadPath(s string) (ReadPath, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "snapshot":
		return Snapshot, nil
	case "rw_txn", "rwtxn", "txn":
		return RWTxn, nil
	}
	return 0, fmt.Errorf("invalid read_path %q (supported: snapshot, rw_txn)", s)
}

// Config is what every adapter receives. The fairness rules of bench/README.md live
// here: one cache budget, one value-separation threshold, compression off
// (adapters hard-code it), one durability mode.
type Config struct {
	Dir            string
	Durability     Durability
	CacheBytes     int64 // the same memory budget for every engine's cache
	ValueThreshold int   // values >= this go to a separate value store where one exists
	KeySize        int
	ValueSize      int
	// Compression is --compression: "" or "none", "fast" or "good", each
	// engine's codecs for it (bwkv S2 / zstd, Pebble Fastest / Good,
	// Badger Snappy / ZSTD); an engine without compression refuses
	// anything but none.
	Compression string
}

// ParseCompression checks a --compression flag.
func ParseCompression(s string) error {
	switch s {
	case "", "none", "fast", "good":
		return nil
	}
	return fmt.Errorf("invalid --compression %q (supported: none, fast, good)", s)
}

// compressed reports whether cfg asks for compression, and refuses it
// for an engine that has none.
func (cfg Config) compressed(engine string, has bool) (bool, error) {
	on := cfg.Compression != "" && cfg.Compression != "none"
	if on && !has {
		return false, fmt.Errorf("%s has no compression (--compression %s)", engine, cfg.Compression)
	}
	return on, nil
}

// ErrNotFound is returned by Engine.Read for a missing key.
var ErrNotFound = errors.New("kvbench: not found")

// Info describes an opened engine's settings; it is written into every CSV
// row so a result carries the configuration it was measured with.
type Info struct {
	// Durability is the engine-side mapping of Config.Durability,
	// e.g. "pebble.WriteOptions{Sync:false}".
	Durability string
	// UpdateMode is "rmw_txn" (begin, get, put, commit), "blind_set" (no
	// transaction: the report flags such rows) or "get_then_set" (a read
	// before a blind set: the same work, without atomicity).
	UpdateMode string
	// Settings is a short human-readable list of the non-default options.
	Settings string
}

// Engine is the one interface the workload driver and the bulk importer use.
// Every method is safe for concurrent use by several goroutines.
type Engine interface {
	// Read appends the value of key to dst[:0] and returns it; a missing
	// key returns ErrNotFound. path picks snapshot or rw_txn.
	Read(dst, key []byte, path ReadPath) ([]byte, error)
	// Update is the read-modify-write of bench/README.md: begin, get, put, commit.
	// A conflict is returned as an error (counted in err_op).
	Update(key, value []byte) error
	// Scan reads up to limit pairs from the first key >= lo and < hi,
	// touching every key and value, and returns how many it read.
	Scan(lo, hi []byte, limit int, path ReadPath) (int, error)
	// Begin starts a write batch (a transaction where the engine has them).
	Begin() (Batch, error)
	// Settle brings the engine to a steady state after the prefill
	// (flush, compact, checkpoint); it is not timed.
	Settle() error
	// Info reports the engine's settings.
	Info() Info
	// Close releases everything; the directory stays.
	Close() error
}

// Batch is a write transaction used by the prefill and the bulk import.
// A Batch is used by one goroutine.
type Batch interface {
	Put(key, value []byte) error
	Commit() error
	Rollback() error
}

// Opener opens an engine in cfg.Dir.
type Opener func(cfg Config) (Engine, error)

var registry = map[string]Opener{}

// Register makes an adapter available under name; adapters call it from init.
func Register(name string, open Opener) { registry[name] = open }

// Open opens the engine called name.
func Open(name string, cfg Config) (Engine, error) {
	open, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown engine %q (compiled in: %s)", name, strings.Join(Engines(), ", "))
	}
	return open(cfg)
}

// Engines lists the compiled-in engines, sorted.
func Engines() []string {
	var names []string
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// PeerEngines is the default engine list of the matrix: bwkv (when compiled
// in), the three peers, and pebble-rmw (Pebble reading each key before its
// Set: the same work as bwkv's read-modify-write update). The quadratic adapter is a test fixture for the
// bulk gate and is only run when asked for.
func PeerEngines() []string {
	var out []string
	for _, n := range []string{"bwkv", "pebble", "pebble-rmw", "badger", "bbolt"} {
		if _, ok := registry[n]; ok {
			out = append(out, n)
		}
	}
	return out
}
