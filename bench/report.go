package bench

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// ReportOptions configure `kvbench report`.
type ReportOptions struct {
	Target    string   // the engine compared against each baseline (bwkv)
	Baselines []string // nil: every other engine in the rows except quadratic
	P99       string   // "hdr" (exact, default) or "log2" (kv_bench buckets)
	MaxCVOps  float64  // throughput CV above this marks a case (0.10)
	MaxCVP99  float64  // p99 CV above this marks a case (0.15)
}

// DefaultReportOptions are the harness's gates.
func DefaultReportOptions() ReportOptions {
	return ReportOptions{Target: "bwkv", P99: "hdr", MaxCVOps: 0.10, MaxCVP99: 0.15}
}

// CaseKey identifies one benchmark case: everything but the engine and the
// repeat.
type CaseKey struct {
	Workload     string
	Threads      int
	KeySize      int
	ValueSize    int
	PrefillKeys  int
	ReadPath     string
	Durability   string
	Distribution string
	CacheBytes   int64 // the cache budget (0 in rows without the column)
	// ValueKind, Compression and ValueThreshold as the rows give them
	// (rows without the columns: random, none, DefaultValueThreshold).
	ValueKind      string
	Compression    string
	ValueThreshold int
}

func (k CaseKey) String() string {
	return fmt.Sprintf("%s t%d %s", k.Workload, k.Threads, k.Group())
}

// Group is the case without its workload and threads: profile, prefill,
// read path, durability and cache ("32/1024 n200000 snapshot relaxed
// c256MiB"). The chart draws one figure per group.
func (k CaseKey) Group() string {
	g := fmt.Sprintf("%d/%d n%d %s %s", k.KeySize, k.ValueSize, k.PrefillKeys, k.ReadPath, k.Durability)
	if k.CacheBytes != 0 {
		g += " c" + sizeTag(k.CacheBytes)
	}
	// The defaults (random values, no compression, separation at 8 KiB)
	// are left out, so older rows and the standard cases read as before.
	if k.ValueKind != "" && k.ValueKind != "random" {
		g += " " + k.ValueKind
	}
	if k.Compression != "" && k.Compression != "none" {
		g += " " + k.Compression
	}
	if k.ValueThreshold != 0 && k.ValueThreshold != DefaultValueThreshold {
		g += " vt" + strconv.Itoa(k.ValueThreshold)
	}
	return g
}

// DefaultValueThreshold is the --value-threshold default of kvbench run
// and matrix.
const DefaultValueThreshold = 8192

// Label is the short label used on the chart's x axis (within one group).
func (k CaseKey) Label() string { return fmt.Sprintf("%s/t%d", k.Workload, k.Threads) }

func keyOf(r *Result) CaseKey {
	// Rows written before the value columns ran with the defaults.
	vt := r.ValueThreshold
	if vt == 0 {
		vt = DefaultValueThreshold
	}
	return CaseKey{r.WorkloadID, r.Threads, r.KeySize, r.ValueSize, r.PrefillKeys, r.ReadPath, r.Durability,
		r.Distribution, r.CacheBytes, orDefault(r.ValueKind, "random"), orDefault(r.Compression, "none"), vt}
}

// oneGroup reports whether every key has the same Group: the short
// labels (Label, the bare workload) then tell the cases apart.
func oneGroup(keys []CaseKey) bool {
	for _, k := range keys {
		if k.Group() != keys[0].Group() {
			return false
		}
	}
	return true
}

func lessCase(a, b CaseKey) bool {
	if a.Workload != b.Workload {
		return WorkloadOrder(a.Workload) < WorkloadOrder(b.Workload)
	}
	if a.KeySize != b.KeySize || a.ValueSize != b.ValueSize {
		return a.KeySize*1e6+a.ValueSize < b.KeySize*1e6+b.ValueSize
	}
	if a.Threads != b.Threads {
		return a.Threads < b.Threads
	}
	return a.String() < b.String()
}

