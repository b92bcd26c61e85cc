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

// WriteChart draws two panels, median ops/s and median p99 per case
// (workload/threads) and engine, as grouped bars, into path (.png or .svg).
// Rows of several profiles or read paths get one chart per group, the group
// named in the title; the first group is written to path, the others next
// to it with a suffix.
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

	panel := func(name, ylabel string, val func(*Stats) float64) (*plot.Plot, error) {
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s — %s (median of repeats)", name, title)
		p.Y.Label.Text = ylabel
		p.Legend.Top = true
		width := vg.Points(float64(min(14, 60/max(1, len(engines)))))
		for i, e := range engines {
			vs := make(plotter.Values, len(keys))
			for j, k := range keys {
				if s := agg[k][e]; s != nil {
					vs[j] = val(s)
				}
			}
			bars, err := plotter.NewBarChart(vs, width)
			if err != nil {
				return nil, err
			}
			bars.Color = plotutil.Color(i)
			bars.LineStyle.Width = 0
			bars.Offset = vg.Length(float64(i)-float64(len(engines)-1)/2) * width
			p.Add(bars)
			p.Legend.Add(e, bars)
		}
		p.NominalX(labels...)
		p.Add(plotter.NewGrid())
		// Explicit ranges: the bars' offsets are in canvas units, so the
		// automatic range would clip the outer bars; head room keeps the
		// legend off the bars.
		p.X.Min, p.X.Max = -0.5, float64(len(keys))-0.5
		var top float64
		for _, k := range keys {
			for _, e := range engines {
				if s := agg[k][e]; s != nil {
					top = math.Max(top, val(s))
				}
			}
		}
		p.Y.Min, p.Y.Max = 0, math.Max(top*1.3, 1)
		p.Y.Tick.Marker = siTicks{}
		return p, nil
	}
	pOps, err := panel("throughput", "ops/s", func(s *Stats) float64 { return s.MedOps })
	if err != nil {
		return err
	}
	p99Label := "p99 latency (µs, HDR)"
	if o.P99 == "log2" {
		p99Label = "p99 latency (µs, log2 bucket)"
	}
	pP99, err := panel("p99", p99Label, func(s *Stats) float64 { return s.MedP99 })
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
