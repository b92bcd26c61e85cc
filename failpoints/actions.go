package failpoints

// Prefix is prepended to a catalogue name to form the failpoint's name in
// github.com/pingcap/failpoint, the name GO_FAILPOINTS arms, e.g.
// GO_FAILPOINTS='github.com/bwkv/bwkv/failpoints/wal_before_sync=3*off->return("kill")'.
const Prefix = "github.com/bwkv/bwkv/failpoints/"

// The values an armed term returns (return("kill") and so on).
const (
	ActKill  = "kill"  // SIGKILL the process at this step
	ActError = "error" // the step fails with an injected I/O error
	ActSkip  = "skip"  // a mutant point leaves its step out
)
