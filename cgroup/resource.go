package cgroup

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goverbs/goverbs/cgroup/limit"
)

// Resource names one resource the RDMA controller accounts, spelled as in
// rdma.max and rdma.current. It is [limit.Resource].
type Resource = limit.Resource

// The resources of the Linux RDMA controller, in the order the kernel prints
// them.
const (
	// HCAHandle counts verbs contexts (one per GET_CONTEXT).
	HCAHandle = limit.HCAHandle
	// HCAObject counts IDR-type uverbs objects (PD, CQ, QP, MR, SRQ, AH, MW, ...).
	HCAObject = limit.HCAObject
)

// Resources lists the resources this package knows, in kernel order (a new slice each call: a package variable
// a caller could change would change every other caller's view).
func Resources() []Resource { return []Resource{HCAHandle, HCAObject} }

// Value is a limit or a usage count. [Max] means "no limit".
type Value int64

// Max is the unlimited value: the kernel stores "max" as S32_MAX and prints
// S32_MAX as "max", so writing 2147483647 and writing "max" are the same.
const Max Value = math.MaxInt32

// String returns "max" for [Max] and the decimal number otherwise, as the
// kernel prints it.
func (v Value) String() string {
	if v == Max {
		return "max"
	}
	return strconv.FormatInt(int64(v), 10)
}

// MarshalText implements encoding.TextMarshaler with the [Value.String] form.
func (v Value) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// MarshalJSON writes a number, or the string "max" for [Max].
func (v Value) MarshalJSON() ([]byte, error) {
	if v == Max {
		return []byte(`"max"`), nil
	}
	return strconv.AppendInt(nil, int64(v), 10), nil
}

// UnmarshalJSON accepts what MarshalJSON writes.
func (v *Value) UnmarshalJSON(b []byte) error {
	if string(b) == `"max"` {
		*v = Max
		return nil
	}
	n, err := parseDecimal(string(b))
	if err != nil {
		return fmt.Errorf("cgroup: value %s: %w", b, err)
	}
	*v = n
	return nil
}

// ParseValue parses a limit as a user or a write to rdma.max gives it: "max"
// or a decimal number from 0 to 2147483647 (which equals [Max]). It is
// stricter than the kernel, which also takes prefixes of "max", signs, octal,
// hex and trailing garbage; goverbs never writes those.
func ParseValue(s string) (Value, error) {
	if s == "max" {
		return Max, nil
	}
	v, err := parseDecimal(s)
	if err != nil {
		return 0, err
	}
	if v > Max {
		return 0, fmt.Errorf("%q: %w", s, errOutOfRange)
	}
	return v, nil
}

var (
	errNotNumber   = errors.New("not a decimal number or max")
	errOutOfRange  = errors.New("out of range 0..2147483647")
	errLeadingZero = errors.New("leading zero")
)

// parseDecimal parses a canonical non-negative decimal: digits only, no sign,
// no leading zero unless the number is 0, fitting an int64.
func parseDecimal(s string) (Value, error) {
	if s == "" {
		return 0, fmt.Errorf("empty value: %w", errNotNumber)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q: %w", s, errNotNumber)
		}
	}
	if len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("%q: %w", s, errLeadingZero)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", s, errOutOfRange)
	}
	return Value(n), nil
}

// ResourceValue is one "name=value" field.
type ResourceValue struct {
	Resource Resource
	Value    Value
}

// String returns "name=value" as rdma.max prints and takes it.
func (rv ResourceValue) String() string {
	return string(rv.Resource) + "=" + rv.Value.String()
}

// ParseResourceValue parses "hca_handle=N" or "hca_object=max" as a user gives
// a limit: the resource must be one of [Resources] and the value must pass
// [ParseValue].
func ParseResourceValue(s string) (ResourceValue, error) {
	name, val, ok := strings.Cut(s, "=")
	if !ok {
		return ResourceValue{}, fmt.Errorf("cgroup: limit %q: want RESOURCE=VALUE", s)
	}
	r := Resource(name)
	if !r.Known() {
		return ResourceValue{}, fmt.Errorf("cgroup: limit %q: unknown resource %q (want %s or %s)", s, name, HCAHandle, HCAObject)
	}
	v, err := ParseValue(val)
	if err != nil {
		return ResourceValue{}, fmt.Errorf("cgroup: limit %q: %w", s, err)
	}
	return ResourceValue{Resource: r, Value: v}, nil
}
