package libumad

import (
	"strings"
	"testing"
)

func FuzzReadGUID(f *testing.F) {
	f.Add("0042:acff:fe11:0002\n")
	f.Add("fe80::1")
	f.Fuzz(func(t *testing.T, s string) {
		fields, ok := strsepFields(s, 8)
		if ok && len(fields) != 8 {
			t.Fatalf("ok with %d fields", len(fields))
		}
		if strings.Join(fields, ":") != s && ok && !strings.ContainsAny(s, " \t\n") && strings.Count(s, ":") == 7 {
			t.Fatalf("fields %q do not rebuild %q", fields, s)
		}
	})
}
