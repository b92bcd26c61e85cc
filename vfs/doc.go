// Package vfs is the file-system interface every file bwkv touches goes
// through: the OS implementation, an in-memory crash-clone file system for
// power-loss tests, and an error-injecting wrapper for I/O-error tests.
//
// vfs knows nothing of the engine. Unlike the other packages it is public:
// users may pass their own FS through Options.FS.
package vfs
