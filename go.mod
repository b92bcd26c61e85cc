module github.com/bwkv/bwkv

go 1.26.0

require (
	github.com/pingcap/failpoint v0.0.0-20240528011301-b51a646c7c86
	github.com/puzpuzpuz/xsync/v3 v3.5.1
	golang.org/x/sys v0.50.0
)

require github.com/pingcap/errors v0.11.4 // indirect
