// Package cstd reproduces the few C library behaviours that the rdma-core tools
// depend on for their output and exit codes: strtol/strtoul number parsing
// (glibc rules: leading white space, sign, base prefixes, clamping on
// overflow), atoi, and strerror texts. The goverbs tools use it so that an
// argument such as "-i 0x1" or "-i 257" means exactly what it means to the C
// tool.
package cstd

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// isSpace reports whether c is white space in the C locale (isspace).
func isSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

func digitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	}
	return 99
}

// scan parses like glibc's strtoul core. It returns the magnitude (clamped to
// max uint64 on overflow), whether a '-' sign was present, the index just past
// the last consumed byte (0 when no digits were found), and overflow.
func scan(s string, base int) (mag uint64, neg bool, end int, overflow bool) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if (base == 0 || base == 16) && i+1 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') {
		if i+2 < len(s) && digitVal(s[i+2]) < 16 {
			base = 16
			i += 2
		} else {
			// "0x" with no hex digit: the "0" is the number, "x" ends it.
			return 0, neg, i + 1, false
		}
	}
	if base == 0 {
		if i < len(s) && s[i] == '0' {
			base = 8
		} else {
			base = 10
		}
	}
	if base < 2 || base > 36 {
		return 0, false, 0, false
	}
	start := i
	b := uint64(base)
	for ; i < len(s); i++ {
		d := digitVal(s[i])
		if d >= base {
			break
		}
		if !overflow {
			hi, lo := mulAdd(mag, b, uint64(d))
			if hi {
				overflow = true
				mag = ^uint64(0)
			} else {
				mag = lo
			}
		}
	}
	if i == start {
		return 0, false, 0, false
	}
	return mag, neg, i, overflow
}

func mulAdd(a, b, c uint64) (overflow bool, r uint64) {
	if a != 0 && a > (^uint64(0)-c)/b {
		return true, 0
	}
	return false, a*b + c
}

// Strtol behaves like glibc strtol(s, &end, base) for a 64-bit long: it
// returns the value (clamped to the int64 range on overflow, as C does with
// ERANGE), the number of bytes consumed (0 when no conversion was performed)
// and whether the value was clamped.
func Strtol(s string, base int) (v int64, end int, erange bool) {
	mag, neg, end, overflow := scan(s, base)
	if end == 0 {
		return 0, 0, false
	}
	if neg {
		if overflow || mag > 1<<63 {
			return -1 << 63, end, true
		}
		return -int64(mag), end, false
	}
	if overflow || mag > 1<<63-1 {
		return 1<<63 - 1, end, true
	}
	return int64(mag), end, false
}

// Strtoul behaves like glibc strtoul(s, &end, base) for a 64-bit unsigned
// long: a '-' sign negates the magnitude modulo 2^64, overflow clamps to the
// maximum.
func Strtoul(s string, base int) (v uint64, end int, erange bool) {
	mag, neg, end, overflow := scan(s, base)
	if end == 0 {
		return 0, 0, false
	}
	if overflow {
		return ^uint64(0), end, true
	}
	if neg {
		return -mag, end, false
	}
	return mag, end, false
}

// Atoi is C atoi: (int)strtol(s, NULL, 10), truncated to 32 bits.
func Atoi(s string) int32 {
	v, _, _ := Strtol(s, 10)
	return int32(v)
}

// Strerror returns glibc's strerror text for errno n ("Success" for 0,
// "Unknown error N" for numbers without a name).
func Strerror(n unix.Errno) string {
	if n == 0 {
		return "Success"
	}
	msg := n.Error()
	if msg == "" || msg == "errno "+strconv.Itoa(int(n)) {
		return "Unknown error " + strconv.Itoa(int(n))
	}
	r, size := utf8.DecodeRuneInString(msg)
	return string(unicode.ToUpper(r)) + msg[size:]
}

// ErrnoOf returns the unix.Errno wrapped by err, fallback when err carries
// none, and 0 for a nil err.
func ErrnoOf(err error, fallback unix.Errno) unix.Errno {
	if err == nil {
		return 0
	}
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return fallback
}

// Perror writes what perror(3) writes for the errno err carries (EIO if none): "what: strerror\n".
func Perror(w io.Writer, what string, err error) {
	fmt.Fprintf(w, "%s: %s\n", what, Strerror(ErrnoOf(err, unix.EIO)))
}
