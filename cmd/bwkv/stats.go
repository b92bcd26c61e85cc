package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/checkpoint"
	"github.com/bwkv/bwkv/manifest"
	"github.com/bwkv/bwkv/vfs"
	"github.com/spf13/cobra"
)

// diskStats is what `bwkv stats` reports, all read from disk.
type diskStats struct {
	Dir string `json:"dir"`
	// TotalBytes is every file under the directory.
	TotalBytes    int64 `json:"total_bytes"`
	DataBytes     int64 `json:"data_bytes"` // data files on disk (frames, tables, footers)
	FrameBytes    int64 `json:"frame_bytes"`
	LiveBytes     int64 `json:"live_bytes"` // live frame bytes (manifest accounting)
	JunkBytes     int64 `json:"junk_bytes"`
	LogSegments   int   `json:"log_segments"`
	LogBytes      int64 `json:"log_bytes"`
	ManifestBytes int64 `json:"manifest_bytes"`
	OtherBytes    int64 `json:"other_bytes"`

	DataFiles []dataFileStats `json:"data_files"`

	Keys int64 `json:"keys"`
	// KeyValueBytes sums the keys' and values' lengths: the logical data.
	KeyValueBytes int64 `json:"key_value_bytes"`
	// SpaceAmplification is TotalBytes / KeyValueBytes.
	SpaceAmplification float64 `json:"space_amplification"`

	Pages  int `json:"pages"`
	Leaves int `json:"leaves"`
	Depth  int `json:"depth"`
	// ChainHist[i] counts leaves whose delta chain length is in
	// [2^(i-1), 2^i); ChainHist[0] counts empty chains.
	ChainHist [8]int `json:"chain_hist"`

	// RecoveryRecords and RecoveryLosers say how much recovery the next
	// read-write open will do (it ran here in memory only).
	RecoveryRecords uint64 `json:"recovery_records"`
	RecoveryLosers  uint64 `json:"recovery_losers"`
}

type dataFileStats struct {
	Name       string `json:"name"`
	Size       int64  `json:"size"`
	FrameBytes int64  `json:"frame_bytes"`
	LiveBytes  int64  `json:"live_bytes"`
	JunkBytes  int64  `json:"junk_bytes"`
	// State is "live", "pending-delete" (retired, deleted by the next
	// read-write open) or "orphan" (no manifest names it).
	State string `json:"state"`
}

func statsCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "stats DIR",
		Short: "Print sizes, tree shape, data files, log segments and space amplification (read-only)",
		Example: `  bwkv stats /tmp/db
  bwkv stats /tmp/db --json | jq .space_amplification`,
		Args: args(1, "DIR"),
		RunE: func(c *cobra.Command, a []string) error {
			st, err := collectStats(a[0])
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(c.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			printStats(c, st)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func collectStats(dir string) (st *diskStats, err error) {
	if err := mustExist(dir); err != nil {
		return nil, err
	}
	st = &diskStats{Dir: dir}
	files, pending, err := manifestFiles(dir)
	if err != nil {
		return nil, err
	}
	if err := st.walk(dir, files, pending); err != nil {
		return nil, err
	}
	db, err := openRO(dir)
	if err != nil {
		return nil, err
	}
	defer closeDB(db, &err)
	if err := st.scan(db); err != nil {
		return nil, err
	}
	s := db.Stats()
	st.Pages, st.Leaves, st.Depth, st.ChainHist = s.Tree.Pages, s.Tree.Leaves, s.Tree.Depth, s.Tree.ChainHist
	st.RecoveryRecords, st.RecoveryLosers = s.Recovery.RecordsReplayed, s.Recovery.LosersUndone
	if st.KeyValueBytes > 0 {
		st.SpaceAmplification = float64(st.TotalBytes) / float64(st.KeyValueBytes)
	}
	return st, nil
}

// manifestFiles returns the manifest's accounting of the data files, by
// file name, and the names of those pending deletion (read only; none if
// the database was never checkpointed).
func manifestFiles(dir string) (files map[string]manifest.FileMeta, pending map[string]bool, err error) {
	files, pending = map[string]manifest.FileMeta{}, map[string]bool{}
	m, ms, err := manifest.Open(vfs.Default(), dir, false)
	if errors.Is(err, manifest.ErrNotExist) {
		return files, pending, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for id, f := range ms.Files {
		files[checkpoint.DataFileName(id)] = f
	}
	for id := range ms.PendingDeletes {
		pending[checkpoint.DataFileName(id)] = true
	}
	m.Close()
	return files, pending, nil
}

// walk adds up the sizes of the files under dir by kind, each data file
// with the manifest's accounting of it.
func (st *diskStats) walk(dir string, files map[string]manifest.FileMeta, pending map[string]bool) error {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		size := info.Size()
		st.TotalBytes += size
		rel, _ := filepath.Rel(dir, path)
		name := d.Name()
		switch {
		case strings.HasSuffix(name, ".data") && !strings.Contains(rel, string(filepath.Separator)):
			st.addDataFile(name, size, files, pending)
		case strings.HasPrefix(rel, "wal"+string(filepath.Separator)) && strings.HasSuffix(name, ".log"):
			st.LogSegments++
			st.LogBytes += size
		case strings.HasPrefix(name, "MANIFEST") || name == "CURRENT":
			st.ManifestBytes += size
		default:
			st.OtherBytes += size
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(st.DataFiles, func(i, j int) bool { return st.DataFiles[i].Name < st.DataFiles[j].Name })
	return nil
}

// addDataFile accounts one data file: live (the manifest's frame, live
// and junk bytes), pending deletion or orphan (all junk).
func (st *diskStats) addDataFile(name string, size int64, files map[string]manifest.FileMeta, pending map[string]bool) {
	st.DataBytes += size
	df := dataFileStats{Name: name, Size: size, State: "orphan"}
	if f, ok := files[name]; ok {
		df.FrameBytes, df.LiveBytes, df.JunkBytes, df.State = f.Total, f.Live, f.Total-f.Live, "live"
	} else if pending[name] {
		df.State = "pending-delete"
	}
	if df.State != "live" {
		df.JunkBytes = size
	}
	st.FrameBytes += df.FrameBytes
	st.LiveBytes += df.LiveBytes
	st.JunkBytes += df.JunkBytes
	st.DataFiles = append(st.DataFiles, df)
}

// scan counts the logical data with a full scan, which also brings every
// leaf in, so the chain histogram covers all of them.
func (st *diskStats) scan(db *bwkv.DB) error {
	return db.View(func(s *bwkv.Snapshot) error {
		it, err := s.NewIter(nil)
		if err != nil {
			return err
		}
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			st.Keys++
			st.KeyValueBytes += int64(len(it.Key()) + len(it.Value()))
		}
		return it.Error()
	})
}

func printStats(c *cobra.Command, st *diskStats) {
	w := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
	defer w.Flush()
	p := func(k string, v any) { fmt.Fprintf(w, "%s\t%v\n", k, v) }
	p("directory", st.Dir)
	p("total size", human(st.TotalBytes))
	p("keys", st.Keys)
	p("key+value bytes", human(st.KeyValueBytes))
	p("space amplification", fmt.Sprintf("%.2fx (total size / key+value bytes)", st.SpaceAmplification))
	p("data files", fmt.Sprintf("%d, %s (frames %s: live %s, junk %s)", len(st.DataFiles), human(st.DataBytes), human(st.FrameBytes), human(st.LiveBytes), human(st.JunkBytes)))
	p("log segments", fmt.Sprintf("%d, %s", st.LogSegments, human(st.LogBytes)))
	p("manifest", human(st.ManifestBytes))
	if st.OtherBytes > 0 {
		p("other files", human(st.OtherBytes))
	}
	p("tree", fmt.Sprintf("%d pages, %d leaves, depth %d", st.Pages, st.Leaves, st.Depth))
	var hist []string
	for i, n := range st.ChainHist {
		lo, hi := 0, 1
		if i > 0 {
			lo, hi = 1<<(i-1), 1<<i
		}
		if n > 0 {
			hist = append(hist, fmt.Sprintf("[%d,%d):%d", lo, hi, n))
		}
	}
	p("leaf chain lengths", strings.Join(hist, " "))
	if st.RecoveryRecords > 0 || st.RecoveryLosers > 0 {
		p("pending recovery", fmt.Sprintf("%d log records to redo, %d transactions to undo (done in memory here; the next read-write open makes it durable)", st.RecoveryRecords, st.RecoveryLosers))
	}
	for _, f := range st.DataFiles {
		live := 0.0
		if f.FrameBytes > 0 {
			live = 100 * float64(f.LiveBytes) / float64(f.FrameBytes)
		}
		fmt.Fprintf(w, "  %s\t%s, %.0f%% live, junk %s, %s\n", f.Name, human(f.Size), live, human(f.JunkBytes), f.State)
	}
}
