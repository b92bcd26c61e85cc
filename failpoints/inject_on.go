//go:build failpoints

package failpoints

import (
	"fmt"
	"os"
	"syscall"
)

// Enabled reports whether failpoints are compiled in (-tags failpoints).
const Enabled = true

// Hit evaluates the failpoint Prefix+name and acts on the value its armed
// term returns: "kill" SIGKILLs the process, "error" makes Hit return an
// injected I/O error that the step handles like its own I/O failing. A
// sleep or pause term acts inside the library before Hit returns. An
// unarmed point, an off term and "skip" (a Skip point's value) do nothing.
// Safe for concurrent use.
func Hit(name string) error {
	switch v := eval(name); v {
	case "":
		return nil
	case ActKill:
		kill(name)
	case ActError:
		// The crash matrix reads this line to know the error was injected.
		fmt.Fprintf(os.Stderr, "failpoint %s injected an error\n", name)
		return fmt.Errorf("failpoint %s: injected I/O error: %w", name, syscall.EIO)
	}
	return nil
}

// Skip evaluates the mutant point Prefix+name: true when it returns "skip",
// so the caller leaves its protocol step out. "kill" works as in Hit. Safe
// for concurrent use.
func Skip(name string) bool {
	switch eval(name) {
	case ActSkip:
		return true
	case ActKill:
		kill(name)
	}
	return false
}

// evaluator is github.com/pingcap/failpoint's Eval, set once by the init
// of package failpoints/armed. The import lives there, not here, so that
// a module importing bwkv never needs pingcap/failpoint's dependencies:
// go mod tidy reads every build tag of every package a program imports,
// and only tests and the crash tools import armed.
var evaluator func(path string) (any, error)

// SetEvaluator installs the function Hit and Skip evaluate a point with.
// Package failpoints/armed calls it from its init; nothing else should.
func SetEvaluator(eval func(path string) (any, error)) { evaluator = eval }

// eval returns the armed term's string value, "" when the point is not
// armed or the term returns nothing (off, sleep, pause, or a count that
// has not come up).
func eval(name string) string {
	if evaluator == nil {
		if os.Getenv("GO_FAILPOINTS") != "" {
			// An armed child that cannot fire would pass every crash
			// test while proving nothing.
			panic("failpoints: GO_FAILPOINTS is set but no evaluator is linked: import _ \"github.com/bwkv/bwkv/failpoints/armed\"")
		}
		return ""
	}
	v, err := evaluator(Prefix + name)
	if err != nil || v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		// A typo in a test's GO_FAILPOINTS should not pass silently as
		// "not armed": the crash matrix would then prove nothing.
		fmt.Fprintf(os.Stderr, "failpoint %s: value %#v is not one of %q, %q, %q\n", name, v, ActKill, ActError, ActSkip)
		return ""
	}
	return s
}

// kill tells the parent which point fired, then dies without running
// deferred code: a panic is not a crash.
func kill(name string) {
	fmt.Fprintf(os.Stderr, "failpoint %s fired\n", name)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
