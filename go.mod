module github.com/bwkv/bwkv

go 1.26.0

require (
	github.com/klauspost/compress v1.20.4
	github.com/pingcap/failpoint v0.0.0-20240528011301-b51a646c7c86
	github.com/puzpuzpuz/xsync/v3 v3.5.1
	github.com/schollz/progressbar/v3 v3.19.1
	github.com/spf13/cobra v1.10.2
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/pingcap/errors v0.11.4 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
)
