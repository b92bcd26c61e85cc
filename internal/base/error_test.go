package base_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/bwkv/bwkv/internal/base"
)

func TestCorruptionErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		file string
		off  int64
		want string
	}{
		{"wal/0000000000000000.log", 42, "bwkv: corruption in wal/0000000000000000.log at offset 42: checksum mismatch"},
		{"MANIFEST-000001", -1, "bwkv: corruption in MANIFEST-000001: checksum mismatch"},
		{"", 7, "bwkv: corruption at offset 7: checksum mismatch"},
		{"", -1, "bwkv: corruption: checksum mismatch"},
	} {
		err := base.CorruptionErrorf(tc.file, tc.off, "checksum %s", "mismatch")
		if err.Error() != tc.want {
			t.Errorf("Error() = %q, want %q", err.Error(), tc.want)
		}
		wrapped := fmt.Errorf("open: %w", err)
		var c *base.CorruptionError
		if !errors.As(wrapped, &c) || c.File != tc.file || c.Offset != tc.off || c.Reason != "checksum mismatch" {
			t.Errorf("errors.As through wrapping: %+v", c)
		}
		if !errors.Is(wrapped, base.ErrCorruption) {
			t.Errorf("%v does not match ErrCorruption", wrapped)
		}
		if errors.Is(wrapped, base.ErrVersion) {
			t.Errorf("%v matches ErrVersion", wrapped)
		}
	}
}
