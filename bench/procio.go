package bench

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// ProcIO holds the counters of /proc/self/io that the space columns use
// (proc(5)). WriteBytes is what the process caused to be sent to the
// storage layer, charged when a page-cache page is dirtied (so a page
// dirtied twice before its writeback counts once, and a page dirtied,
// written back and dirtied again counts twice); CancelledWriteBytes is
// the part of it that never reached the device because the dirty pages
// were truncated (a file deleted or truncated before its writeback);
// WChar is the bytes passed to write-like system calls, page cache or not.
type ProcIO struct {
	WChar, WriteBytes, CancelledWriteBytes uint64
}

// Sub returns the counters accumulated since a.
func (c ProcIO) Sub(a ProcIO) ProcIO {
	return ProcIO{
		WChar:               c.WChar - a.WChar,
		WriteBytes:          c.WriteBytes - a.WriteBytes,
		CancelledWriteBytes: c.CancelledWriteBytes - a.CancelledWriteBytes,
	}
}

// parseProcIO parses the "name: value" lines of /proc/self/io; ok is
// false unless write_bytes is present.
func parseProcIO(b []byte) (c ProcIO, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, val, found := strings.Cut(sc.Text(), ":")
		if !found {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(val), 10, 64)
		if err != nil {
			continue
		}
		switch strings.TrimSpace(name) {
		case "wchar":
			c.WChar = v
		case "write_bytes":
			c.WriteBytes, ok = v, true
		case "cancelled_write_bytes":
			c.CancelledWriteBytes = v
		}
	}
	return c, ok
}
