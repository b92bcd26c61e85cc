package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bwkv/bwkv"
	"github.com/spf13/cobra"
)

// Exit codes: 0 success, 1 a failed command (an error, a missing key, a
// check that found problems), 2 a usage error.
const (
	exitFailed = 1
	exitUsage  = 2
)

// usageError marks a wrong invocation (exit 2).
type usageError struct{ error }

// silentError makes the command fail with exit 1 without printing again:
// the command already printed what went wrong (check's problem list).
type silentError struct{ error }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the tool and returns the exit code. Errors print once, on
// stderr, prefixed once with "bwkv: ".
func run(args []string, stdout, stderr io.Writer) int {
	root := rootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var se silentError
	if errors.As(err, &se) {
		return exitFailed
	}
	fmt.Fprintln(stderr, "bwkv: "+strings.ReplaceAll(err.Error(), "bwkv: ", ""))
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown flag") {
		fmt.Fprintln(stderr, "Run 'bwkv --help' for usage.")
		return exitUsage
	}
	return exitFailed
}

func rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "bwkv",
		Short: "Inspect, query, back up and restore bwkv databases",
		Long: `bwkv is the command-line tool of the bwkv key-value engine.
The database directory is the first argument, except for restore, which
reads the backup FILE given first into the new DIR given last. Read-only commands
(get, scan, dump, check, stats, wal dump, manifest dump, frames, backup)
open the database read-only: they write no byte and can run beside each
other, but not beside a process that has the database open for writing.`,
		Example: `  bwkv put /tmp/db greeting hello
  bwkv get /tmp/db greeting
  bwkv scan /tmp/db --prefix user: --format json
  bwkv backup /tmp/db db.bak && bwkv restore db.bak /tmp/db2`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(getCmd(), putCmd(), delCmd(), scanCmd(), dumpCmd(),
		checkCmd(), statsCmd(), walCmd(), manifestCmd(), framesCmd(),
		backupCmd(), restoreCmd(), compactCmd(), demoCmd())
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			c.Example = "  bwkv help scan"
		}
	}
	return root
}

// args returns a cobra argument check that reports a usage error.
func args(n int, names string) cobra.PositionalArgs {
	return func(c *cobra.Command, a []string) error {
		if len(a) != n {
			return usageError{fmt.Errorf("%s: want %d argument(s) (%s), got %d", strings.TrimPrefix(c.CommandPath(), "bwkv "), n, names, len(a))}
		}
		return nil
	}
}

// openRO opens dir read-only: nothing is written, recovery runs in memory.
func openRO(dir string) (*bwkv.DB, error) {
	if err := mustExist(dir); err != nil {
		return nil, err
	}
	return bwkv.Open(dir, &bwkv.Options{ReadOnly: true})
}

// openRW opens an existing database in dir for writing.
func openRW(dir string, create bool) (*bwkv.DB, error) {
	if !create {
		if err := mustExist(dir); err != nil {
			return nil, err
		}
	}
	return bwkv.Open(dir, &bwkv.Options{ErrorIfNotExist: !create})
}

func mustExist(dir string) error {
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("open %s: no such database directory", dir)
	}
	if !info.IsDir() {
		return fmt.Errorf("open %s: not a directory", dir)
	}
	return nil
}

// closeDB closes db and reports a close error unless err is set already.
func closeDB(db *bwkv.DB, err *error) {
	if cerr := db.Close(); cerr != nil && *err == nil {
		*err = cerr
	}
}
