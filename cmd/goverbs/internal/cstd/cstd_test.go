package cstd

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestStrtol(t *testing.T) {
	tests := []struct {
		in     string
		base   int
		want   int64
		end    int
		erange bool
	}{
		{"1", 0, 1, 1, false},
		{"  \t-12abc", 0, -12, 6, false},
		{"+7", 10, 7, 2, false},
		{"0x1f", 0, 31, 4, false},
		{"0X1F", 16, 31, 4, false},
		{"1f", 16, 31, 2, false},
		{"010", 0, 8, 3, false},
		{"09", 0, 0, 1, false},
		{"0x", 0, 0, 1, false},
		{"0xg", 16, 0, 1, false},
		{"abc", 0, 0, 0, false},
		{"", 0, 0, 0, false},
		{"-", 10, 0, 0, false},
		{"9223372036854775807", 10, 1<<63 - 1, 19, false},
		{"9223372036854775808", 10, 1<<63 - 1, 19, true},
		{"-9223372036854775808", 10, -1 << 63, 20, false},
		{"-9223372036854775809", 10, -1 << 63, 20, true},
		{"99999999999999999999999", 0, 1<<63 - 1, 23, true},
		{"4: ACTIVE", 0, 4, 1, false},
		{"z", 36, 35, 1, false},
	}
	for _, tt := range tests {
		v, end, erange := Strtol(tt.in, tt.base)
		if v != tt.want || end != tt.end || erange != tt.erange {
			t.Errorf("Strtol(%q, %d) = %d, %d, %v; want %d, %d, %v", tt.in, tt.base, v, end, erange, tt.want, tt.end, tt.erange)
		}
	}
}

func TestStrtoul(t *testing.T) {
	tests := []struct {
		in     string
		base   int
		want   uint64
		end    int
		erange bool
	}{
		{"10 Gb/sec (4X QDR)", 0, 10, 2, false},
		{"0x00010000", 0, 0x10000, 10, false},
		{"-1", 0, ^uint64(0), 2, false},
		{"-2", 16, ^uint64(0) - 1, 2, false},
		{"fe80", 16, 0xfe80, 4, false},
		{"18446744073709551615", 10, ^uint64(0), 20, false},
		{"18446744073709551616", 10, ^uint64(0), 20, true},
		{"-18446744073709551616", 10, ^uint64(0), 21, true},
		{"", 16, 0, 0, false},
	}
	for _, tt := range tests {
		v, end, erange := Strtoul(tt.in, tt.base)
		if v != tt.want || end != tt.end || erange != tt.erange {
			t.Errorf("Strtoul(%q, %d) = %d, %d, %v; want %d, %d, %v", tt.in, tt.base, v, end, erange, tt.want, tt.end, tt.erange)
		}
	}
}

func TestAtoi(t *testing.T) {
	for in, want := range map[string]int32{"1": 1, "12x": 12, "x": 0, "4294967297": 1, "-3": -3} {
		if got := Atoi(in); got != want {
			t.Errorf("Atoi(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestStrerror(t *testing.T) {
	tests := map[unix.Errno]string{
		0:                "Success",
		unix.ENOSYS:      "Function not implemented",
		unix.ENOENT:      "No such file or directory",
		unix.EACCES:      "Permission denied",
		unix.EINVAL:      "Invalid argument",
		unix.ENODEV:      "No such device",
		unix.EIO:         "Input/output error",
		unix.EPERM:       "Operation not permitted",
		unix.Errno(4000): "Unknown error 4000",
	}
	for n, want := range tests {
		if got := Strerror(n); got != want {
			t.Errorf("Strerror(%d) = %q, want %q", n, got, want)
		}
	}
}

func FuzzStrtol(f *testing.F) {
	for _, s := range []string{"0x10", " -077", "12abc", "99999999999999999999", "0x", "+"} {
		f.Add(s, 0)
	}
	f.Fuzz(func(t *testing.T, s string, base int) {
		if base < 0 || base == 1 || base > 36 {
			base = 0
		}
		v, end, erange := Strtol(s, base)
		if end < 0 || end > len(s) {
			t.Fatalf("end %d out of range for %q", end, s)
		}
		if end == 0 && (v != 0 || erange) {
			t.Fatalf("no conversion but value %d erange %v", v, erange)
		}
		// Parsing only the consumed prefix gives the same result.
		v2, end2, erange2 := Strtol(s[:end], base)
		if end > 0 && (v2 != v || end2 != end || erange2 != erange) {
			t.Fatalf("prefix %q parses to %d,%d,%v; whole to %d,%d,%v", s[:end], v2, end2, erange2, v, end, erange)
		}
		u, uend, _ := Strtoul(s, base)
		if uend != end {
			t.Fatalf("Strtoul consumed %d, Strtol %d", uend, end)
		}
		if !erange && v >= 0 && u != uint64(v) {
			t.Fatalf("Strtoul %d != Strtol %d", u, v)
		}
	})
}
