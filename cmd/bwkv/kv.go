package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/bwkv/bwkv"
	"github.com/spf13/cobra"
)

// Output formats of get, put, del, scan and dump.
const (
	formatText = "text"
	formatHex  = "hex"
	formatJSON = "json"
)

// printer writes entries in one format. text prints raw bytes (key, a tab,
// the value); hex prints both hex-encoded (binary-safe); json prints one
// object per line, {"key":...,"value":...}, with the bytes as strings.
type printer struct {
	w        *bufio.Writer
	format   string
	keysOnly bool
}

func newPrinter(w io.Writer, format string, keysOnly bool) (*printer, error) {
	switch format {
	case formatText, formatHex, formatJSON:
	default:
		return nil, usageError{fmt.Errorf("--format %q: want text, hex or json", format)}
	}
	return &printer{w: bufio.NewWriter(w), format: format, keysOnly: keysOnly}, nil
}

type jsonEntry struct {
	Key   string  `json:"key"`
	Value *string `json:"value,omitempty"`
}

func (p *printer) entry(k, v []byte) error {
	switch p.format {
	case formatJSON:
		e := jsonEntry{Key: string(k)}
		if !p.keysOnly {
			s := string(v)
			e.Value = &s
		}
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		p.w.Write(b)
	case formatHex:
		p.w.WriteString(hex.EncodeToString(k))
		if !p.keysOnly {
			p.w.WriteByte('\t')
			p.w.WriteString(hex.EncodeToString(v))
		}
	default:
		p.w.Write(k)
		if !p.keysOnly {
			p.w.WriteByte('\t')
			p.w.Write(v)
		}
	}
	return p.w.WriteByte('\n')
}

// value prints a value alone (get): raw, hex, or a JSON object with the key.
func (p *printer) value(k, v []byte) error {
	if p.format == formatJSON {
		return p.entry(k, v)
	}
	if p.format == formatHex {
		p.w.WriteString(hex.EncodeToString(v))
	} else {
		p.w.Write(v)
	}
	return p.w.WriteByte('\n')
}

func (p *printer) flush() error { return p.w.Flush() }

// decodeArg turns a KEY or VALUE argument into bytes: as given, or
// hex-decoded with --hex.
func decodeArg(s string, isHex bool, what string) ([]byte, error) {
	if !isHex {
		return []byte(s), nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, usageError{fmt.Errorf("%s %q is not hex: %w", what, s, err)}
	}
	return b, nil
}

func getCmd() *cobra.Command {
	var format string
	var isHex bool
	c := &cobra.Command{
		Use:   "get DIR KEY",
		Short: "Print the value of KEY (exit 1 if it is missing)",
		Example: `  bwkv get /tmp/db greeting
  bwkv get /tmp/db --hex 00ff --format hex`,
		Args: args(2, "DIR KEY"),
		RunE: func(c *cobra.Command, a []string) (err error) {
			p, err := newPrinter(c.OutOrStdout(), format, false)
			if err != nil {
				return err
			}
			key, err := decodeArg(a[1], isHex, "KEY")
			if err != nil {
				return err
			}
			db, err := openRO(a[0])
			if err != nil {
				return err
			}
			defer closeDB(db, &err)
			v, err := db.Get(key)
			if errors.Is(err, bwkv.ErrNotFound) {
				return fmt.Errorf("key %s not found", strconv.Quote(string(key)))
			}
			if err != nil {
				return err
			}
			if err := p.value(key, v); err != nil {
				return err
			}
			return p.flush()
		},
	}
	c.Flags().StringVar(&format, "format", formatText, "output format: text, hex or json")
	c.Flags().BoolVar(&isHex, "hex", false, "KEY is hex-encoded")
	return c
}

// echo prints the entry a put or del wrote with --format hex or json (one
// line, as scan prints it; a del's without a value); text prints nothing.
func echo(c *cobra.Command, format string, k, v []byte, del bool) error {
	p, err := newPrinter(c.OutOrStdout(), format, del)
	if err != nil || format == formatText {
		return err
	}
	if err := p.entry(k, v); err != nil {
		return err
	}
	return p.flush()
}

func putCmd() *cobra.Command {
	var isHex bool
	var format string
	c := &cobra.Command{
		Use:   "put DIR KEY VALUE",
		Short: "Set KEY to VALUE (creates the database if DIR holds none)",
		Example: `  bwkv put /tmp/db greeting hello
  bwkv put /tmp/db --hex 00ff 0a0b
  bwkv put /tmp/db greeting hello --format json   # prints {"key":"greeting","value":"hello"}`,
		Args: args(3, "DIR KEY VALUE"),
		RunE: func(c *cobra.Command, a []string) (err error) {
			if _, err := newPrinter(io.Discard, format, false); err != nil {
				return err
			}
			key, err := decodeArg(a[1], isHex, "KEY")
			if err != nil {
				return err
			}
			val, err := decodeArg(a[2], isHex, "VALUE")
			if err != nil {
				return err
			}
			db, err := openRW(a[0], true)
			if err != nil {
				return err
			}
			defer closeDB(db, &err)
			if err := db.Put(key, val); err != nil {
				return err
			}
			return echo(c, format, key, val, false)
		},
	}
	c.Flags().BoolVar(&isHex, "hex", false, "KEY and VALUE are hex-encoded")
	c.Flags().StringVar(&format, "format", formatText, "print the entry written: text (nothing), hex or json")
	return c
}

