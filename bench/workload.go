package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Workload is one row of the harness's workload table (kv_bench constants).
type Workload struct {
	ID           string
	Mode         string // kv_bench's mode label: "mixed" or "scan"
	Distribution string // "uniform", "zipf" or "ycsb_zipf"
	ReadPct      int
	UpdatePct    int
	ScanPct      int
}

// Workloads lists W1..W6 and W2y in report order.
var Workloads = []Workload{
	{ID: "W1", Mode: "mixed", Distribution: "uniform", ReadPct: 95, UpdatePct: 5},
	{ID: "W2", Mode: "mixed", Distribution: "zipf", ReadPct: 95, UpdatePct: 5},
	{ID: "W2y", Mode: "mixed", Distribution: "ycsb_zipf", ReadPct: 95, UpdatePct: 5},
	{ID: "W3", Mode: "mixed", Distribution: "uniform", ReadPct: 50, UpdatePct: 50},
	{ID: "W4", Mode: "mixed", Distribution: "uniform", ReadPct: 5, UpdatePct: 95},
	{ID: "W5", Mode: "mixed", Distribution: "uniform", ReadPct: 70, UpdatePct: 25, ScanPct: 5},
	{ID: "W6", Mode: "scan", Distribution: "uniform", ScanPct: 100},
}

// LookupWorkload finds a workload by id (case-insensitive; "W2Y" = "W2y").
func LookupWorkload(id string) (Workload, error) {
	for _, w := range Workloads {
		if strings.EqualFold(w.ID, strings.TrimSpace(id)) {
			return w, nil
		}
	}
	var ids []string
	for _, w := range Workloads {
		ids = append(ids, w.ID)
	}
	return Workload{}, fmt.Errorf("invalid workload %q (supported: %s)", id, strings.Join(ids, ", "))
}

// WorkloadOrder returns the position of id in Workloads (unknown ids last).
func WorkloadOrder(id string) int {
	for i, w := range Workloads {
		if w.ID == id {
			return i
		}
	}
	return len(Workloads)
}

// OpKind is what one operation does.
type OpKind int

const (
	OpRead OpKind = iota
	OpUpdate
	OpScan
)

// PickOp draws the operation: roll uniform in 0..99; read if roll < read%,
// update if roll < read%+update%, else scan.
func (w Workload) PickOp(r *rand.Rand) OpKind {
	if w.ScanPct == 100 {
		return OpScan
	}
	roll := r.IntN(100)
	switch {
	case roll < w.ReadPct:
		return OpRead
	case roll < w.ReadPct+w.UpdatePct:
		return OpUpdate
	}
	return OpScan
}
