// Package failpoints is the catalogue of named failpoints on bwkv's protocol
// steps and the helpers that fire them, built on github.com/pingcap/failpoint.
//
// Internal to bwkv; no API stability promise.
//
// Every protocol step calls Hit with a name from the catalogue
// (catalogue.go) and handles a returned error like its own I/O failing.
// In a normal build Hit and Skip are empty functions the compiler inlines
// away: no failpoint code or symbol reaches a binary (prod_test.sh fast
// checks the demo binary with go tool nm). Built with `-tags failpoints`
// into a binary that imports package failpoints/armed (tests and crash
// tools do; the library never does, so users' modules never need
// pingcap/failpoint's dependencies), Hit calls failpoint.Eval on
// Prefix+name, armed by the library's GO_FAILPOINTS variable and grammar,
// and acts on the returned value:
//
//	return("kill")   SIGKILL of the process itself: no deferred code runs
//	                 (a panic is not a crash)
//	return("error")  the step fails with an injected I/O error (EIO)
//	sleep(ms), pause widen race windows (the library acts, Hit returns nil)
//
// for example
//
//	GO_FAILPOINTS='github.com/bwkv/bwkv/failpoints/wal_before_sync=3*off->return("kill")'
//
// kills the process at the fourth log sync. The crash matrix (the root
// package's TestFailpointMatrix) re-executes the test binary as a child
// with GO_FAILPOINTS set and checks the crash invariants after reopening.
//
// Mutants: a step the crash suite must prove it needs is guarded by
// Skip(name) with a name from Mutants; armed with return("skip"), Skip
// returns true and the step is left out. prod_test.sh mutants arms each
// mutant in turn and requires the crash tests to fail.
package failpoints
