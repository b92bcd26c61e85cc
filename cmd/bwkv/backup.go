package main

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bwkv/bwkv"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// progress shows a progress bar on stdout only when stdout is a terminal,
// so scripts and pipes see clean output. A nil *progress is inert.
type progress struct{ bar *progressbar.ProgressBar }

func isTerminal(c *cobra.Command) bool {
	f, ok := c.OutOrStdout().(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newBytesBar returns a byte-count bar (max -1: unknown total).
func newBytesBar(c *cobra.Command, max int64, desc string) *progress {
	if !isTerminal(c) {
		return nil
	}
	return &progress{bar: progressbar.DefaultBytes(max, desc)}
}

// newSpinner returns an indeterminate bar for work of unknown length.
func newSpinner(c *cobra.Command, desc string) *progress {
	if !isTerminal(c) {
		return nil
	}
	return &progress{bar: progressbar.NewOptions(-1, progressbar.OptionSetDescription(desc),
		progressbar.OptionSpinnerType(14), progressbar.OptionClearOnFinish())}
}

func (p *progress) add(n int) {
	if p != nil {
		_ = p.bar.Add(n)
	}
}

func (p *progress) done() {
	if p != nil {
		_ = p.bar.Finish()
		_ = p.bar.Clear()
	}
}

// countWriter feeds the bar with the bytes going through it.
type countWriter struct {
	w io.Writer
	p *progress
}

func (c countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.p.add(n)
	return n, err
}

type countReader struct {
	r io.Reader
	p *progress
}

func (c countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.add(n)
	return n, err
}

func backupCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "backup DIR FILE",
		Short: "Write a backup stream of the database to FILE (read-only open; - for stdout)",
		Long: `backup opens the database read-only, takes a snapshot and writes it as a
versioned, checksummed stream (see Snapshot.WriteTo). FILE is written to a
temporary name beside it, synced and renamed, so an interrupted backup never
leaves a partial FILE. An existing FILE is not overwritten.`,
		Example: `  bwkv backup /tmp/db /backups/db-2026-01-01.bwkv
  bwkv restore /backups/db-2026-01-01.bwkv /tmp/db-restored`,
		Args: args(2, "DIR FILE"),
		RunE: func(c *cobra.Command, a []string) (err error) {
			dir, file := a[0], a[1]
			db, err := openRO(dir)
			if err != nil {
				return err
			}
			defer closeDB(db, &err)
			snap, err := db.NewSnapshot()
			if err != nil {
				return err
			}
			defer snap.Close()
			if file == "-" {
				w := bufio.NewWriterSize(c.OutOrStdout(), 1<<20)
				if _, err := snap.WriteTo(w); err != nil {
					return err
				}
				return w.Flush()
			}
			if _, err := os.Stat(file); err == nil {
				return fmt.Errorf("backup %s: %w", file, fs.ErrExist)
			}
			tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-")
			if err != nil {
				return err
			}
			defer func() {
				if err != nil {
					tmp.Close()
					os.Remove(tmp.Name())
				}
			}()
			bar := newBytesBar(c, -1, "backup")
			bw := bufio.NewWriterSize(countWriter{tmp, bar}, 1<<20)
			n, err := snap.WriteTo(bw)
			if err == nil {
				err = bw.Flush()
			}
			bar.done()
			if err != nil {
				return err
			}
			if err := tmp.Sync(); err != nil {
				return err
			}
			if err := tmp.Close(); err != nil {
				return err
			}
			if err := os.Link(tmp.Name(), file); err != nil { // fails if FILE appeared meanwhile
				return fmt.Errorf("backup %s: %w", file, err)
			}
			os.Remove(tmp.Name())
			if d, derr := os.Open(filepath.Dir(file)); derr == nil {
				_ = d.Sync()
				d.Close()
			}
			fmt.Fprintf(c.ErrOrStderr(), "backup of %s written to %s (%s)\n", dir, file, human(n))
			return nil
		},
	}
}

func restoreCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "restore FILE DIR",
		Short: "Build a new database in DIR from a backup FILE (all or nothing; - for stdin)",
		Long: `restore verifies the stream as it reads it and builds the database in a
temporary directory beside DIR, then renames it into place: a damaged
stream or an interrupted restore leaves DIR absent. DIR must not exist or
must be an empty directory.`,
		Example: `  bwkv restore /backups/db.bwkv /tmp/db-restored`,
		Args:    args(2, "FILE DIR"),
		RunE: func(c *cobra.Command, a []string) error {
			file, dir := a[0], a[1]
			var r io.Reader = c.InOrStdin()
			size := int64(-1)
			if file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer f.Close()
				if info, err := f.Stat(); err == nil {
					size = info.Size()
				}
				r = f
			}
			bar := newBytesBar(c, size, "restore")
			err := bwkv.Restore(dir, bufio.NewReaderSize(countReader{r, bar}, 1<<20), nil)
			bar.done()
			if err != nil {
				return err
			}
			fmt.Fprintf(c.ErrOrStderr(), "restored %s into %s\n", file, dir)
			return nil
		},
	}
}

func compactCmd() *cobra.Command {
	var rounds int
	c := &cobra.Command{
		Use:     "compact DIR",
		Short:   "Consolidate every page, checkpoint and collect garbage until the data files settle; report bytes reclaimed",
		Example: `  bwkv compact /tmp/db`,
		Args:    args(1, "DIR"),
		RunE: func(c *cobra.Command, a []string) (err error) {
			dir := a[0]
			before, err := dirSize(dir)
			if err != nil {
				return err
			}
			db, err := openRW(dir, false)
			if err != nil {
				return err
			}
			bar := newSpinner(c, "compacting")
			// Compact settles the database (every leaf consolidated, the
			// log rotated, GC rounds until none has work); the rounds
			// after it only confirm that the data files hold still.
			if err := db.Compact(c.Context()); err != nil {
				bar.done()
				db.Close()
				return err
			}
			bar.add(1)
			prev := db.Stats().GC.DataBytes
			n := 0
			for ; n < rounds; n++ {
				if err := db.Checkpoint(); err != nil {
					bar.done()
					db.Close()
					return err
				}
				bar.add(1)
				d := db.Stats().GC.DataBytes
				if d == prev {
					break
				}
				prev = d
			}
			bar.done()
			if err := db.Close(); err != nil {
				return err
			}
			after, err := dirSize(dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "compacted %s in %d round(s): %s -> %s, reclaimed %s\n", dir, n+1, human(before), human(after), human(max(before-after, 0)))
			return nil
		},
	}
	c.Flags().IntVar(&rounds, "max-rounds", 50, "stop after this many checkpoint+GC rounds")
	return c
}

func dirSize(dir string) (int64, error) {
	if err := mustExist(dir); err != nil {
		return 0, err
	}
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}