// Stats summarizes the repeats of one engine on one case.
type Stats struct {
	N         int
	MedOps    float64
	MedP99    float64 // µs
	CVOps     float64
	CVP99     float64
	ErrOps    uint64
	BlindSet  bool // updates were blind sets (no transaction)
	AllocOp   float64
	PeakHeap  float64
	SpaceAmp  float64
	GCCPUFrac float64
}

// Median returns the median of xs (0 for none); xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// CV is the coefficient of variation (sample standard deviation over mean);
// 0 for fewer than two values.
func CV(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var mean float64
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if mean == 0 {
		return 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss/float64(len(xs)-1)) / mean
}

func (o ReportOptions) p99(r *Result) float64 {
	if o.P99 == "log2" || (r.HDRP99 == 0 && r.P99 > 0) {
		return float64(r.P99)
	}
	return r.HDRP99
}

// Aggregate groups rows by case and engine.
func Aggregate(rows []Result, o ReportOptions) map[CaseKey]map[string]*Stats {
	type acc struct {
		ops, p99, alloc, heap, amp, gc []float64
		errs                           uint64
		blind                          bool
	}
	accs := map[CaseKey]map[string]*acc{}
	for i := range rows {
		r := &rows[i]
		k := keyOf(r)
		if accs[k] == nil {
			accs[k] = map[string]*acc{}
		}
		a := accs[k][r.Engine]
		if a == nil {
			a = &acc{}
			accs[k][r.Engine] = a
		}
		a.ops = append(a.ops, r.Ops)
		a.p99 = append(a.p99, o.p99(r))
		a.alloc = append(a.alloc, r.AllocBytesPerOp)
		a.heap = append(a.heap, float64(r.PeakHeapBytes))
		a.amp = append(a.amp, r.SpaceAmp)
		a.gc = append(a.gc, r.GCCPUFraction)
		a.errs += r.ErrOp
		a.blind = a.blind || r.UpdateMode == "blind_set" || r.UpdateMode == "get_then_set"
	}
	out := map[CaseKey]map[string]*Stats{}
	for k, m := range accs {
		out[k] = map[string]*Stats{}
		for eng, a := range m {
			out[k][eng] = &Stats{
				N: len(a.ops), MedOps: Median(a.ops), MedP99: Median(a.p99),
				CVOps: CV(a.ops), CVP99: CV(a.p99), ErrOps: a.errs, BlindSet: a.blind,
				AllocOp: Median(a.alloc), PeakHeap: Median(a.heap), SpaceAmp: Median(a.amp),
				GCCPUFrac: Median(a.gc),
			}
		}
	}
	return out
}

// CaseComparison is the target against one baseline on one case.
type CaseComparison struct {
	Key            CaseKey
	Target, Base   Stats
	OpsRatio       float64 // target ops / baseline ops (> 1: target faster)
	P99Ratio       float64 // target p99 / baseline p99 (< 1: target better)
	Gated          bool    // a CV gate tripped: left out of the wins
	GateReason     string
	WinOps, WinP99 bool
}

// Summary is one row of the mace-style table.
type Summary struct {
	Workload       string // "all" for the total row
	WinsOps, Cases int    // Cases counts only ungated cases
	WinsP99        int
	Total          int // all cases, gated included
	MedOpsRatio    float64
	MedP99Ratio    float64
	Gated          int
}

// Comparison is the target against one baseline.
type Comparison struct {
	Target, Baseline string
	Cases            []CaseComparison
	PerWorkload      []Summary
	All              Summary
}