func delCmd() *cobra.Command {
	var isHex bool
	var format string
	c := &cobra.Command{
		Use:     "del DIR KEY",
		Aliases: []string{"delete"},
		Short:   "Delete KEY (deleting a missing key is not an error)",
		Example: `  bwkv del /tmp/db greeting
  bwkv del /tmp/db greeting --format json   # prints {"key":"greeting"}`,
		Args: args(2, "DIR KEY"),
		RunE: func(c *cobra.Command, a []string) (err error) {
			if _, err := newPrinter(io.Discard, format, true); err != nil {
				return err
			}
			key, err := decodeArg(a[1], isHex, "KEY")
			if err != nil {
				return err
			}
			db, err := openRW(a[0], false)
			if err != nil {
				return err
			}
			defer closeDB(db, &err)
			if err := db.Delete(key); err != nil {
				return err
			}
			return echo(c, format, key, nil, true)
		},
	}
	c.Flags().BoolVar(&isHex, "hex", false, "KEY is hex-encoded")
	c.Flags().StringVar(&format, "format", formatText, "print the key deleted: text (nothing), hex or json")
	return c
}

type scanOpts struct {
	prefix, start, end string
	reverse, keysOnly  bool
	limit              int
	format             string
	isHex              bool
}

func scanCmd() *cobra.Command {
	var o scanOpts
	c := &cobra.Command{
		Use:   "scan DIR",
		Short: "Print the keys and values in a range, in key order",
		Example: `  bwkv scan /tmp/db --prefix user:
  bwkv scan /tmp/db --start a --end m --reverse --limit 10 --format json
  bwkv scan /tmp/db --keys-only --format hex`,
		Args: args(1, "DIR"),
		RunE: func(c *cobra.Command, a []string) error { return scan(c, a[0], &o) },
	}
	f := c.Flags()
	f.StringVar(&o.prefix, "prefix", "", "only keys with this prefix")
	f.StringVar(&o.start, "start", "", "first key (inclusive)")
	f.StringVar(&o.end, "end", "", "end key (exclusive)")
	f.BoolVar(&o.reverse, "reverse", false, "descending key order")
	f.IntVar(&o.limit, "limit", 0, "print at most this many entries (0: all)")
	f.BoolVar(&o.keysOnly, "keys-only", false, "print keys only")
	f.StringVar(&o.format, "format", formatText, "output format: text, hex or json")
	f.BoolVar(&o.isHex, "hex", false, "--prefix, --start and --end are hex-encoded")
	return c
}

func dumpCmd() *cobra.Command {
	var o scanOpts
	c := &cobra.Command{
		Use:     "dump DIR",
		Short:   "Print every key and value in key order",
		Example: `  bwkv dump /tmp/db --format json > db.jsonl`,
		Args:    args(1, "DIR"),
		RunE:    func(c *cobra.Command, a []string) error { return scan(c, a[0], &o) },
	}
	c.Flags().StringVar(&o.format, "format", formatText, "output format: text, hex or json")
	c.Flags().BoolVar(&o.keysOnly, "keys-only", false, "print keys only")
	return c
}

func scan(c *cobra.Command, dir string, o *scanOpts) (err error) {
	p, err := newPrinter(c.OutOrStdout(), o.format, o.keysOnly)
	if err != nil {
		return err
	}
	if o.limit < 0 {
		return usageError{fmt.Errorf("--limit %d < 0", o.limit)}
	}
	var bounds bwkv.IterOptions
	if o.prefix != "" && (o.start != "" || o.end != "") {
		return usageError{errors.New("--prefix excludes --start and --end")}
	}
	if o.prefix != "" {
		pre, err := decodeArg(o.prefix, o.isHex, "--prefix")
		if err != nil {
			return err
		}
		bounds.LowerBound, bounds.UpperBound = pre, prefixEnd(pre)
	}
	if o.start != "" {
		if bounds.LowerBound, err = decodeArg(o.start, o.isHex, "--start"); err != nil {
			return err
		}
	}
	if o.end != "" {
		if bounds.UpperBound, err = decodeArg(o.end, o.isHex, "--end"); err != nil {
			return err
		}
	}
	db, err := openRO(dir)
	if err != nil {
		return err
	}
	defer closeDB(db, &err)
	return db.View(func(s *bwkv.Snapshot) error {
		it, err := s.NewIter(&bounds)
		if err != nil {
			return err
		}
		defer it.Close()
		first, next := it.First, it.Next
		if o.reverse {
			first, next = it.Last, it.Prev
		}
		n := 0
		for ok := first(); ok && (o.limit == 0 || n < o.limit); ok = next() {
			if err := p.entry(it.Key(), it.Value()); err != nil {
				return err
			}
			n++
		}
		if err := it.Error(); err != nil {
			return err
		}
		return p.flush()
	})
}

// prefixEnd returns the smallest key above every key with prefix pre, or
// nil when there is none (pre is all 0xff).
func prefixEnd(pre []byte) []byte {
	end := bytes.Clone(pre)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
