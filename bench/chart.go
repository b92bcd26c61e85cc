package bench

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteChart draws two panels, median ops/s and median p99 (log scale) per
// case (workload/threads) and engine, as grouped bars, into path (.png or
// .svg). Rows of several groups (CaseKey.Group: profile, prefill, read
// path, durability, cache) get one chart per group, the group named in the
// title; the first group is written to path, the others next to it with a
// suffix.
func WriteChart(path string, rows []Result, o ReportOptions) ([]string, error) {
	agg := Aggregate(rows, o)
	groups := map[string][]CaseKey{}
	for k := range agg {
		groups[k.Group()] = append(groups[k.Group()], k)
	}
	var names []string
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	var written []string
	for i, g := range names {
		p := path
		if i > 0 {
			ext := filepath.Ext(path)
			p = strings.TrimSuffix(path, ext) + fmt.Sprintf("-%d", i+1) + ext
		}
		if err := writeChartGroup(p, g, groups[g], agg, o); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	return written, nil
}

func writeChartGroup(path, title string, keys []CaseKey, agg map[CaseKey]map[string]*Stats, o ReportOptions) error {
	sort.Slice(keys, func(i, j int) bool { return lessCase(keys[i], keys[j]) })
	engSet := map[string]bool{}
	for _, k := range keys {
		for e := range agg[k] {
			engSet[e] = true
		}
	}
	var engines []string
	for e := range engSet {
		engines = append(engines, e)
	}
	sort.Strings(engines)
	labels := make([]string, len(keys))
	for i, k := range keys {
		labels[i] = k.Label()
	}

	pn := chartPanel{title: title, keys: keys, engines: engines, labels: labels, agg: agg}
	pOps, pP99, err := pn.panels(o)
	if err != nil {
		return err
	}
	wd := vg.Length(max(640, 60*len(keys)*max(1, len(engines))/2))
	ht := vg.Length(720)
	var c interface {
		vg.CanvasSizer
	}
	var save func(*os.File) error
	if strings.EqualFold(filepath.Ext(path), ".svg") {
		sc := vgsvg.New(wd, ht)
		c = sc
		save = func(f *os.File) error { _, err := sc.WriteTo(f); return err }
	} else {
		ic := vgimg.New(wd, ht)
		c = ic
		save = func(f *os.File) error { _, err := vgimg.PngCanvas{Canvas: ic}.WriteTo(f); return err }
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(12), PadX: vg.Points(8), PadTop: vg.Points(6), PadBottom: vg.Points(6)}
	canvases := plot.Align([][]*plot.Plot{{pOps}, {pP99}}, tiles, dc)
	pOps.Draw(canvases[0][0])
	pP99.Draw(canvases[1][0])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := save(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// chartPanel is what the panels of one chart share: its cases (x axis),
// engines (one bar color each) and their stats.
type chartPanel struct {
	title   string
	keys    []CaseKey
	engines []string
	labels  []string
	agg     map[CaseKey]map[string]*Stats
}

// panels are the chart's two panels: median ops/s on a linear axis and
// median p99 on a log-scale one.
func (c chartPanel) panels(o ReportOptions) (ops, p99 *plot.Plot, err error) {
	ops, err = c.bars("throughput", "ops/s", func(s *Stats) float64 { return s.MedOps }, false)
	if err != nil {
		return nil, nil, err
	}
	p99Label := "p99 latency (µs, HDR, log scale)"
	if o.P99 == "log2" {
		p99Label = "p99 latency (µs, log2 bucket, log scale)"
	}
	p99, err = c.bars("p99", p99Label, func(s *Stats) float64 { return s.MedP99 }, true)
	return ops, p99, err
}

// bars draws one panel: a bar per case and engine of val. With logY the
// value axis is log-scale, as for p99s, which span decades within one
// chart (a cached read against an fsync); the bars rise from the axis
// bottom.
func (c chartPanel) bars(name, ylabel string, val func(*Stats) float64, logY bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s — %s (median of repeats)", name, c.title)
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	width := vg.Points(float64(min(14, 60/max(1, len(c.engines)))))
	lo, hi := math.Inf(1), 0.0
	for i, e := range c.engines {
		vs := make(plotter.Values, len(c.keys))
		for j, k := range c.keys {
			if s := c.agg[k][e]; s != nil {
				vs[j] = val(s)
			}
			if vs[j] > 0 {
				lo, hi = math.Min(lo, vs[j]), math.Max(hi, vs[j])
			}
		}
		bars, err := plotter.NewBarChart(vs, width)
		if err != nil {
			return nil, err
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(i)-float64(len(c.engines)-1)/2) * width
		p.Add(bars)
		p.Legend.Add(e, bars)
	}
	p.NominalX(c.labels...)
	p.Add(plotter.NewGrid())
	// Explicit ranges: the bars' offsets are in canvas units, so the
	// automatic range would clip the outer bars; head room keeps the
	// legend off the bars.
	p.X.Min, p.X.Max = -0.5, float64(len(c.keys))-0.5
	if !logY {
		p.Y.Min, p.Y.Max = 0, math.Max(hi*1.3, 1)
		p.Y.Tick.Marker = siTicks{}
		return p, nil
	}
	if hi == 0 {
		lo, hi = 1, 1
	}
	p.Y.Scale = floorLogScale{}
	p.Y.Min = math.Pow(10, math.Floor(math.Log10(lo)))
	p.Y.Max = hi * 4
	p.Y.Tick.Marker = logTicks{}
	return p, nil
}

// floorLogScale is a log scale on which a value at or below the axis
// minimum (a bar's base, 0) sits at the bottom instead of panicking.
type floorLogScale struct{}

func (floorLogScale) Normalize(min, max, x float64) float64 {
	return plot.LogScale{}.Normalize(min, max, math.Max(x, min))
}

// logTicks are gonum's log ticks (without the second tick it puts on each
// power of ten), labelled at 1, 2 and 5 of each decade with SI suffixes.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.LogTicks{}).Ticks(lo, hi) {
		if len(out) > 0 && t.Value == out[len(out)-1].Value {
			continue
		}
		t.Label = ""
		m := t.Value / math.Pow(10, math.Floor(math.Log10(t.Value)+1e-9))
		if near := math.Round(m); math.Abs(m-near) < 1e-6 && (near == 1 || near == 2 || near == 5) {
			t.Label = si(t.Value)
		}
		out = append(out, t)
	}
	return out
}

// siTicks labels the default ticks with SI suffixes (250k, 1.5M).
type siTicks struct{}

func (siTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = si(ts[i].Value)
		}
	}
	return ts
}

func si(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