// Compare builds the table for one baseline. Wins count only cases where
// neither engine trips a CV gate; median ratios are over every case.
func Compare(agg map[CaseKey]map[string]*Stats, target, baseline string, o ReportOptions) Comparison {
	c := Comparison{Target: target, Baseline: baseline}
	var keys []CaseKey
	for k, m := range agg {
		if m[target] != nil && m[baseline] != nil {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return lessCase(keys[i], keys[j]) })
	for _, k := range keys {
		t, b := agg[k][target], agg[k][baseline]
		cc := CaseComparison{Key: k, Target: *t, Base: *b}
		if b.MedOps > 0 {
			cc.OpsRatio = t.MedOps / b.MedOps
		}
		if b.MedP99 > 0 {
			cc.P99Ratio = t.MedP99 / b.MedP99
		}
		var reasons []string
		for _, s := range []struct {
			name string
			st   *Stats
		}{{target, t}, {baseline, b}} {
			if s.st.CVOps > o.MaxCVOps {
				reasons = append(reasons, fmt.Sprintf("%s ops CV %.0f%%", s.name, 100*s.st.CVOps))
			}
			if s.st.CVP99 > o.MaxCVP99 {
				reasons = append(reasons, fmt.Sprintf("%s p99 CV %.0f%%", s.name, 100*s.st.CVP99))
			}
		}
		cc.Gated = len(reasons) > 0
		cc.GateReason = strings.Join(reasons, "; ")
		if !cc.Gated {
			cc.WinOps = t.MedOps > b.MedOps
			cc.WinP99 = t.MedP99 < b.MedP99
		}
		c.Cases = append(c.Cases, cc)
	}
	// One summary row per workload, or per workload and group when the
	// rows hold several groups (a suite): relaxed and durable W4 are
	// different questions.
	short := oneGroup(keys)
	var order []string
	byW := map[string][]CaseComparison{}
	for _, cc := range c.Cases {
		name := cc.Key.Workload
		if !short {
			name += " " + cc.Key.Group()
		}
		if byW[name] == nil {
			order = append(order, name)
		}
		byW[name] = append(byW[name], cc)
	}
	for _, w := range order {
		c.PerWorkload = append(c.PerWorkload, summarize(w, byW[w]))
	}
	c.All = summarize("all", c.Cases)
	return c
}

func summarize(name string, ccs []CaseComparison) Summary {
	s := Summary{Workload: name, Total: len(ccs)}
	var ops, p99 []float64
	for _, cc := range ccs {
		ops = append(ops, cc.OpsRatio)
		p99 = append(p99, cc.P99Ratio)
		if cc.Gated {
			s.Gated++
			continue
		}
		s.Cases++
		if cc.WinOps {
			s.WinsOps++
		}
		if cc.WinP99 {
			s.WinsP99++
		}
	}
	s.MedOpsRatio = Median(ops)
	s.MedP99Ratio = Median(p99)
	return s
}

// Baselines returns the engines to compare the target with: o.Baselines,
// or every engine in agg but the target and the quadratic fixture.
func (o ReportOptions) baselines(agg map[CaseKey]map[string]*Stats) []string {
	if len(o.Baselines) > 0 {
		return o.Baselines
	}
	seen := map[string]bool{}
	for _, m := range agg {
		for e := range m {
			if e != o.Target && e != "quadratic" {
				seen[e] = true
			}
		}
	}
	var out []string
	for e := range seen {
		out = append(out, e)
	}
	sort.Strings(out)
	return out
}

