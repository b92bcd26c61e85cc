// Package bench is the bwkv benchmark harness behind `kvbench`: one workload
// driver (kv_bench's W1–W6 plus W2y), one adapter file per engine behind the
// Engine interface, the CSV format, the report (wins and median ratios per
// peer, CV gates, chart) and the bulk-import tail gate. See README.md and
// bench/README.md.
//
// It is a separate module so the library's go.mod never sees the peers.
package bench
