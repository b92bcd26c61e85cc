package bwkv

// SetTestRecoveryHook installs a function recovery calls before each undo
// step (tests crash the process there).
func SetTestRecoveryHook(f func()) { testRecoveryHook = f }

// SetTestCutHook installs a function the checkpointer runs between a cut
// and its publish.
func SetTestCutHook(f func()) { testCutHook = f }

// SetTestRollbackHook installs a function rollback calls after each
// compensation.
func SetTestRollbackHook(f func(n int)) { testRollbackHook = f }