// WriteReport writes the markdown report: per baseline the summary table
// and the per-case detail, then a per-engine resource table.
func WriteReport(w io.Writer, rows []Result, o ReportOptions) error {
	agg := Aggregate(rows, o)
	fmt.Fprintf(w, "# kvbench report\n\n")
	fmt.Fprintf(w, "%d rows, %d cases. Target: %s. p99 source: %s. A case whose throughput CV > %.0f%% or p99 CV > %.0f%% (either engine) is marked `*` and left out of the wins; median ratios include every case. Ops ratio = %s/peer (> 1: %s faster); p99 ratio = %s/peer (< 1: %s better).\n\n",
		len(rows), len(agg), o.Target, o.P99, 100*o.MaxCVOps, 100*o.MaxCVP99, o.Target, o.Target, o.Target, o.Target)
	for _, base := range o.baselines(agg) {
		c := Compare(agg, o.Target, base, o)
		if len(c.Cases) == 0 {
			continue
		}
		fmt.Fprintf(w, "## %s vs %s\n\n", o.Target, base)
		for _, cc := range c.Cases {
			if cc.Base.BlindSet || cc.Target.BlindSet {
				fmt.Fprintf(w, "Note: %s updates are blind sets (no transaction, no read), flagged `b` below.\n\n", base)
				break
			}
		}
		fmt.Fprintf(w, "| workload | wins (ops) | median ops ratio | wins (p99) | median p99 ratio | marked |\n")
		fmt.Fprintf(w, "|---|---|---|---|---|---|\n")
		for _, s := range append(c.PerWorkload, c.All) {
			name := s.Workload
			if name == "all" {
				name = "**all**"
			}
			fmt.Fprintf(w, "| %s | %d/%d | %.2fx | %d/%d | %.2fx | %d/%d |\n",
				name, s.WinsOps, s.Cases, s.MedOpsRatio, s.WinsP99, s.Cases, s.MedP99Ratio, s.Gated, s.Total)
		}
		fmt.Fprintf(w, "\n<details><summary>cases</summary>\n\n")
		fmt.Fprintf(w, "| case | n | %s ops | %s ops | ratio | %s p99 µs | %s p99 µs | ratio | note |\n", o.Target, base, o.Target, base)
		fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|\n")
		for _, cc := range c.Cases {
			note := ""
			if cc.Gated {
				note = "* " + cc.GateReason
			}
			if cc.Base.BlindSet {
				note = strings.TrimSpace("b " + note)
			}
			if cc.Target.ErrOps+cc.Base.ErrOps > 0 {
				note = strings.TrimSpace(fmt.Sprintf("%s err_op %d/%d", note, cc.Target.ErrOps, cc.Base.ErrOps))
			}
			fmt.Fprintf(w, "| %s | %d/%d | %.0f | %.0f | %.2fx | %.1f | %.1f | %.2fx | %s |\n",
				cc.Key, cc.Target.N, cc.Base.N, cc.Target.MedOps, cc.Base.MedOps, cc.OpsRatio,
				cc.Target.MedP99, cc.Base.MedP99, cc.P99Ratio, note)
		}
		fmt.Fprintf(w, "\n</details>\n\n")
	}
	writeBestPeer(w, BestPeers(agg, o), o.Target)
	writeResourceTable(w, agg)
	return nil
}

// IssueGoals are the perf issue's throughput goals: the target's median
// ops over the best peer's, per workload (p99 no worse than the best
// peer's). Goal refines them per case.
var IssueGoals = map[string]float64{"W1": 2, "W2": 2, "W2y": 2, "W3": 2, "W4": 1.5, "W5": 2, "W6": 3}

// durableGroupGoal is the goal of durable W4 at 16 threads (group
// commit), which the issue sets apart from W4's.
const durableGroupGoal = 2

// Goal is k's throughput goal (0: none): IssueGoals[k.Workload], but
// durableGroupGoal for durable W4 at 16 threads or more.
func Goal(k CaseKey) float64 {
	if k.Workload == "W4" && k.Durability == "durable" && k.Threads >= 16 {
		return durableGroupGoal
	}
	return IssueGoals[k.Workload]
}

// BestPeerCase is the target against the best baseline of one case: the
// one with the highest median ops, and (maybe another) the lowest median p99.
type BestPeerCase struct {
	Key                CaseKey
	Target             Stats
	OpsPeer, P99Peer   string
	PeerOps, PeerP99   float64
	OpsRatio           float64 // target ops / best peer ops
	P99Ratio           float64 // target p99 / best peer p99
	Goal               float64 // Goal(Key), 0 if none
	MeetsOps, MeetsP99 bool
}

