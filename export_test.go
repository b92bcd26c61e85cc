package bwkv

// SetTestRecoveryHook installs a function recovery calls before each undo
// step (tests crash the process there).
func SetTestRecoveryHook(f func()) { testRecoveryHook = f }
