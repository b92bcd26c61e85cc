//go:build !failpoints

package failpoints

// Enabled reports whether failpoints are compiled in (-tags failpoints).
const Enabled = false

// Hit marks one pass through the named protocol step. Without the
// failpoints build tag it does nothing.
func Hit(name string) {}