// BestPeers compares the target with the best baseline of every case.
func BestPeers(agg map[CaseKey]map[string]*Stats, o ReportOptions) []BestPeerCase {
	bases := o.baselines(agg)
	var keys []CaseKey
	for k, m := range agg {
		if m[o.Target] != nil {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return lessCase(keys[i], keys[j]) })
	var out []BestPeerCase
	for _, k := range keys {
		t := agg[k][o.Target]
		bc := BestPeerCase{Key: k, Target: *t, Goal: Goal(k)}
		for _, b := range bases {
			s := agg[k][b]
			if s == nil {
				continue
			}
			if bc.OpsPeer == "" || s.MedOps > bc.PeerOps {
				bc.OpsPeer, bc.PeerOps = b, s.MedOps
			}
			if s.MedP99 > 0 && (bc.P99Peer == "" || s.MedP99 < bc.PeerP99) {
				bc.P99Peer, bc.PeerP99 = b, s.MedP99
			}
		}
		if bc.OpsPeer == "" {
			continue
		}
		if bc.PeerOps > 0 {
			bc.OpsRatio = t.MedOps / bc.PeerOps
		}
		if bc.PeerP99 > 0 {
			bc.P99Ratio = t.MedP99 / bc.PeerP99
		}
		bc.MeetsOps = bc.Goal > 0 && bc.OpsRatio >= bc.Goal
		bc.MeetsP99 = bc.PeerP99 > 0 && t.MedP99 <= bc.PeerP99
		out = append(out, bc)
	}
	return out
}

func writeBestPeer(w io.Writer, bcs []BestPeerCase, target string) {
	if len(bcs) == 0 {
		return
	}
	fmt.Fprintf(w, "## %s vs the best peer of each case\n\n", target)
	fmt.Fprintf(w, "Best peer = highest median ops (for ops) / lowest median p99 (for p99) among the baselines. Goal: the perf issue's ops ratio over the best peer (2x for durable W4 at 16 threads); p99 goal: no worse than the best peer. CV marks do not apply here: read the CVs in the tables above.\n\n")
	fmt.Fprintf(w, "| case | %s ops | best peer (ops) | ops ratio | goal | %s p99 µs | best peer (p99) | p99 ratio |\n", target, target)
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|\n")
	keys := make([]CaseKey, len(bcs))
	for i, b := range bcs {
		keys[i] = b.Key
	}
	short := oneGroup(keys)
	for _, b := range bcs {
		label := b.Key.String()
		if short {
			label = b.Key.Label()
		}
		goal := "—"
		if b.Goal > 0 {
			mark := "no"
			if b.MeetsOps {
				mark = "met"
			}
			goal = fmt.Sprintf(">= %.1fx: %s", b.Goal, mark)
		}
		p99 := "worse"
		if b.MeetsP99 {
			p99 = "ok"
		}
		fmt.Fprintf(w, "| %s | %.0f | %s %.0f | %.2fx | %s | %.1f | %s %.1f | %.2fx (%s) |\n",
			label, b.Target.MedOps, b.OpsPeer, b.PeerOps, b.OpsRatio, goal,
			b.Target.MedP99, b.P99Peer, b.PeerP99, b.P99Ratio, p99)
	}
	fmt.Fprintln(w)
}

func writeResourceTable(w io.Writer, agg map[CaseKey]map[string]*Stats) {
	var keys []CaseKey
	for k := range agg {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return lessCase(keys[i], keys[j]) })
	fmt.Fprintf(w, "## All engines (medians)\n\n")
	fmt.Fprintf(w, "| case | engine | n | ops | p99 µs | ops CV | p99 CV | alloc B/op | peak heap MiB | space amp | GC CPU |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range keys {
		var engs []string
		for e := range agg[k] {
			engs = append(engs, e)
		}
		sort.Strings(engs)
		for _, e := range engs {
			s := agg[k][e]
			fmt.Fprintf(w, "| %s | %s | %d | %.0f | %.1f | %.1f%% | %.1f%% | %.0f | %.1f | %.2f | %.1f%% |\n",
				k, e, s.N, s.MedOps, s.MedP99, 100*s.CVOps, 100*s.CVP99, s.AllocOp, s.PeakHeap/(1<<20), s.SpaceAmp, 100*s.GCCPUFrac)
		}
	}
	fmt.Fprintln(w)
}
