package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bwkv/bwkv/checkpoint"
	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/manifest"
	"github.com/bwkv/bwkv/pool"
	"github.com/bwkv/bwkv/vfs"
	"github.com/bwkv/bwkv/wal"
	"github.com/spf13/cobra"
)

func checkCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check DIR",
		Short: "Verify the database's structure and files (read-only; exit 1 on any problem)",
		Long: `check opens the database read-only (recovery runs in memory, nothing is
written), reads every page and verifies key order, fences, sibling links,
parent entries, and that the manifest's data files exist with no orphans.
Each problem is printed on its own line, naming the file where it lies.`,
		Example: `  bwkv check /tmp/db`,
		Args:    args(1, "DIR"),
		RunE: func(c *cobra.Command, a []string) (err error) {
			bar := newSpinner(c, "checking")
			db, err := openRO(a[0])
			if err != nil {
				bar.done()
				return err
			}
			defer closeDB(db, &err)
			// The tree check reads pages through the cache; every frame of
			// every data file is read and verified too, so damage in a
			// frame no page reaches now is found and the file is named.
			cerr := errors.Join(db.Check(context.Background()), verifyDataFiles(a[0]))
			bar.done()
			if cerr == nil {
				fmt.Fprintln(c.OutOrStdout(), "ok")
				return nil
			}
			probs := flatten(cerr)
			w := c.ErrOrStderr()
			fmt.Fprintf(w, "bwkv: check %s: %d problem(s):\n", a[0], len(probs))
			for _, p := range probs {
				fmt.Fprintln(w, "  "+strings.ReplaceAll(p.Error(), "bwkv: ", ""))
			}
			return silentError{cerr}
		},
	}
}

// verifyDataFiles reads every frame of every data file the manifest names
// and returns one error per damaged file (or frame), each naming the file.
// Files the manifest does not name are left alone: a crashed checkpoint's
// partial file is deleted by the next read-write open, and the tree check
// reports a true orphan.
func verifyDataFiles(dir string) error {
	fsys := vfs.Default()
	m, st, err := manifest.Open(fsys, dir, false)
	if errors.Is(err, manifest.ErrNotExist) {
		return nil // never checkpointed: no data files
	}
	if err != nil {
		return err
	}
	m.Close()
	ids := make([]uint64, 0, len(st.Files))
	for id := range st.Files {
		ids = append(ids, uint64(id))
	}
	slices.Sort(ids)
	var errs []error
	for _, id := range ids {
		name := filepath.Join(dir, checkpoint.DataFileName(manifest.FileID(id)))
		f, err := fsys.Open(name)
		if err != nil {
			continue // a missing file: the tree check names it
		}
		pf, err := pool.OpenFile(f, name)
		if err != nil {
			f.Close()
			errs = append(errs, err)
			continue
		}
		for _, addr := range pf.Addrs() {
			if _, err := pf.ReadFrame(addr); err != nil {
				errs = append(errs, err)
			}
		}
		pf.Close()
	}
	return errors.Join(errs...)
}

// flatten returns the leaves of a tree of joined errors.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// logBound reports whether the database in dir binds its log records to
// their LSN: format 3 and later, or a database whose manifest records no
// format yet (a new one). An unreadable manifest reads as the newest
// format; the replay then reports what it finds.
func logBound(dir string) bool {
	m, st, err := manifest.Open(vfs.Default(), dir, false)
	if err != nil {
		return true
	}
	m.Close()
	return st.FormatVersion == 0 || st.FormatVersion >= manifest.LogBoundFormat
}

func walCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "wal",
		Short:   "Inspect the write-ahead log",
		Example: `  bwkv wal dump /tmp/db`,
	}
	c.AddCommand(&cobra.Command{
		Use:   "dump DIR",
		Short: "Print every log record: LSN, txid, type, key and sizes (read-only)",
		Example: `  bwkv wal dump /tmp/db
  bwkv wal dump /tmp/db | grep commit | wc -l`,
		Args: args(1, "DIR"),
		RunE: func(c *cobra.Command, a []string) error {
			if err := mustExist(a[0]); err != nil {
				return err
			}
			fsys, dir := vfs.Default(), filepath.Join(a[0], "wal")
			segs, err := wal.Segments(fsys, dir)
			if err != nil {
				return err
			}
			w := bufio.NewWriter(c.OutOrStdout())
			defer w.Flush()
			if len(segs) == 0 {
				fmt.Fprintln(w, "no log segments")
				return nil
			}
			fmt.Fprintf(w, "%-12s %-8s %-7s %-5s %-12s %-8s %-8s %s\n", "LSN", "TXID", "TYPE", "SEQ", "PREV", "VALUE", "OLD", "KEY")
			n := 0
			ro := wal.ReplayOptions{From: segs[0], Frontier: segs[0], BindLSN: logBound(a[0])}
			res, err := wal.ReplayWith(fsys, dir, ro, func(lsn wal.LSN, r *wal.Record) error {
				n++
				val, old, prev := "-", "-", r.PrevLSN
				switch r.Type {
				case wal.Put, wal.Update:
					val = strconv.Itoa(len(r.Value))
				case wal.CLR:
					val = strconv.Itoa(len(r.Value))
					if r.Tombstone {
						val = "tomb"
					}
				}
				switch {
				case r.OldDeferred:
					old = "image" // in a before-image, if a cut logged one
				case r.HasOld || r.Type == wal.Update:
					old = strconv.Itoa(len(r.OldValue))
				case r.Type == wal.Image:
					old = strconv.Itoa(len(r.Value))
					prev = r.Of // the write it belongs to
				}
				key := ""
				if r.Key != nil {
					key = quote(r.Key)
				}
				fmt.Fprintf(w, "%-12d %-8d %-7s %-5d %-12d %-8s %-8s %s\n", lsn, r.TxID, r.Type, r.Seq, prev, val, old, key)
				return nil
			})
			fmt.Fprintf(w, "%d records in %d segment(s), log ends at LSN %d", n, len(segs), res.End)
			if res.TornBytes > 0 {
				fmt.Fprintf(w, ", torn tail of %d bytes", res.TornBytes)
			}
			fmt.Fprintln(w)
			return err
		},
	})
	return c
}

// quote prints a key readably and unambiguously, truncated when long.
func quote(b []byte) string {
	const max = 64
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + fmt.Sprintf("...(%d bytes)", len(b))
	}
	return strconv.Quote(string(b))
}

func manifestCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "manifest",
		Short:   "Inspect the manifest",
		Example: `  bwkv manifest dump /tmp/db`,
	}
	c.AddCommand(&cobra.Command{
		Use:     "dump DIR",
		Short:   "Print the live manifest's edits in order (read-only)",
		Example: `  bwkv manifest dump /tmp/db`,
		Args:    args(1, "DIR"),
		RunE: func(c *cobra.Command, a []string) error {
			if err := mustExist(a[0]); err != nil {
				return err
			}
			path, edits, err := manifest.ReadEdits(vfs.Default(), a[0])
			w := bufio.NewWriter(c.OutOrStdout())
			defer w.Flush()
			if path != "" {
				fmt.Fprintf(w, "manifest %s\n", path)
			}
			for i, e := range edits {
				fmt.Fprintf(w, "edit %d:%s\n", i, describeEdit(e))
			}
			return err
		},
	})
	return c
}

// describeEdit prints the fields an edit sets; long lists are summarized.
func describeEdit(e *manifest.Edit) string {
	var b strings.Builder
	add := func(has manifest.Field, name string, v any) {
		if e.Has&has != 0 {
			fmt.Fprintf(&b, " %s=%v", name, v)
		}
	}
	add(manifest.HasFormatVersion, "format", e.FormatVersion)
	add(manifest.HasOptions, "options", fmt.Sprintf("%+v", e.Options))
	add(manifest.HasNextPID, "next-pid", e.NextPID)
	add(manifest.HasNextAddr, "next-addr", e.NextAddr)
	add(manifest.HasNextFileID, "next-file", e.NextFileID)
	add(manifest.HasOracle, "oracle", e.Oracle)
	add(manifest.HasNextManifest, "next-manifest", e.NextManifest)
	add(manifest.HasFrontier, "frontier", e.Frontier)
	add(manifest.HasAnalysisStart, "analysis-start", e.AnalysisStart)
	add(manifest.HasStageFile, "stage-file", e.StageFile)
	list := func(name string, n int, show func(i int) string) {
		if n == 0 {
			return
		}
		fmt.Fprintf(&b, " %s[%d]=", name, n)
		for i := 0; i < n && i < 8; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(show(i))
		}
		if n > 8 {
			b.WriteString(",...")
		}
	}
	list("add-files", len(e.AddFiles), func(i int) string { return fmt.Sprint(e.AddFiles[i]) })
	list("remove-ranges", len(e.RemoveRanges), func(i int) string { return fmt.Sprintf("%+v", e.RemoveRanges[i]) })
	list("add-ranges", len(e.AddRanges), func(i int) string { return fmt.Sprintf("%+v", e.AddRanges[i]) })
	list("remove-pages", len(e.RemovePages), func(i int) string { return fmt.Sprint(e.RemovePages[i]) })
	list("set-pages", len(e.SetPages), func(i int) string { return fmt.Sprintf("%+v", e.SetPages[i]) })
	list("file-stats", len(e.FileStats), func(i int) string { return fmt.Sprintf("%+v", e.FileStats[i]) })
	list("pending-deletes", len(e.PendingDeletes), func(i int) string { return fmt.Sprint(e.PendingDeletes[i]) })
	list("deleted-files", len(e.DeletedFiles), func(i int) string { return fmt.Sprint(e.DeletedFiles[i]) })
	if b.Len() == 0 {
		return " (empty)"
	}
	return b.String()
}

func framesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "frames DIR FILE",
		Short: "List a data file's frames and the pages they belong to (read-only)",
		Long: `frames prints each frame of a data file: its logical address, offset and
length, the page (PID) it belongs to, the LSN that produced it, the link to
the page's next-older frame, and what it holds (a base page with its level
and entry count, or a delta with its key and version). A frame that is its
page's newest durable frame in the manifest is marked "head". FILE is a
data file's name inside DIR (e.g. 000001.data) or a path.`,
		Example: `  bwkv frames /tmp/db 000001.data`,
		Args:    args(2, "DIR FILE"),
		RunE:    func(c *cobra.Command, a []string) error { return listFrames(c, a[0], a[1]) },
	}
}

// listFrames prints the frames of data file name (in dir unless a path),
// one line each (framesCmd), and returns the damage it met, joined.
func listFrames(c *cobra.Command, dir, name string) error {
	if err := mustExist(dir); err != nil {
		return err
	}
	fsys := vfs.Default()
	if !strings.ContainsRune(name, filepath.Separator) {
		name = filepath.Join(dir, name)
	}
	heads := map[uint64]uint64{} // addr -> pid
	if m, st, err := manifest.Open(fsys, dir, false); err == nil {
		for pid, addr := range st.Pages {
			heads[addr] = pid
		}
		m.Close()
	}
	f, err := fsys.Open(name)
	if err != nil {
		return err
	}
	pf, err := pool.OpenFile(f, name)
	if err != nil {
		f.Close()
		return err
	}
	defer pf.Close()
	w := bufio.NewWriter(c.OutOrStdout())
	defer w.Flush()
	info := pf.Info()
	fmt.Fprintf(w, "%s: %d frames, %s of frames, addresses %d..%d\n", name, info.Frames, human(info.FrameBytes), info.MinAddr, info.MaxAddr)
	fmt.Fprintf(w, "%-10s %-10s %-7s %-8s %-10s %-10s %s\n", "ADDR", "OFFSET", "LEN", "PID", "LSN", "LINK", "CONTENT")
	var errs []error
	for _, addr := range pf.Addrs() {
		ref, _ := pf.Lookup(addr)
		fr, err := pf.ReadFrame(addr)
		if err != nil {
			fmt.Fprintf(w, "%-10d %-10d %-7d damaged: %v\n", addr, ref.Offset, ref.Len, err)
			errs = append(errs, err)
			continue
		}
		what := frameContent(fr)
		if pid, ok := heads[addr]; ok && pid == fr.PID {
			what += " (head)"
		}
		fmt.Fprintf(w, "%-10d %-10d %-7d %-8d %-10d %-10d %s\n", addr, ref.Offset, ref.Len, fr.PID, fr.LSN, fr.Link, what)
	}
	return errors.Join(errs...)
}

// frameContent describes what a frame holds: a base page (level, entries,
// blob references), a blob, or a delta (kind, key, version, value).
func frameContent(fr *delta.Frame) string {
	switch {
	case fr.Base != nil:
		what := fmt.Sprintf("base level %d, %d entries, %d keys", fr.Base.Level, fr.Base.Len(), fr.Base.Keys)
		if n := len(fr.BlobRefs()); n > 0 {
			what += fmt.Sprintf(", %d blob references", n)
		}
		return what
	case fr.Blob != nil:
		return fmt.Sprintf("blob %d bytes", len(fr.Blob))
	case fr.Delta != nil:
		d := fr.Delta
		kind := "put"
		if d.Flags&delta.Tombstone != 0 {
			kind = "delete"
		}
		if d.Flags&delta.CLR != 0 {
			kind = "clr"
		}
		if refs := fr.BlobRefs(); len(refs) > 0 {
			return fmt.Sprintf("delta %s %s txid %d seq %d value in blob %d (%d bytes)", kind, quote(d.Key), d.TxID, d.Seq, refs[0].Ref.Addr, refs[0].Ref.Len)
		}
		return fmt.Sprintf("delta %s %s txid %d seq %d value %d bytes", kind, quote(d.Key), d.TxID, d.Seq, len(d.Value))
	}
	return ""
}

// human prints a byte count with a binary unit.
func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
