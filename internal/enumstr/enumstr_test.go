package enumstr

import "testing"

func TestNameAndFlags(t *testing.T) {
	names := []string{"A", "", "C"}
	for _, tc := range []struct{ got, want string }{
		{Name(names, 0, "T"), "A"},
		{Name(names, 1, "T"), "T(1)"},
		{Name(names, 7, "T"), "T(7)"},
		{Flags(names, 0), "0"},
		{Flags(names, 1|4), "A|C"},
		{Flags(names, 2|8), "0xa"},
		{Flags(names, 1|16), "A|0x10"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
