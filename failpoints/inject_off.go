//go:build !failpoints

package failpoints

// Enabled reports whether failpoints are compiled in (-tags failpoints).
const Enabled = false

// Hit marks one pass through the named protocol step. Without the
// failpoints build tag it does nothing and the compiler inlines it away, so
// a normal binary carries no failpoint code.
func Hit(name string) error { return nil }

// Skip reports whether the named protocol step is to be left out (a
// mutant). Without the failpoints build tag it is always false.
func Skip(name string) bool { return false }
