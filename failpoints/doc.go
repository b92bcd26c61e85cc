// Package failpoints is the catalogue of named failpoints on bwkv's protocol
// steps and the helper that fires them.
//
// Internal to bwkv; no API stability promise.
//
// Every protocol step calls Hit with a name from the catalogue (catalogue.go).
// In a normal build Hit is an empty function the compiler inlines away. Built
// with `-tags failpoints`, Hit reads BWKV_FAILPOINT=name:N[:action] from the
// environment once and, at the N-th hit of that name, performs the action:
// "kill" (default) sends SIGKILL to the process itself, so no deferred code
// runs (a panic is not a crash); "panic" panics. The crash matrix
// (TESTING.md layer 3) re-executes a test binary as a child with this
// variable set and checks invariants I1–I6 after reopening.
package failpoints
