package ibdiag

import (
	"strings"
	"testing"
)

func TestPrettyPrint(t *testing.T) {
	tests := []struct {
		start, width int
		in, want     string
	}{
		{26, 74, "use config file, default: /etc/infiniband-diags/ibdiag.conf", "use config file, default: /etc/infiniband-diags/ibdiag.conf"},
		{0, 5, "aaa bbb ccc", "aaa \nbbb ccc"},
		{2, 7, "aaa bbb ccc", "aaa \n  bbb ccc"},
		{0, 3, "abcdefgh ij", "abcdefgh\nij"},
	}
	for _, tt := range tests {
		var b strings.Builder
		PrettyPrint(&b, tt.start, tt.width, tt.in)
		if b.String() != tt.want {
			t.Errorf("PrettyPrint(%d, %d, %q) = %q, want %q", tt.start, tt.width, tt.in, b.String(), tt.want)
		}
	}
}
