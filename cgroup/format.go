package cgroup

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Limit is one device's line of rdma.max.
type Limit struct {
	Device    string `json:"dev"`
	HCAHandle Value  `json:"hca_handle"`
	HCAObject Value  `json:"hca_object"`
	// Other holds resources this package does not know (none up to at least
	// Linux 6.15), in file order, so that a newer kernel does not break reading.
	Other []ResourceValue `json:"other,omitempty"`
}

// Usage is one device's line of rdma.current.
type Usage struct {
	Device    string `json:"dev"`
	HCAHandle Value  `json:"hca_handle"`
	HCAObject Value  `json:"hca_object"`
	// Other holds resources this package does not know, in file order.
	Other []ResourceValue `json:"other,omitempty"`
}

// Get returns the limit of r and whether the line has it.
func (l Limit) Get(r Resource) (Value, bool) { return get(r, l.HCAHandle, l.HCAObject, l.Other) }

// Get returns the usage of r and whether the line has it.
func (u Usage) Get(r Resource) (Value, bool) { return get(r, u.HCAHandle, u.HCAObject, u.Other) }

func get(r Resource, handle, object Value, other []ResourceValue) (Value, bool) {
	switch r {
	case HCAHandle:
		return handle, true
	case HCAObject:
		return object, true
	}
	for _, rv := range other {
		if rv.Resource == r {
			return rv.Value, true
		}
	}
	return 0, false
}

// Unlimited reports whether no resource of the line is limited, which is how
// the kernel shows a device without a limit.
func (l Limit) Unlimited() bool {
	if l.HCAHandle != Max || l.HCAObject != Max {
		return false
	}
	for _, rv := range l.Other {
		if rv.Value != Max {
			return false
		}
	}
	return true
}

// ParseError reports a malformed rdma.max or rdma.current (or a malformed
// setting line).
type ParseError struct {
	File string // "rdma.max", "rdma.current" or "setting"
	Line int    // 1-based
	Text string // the offending line, without its newline
	Err  error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("cgroup: parse %s line %d %q: %v", e.File, e.Line, e.Text, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// ErrSyntax is wrapped by every [*ParseError] whose cause is not more specific.
var ErrSyntax = errors.New("syntax error")

// fileLine is one parsed line: device and fields in file order.
type fileLine struct {
	device string
	fields []ResourceValue
}

// parseFile parses the kernel's print format shared by rdma.max and
// rdma.current: for every device "<dev> " then "<res>=<val> " per resource,
// then "\n". Both known resources must be present exactly once, first and in
// kernel order; unknown, well-formed ones after them are kept.
func parseFile(file string, data []byte) ([]fileLine, error) {
	var out []fileLine
	seen := map[string]bool{}
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil, &ParseError{File: file, Line: lineNo, Text: string(data), Err: fmt.Errorf("%w: missing newline at end of file", ErrSyntax)}
		}
		text := string(data[:i])
		data = data[i+1:]
		fl, err := parseLine(text)
		if err != nil {
			return nil, &ParseError{File: file, Line: lineNo, Text: text, Err: err}
		}
		if seen[fl.device] {
			return nil, &ParseError{File: file, Line: lineNo, Text: text, Err: fmt.Errorf("%w: device %q listed twice", ErrSyntax, fl.device)}
		}
		seen[fl.device] = true
		out = append(out, fl)
	}
	return out, nil
}

func parseLine(text string) (fileLine, error) {
	body, ok := strings.CutSuffix(text, " ")
	if !ok {
		return fileLine{}, fmt.Errorf("%w: missing trailing space", ErrSyntax)
	}
	tokens := strings.Split(body, " ")
	fl := fileLine{device: tokens[0]}
	if err := checkDevice(fl.device); err != nil {
		return fileLine{}, err
	}
	if len(tokens) == 1 {
		return fileLine{}, fmt.Errorf("%w: no resources for device %q", ErrSyntax, fl.device)
	}
	seen := map[Resource]bool{}
	for _, tok := range tokens[1:] {
		name, val, ok := strings.Cut(tok, "=")
		if !ok || name == "" {
			return fileLine{}, fmt.Errorf("%w: field %q is not RESOURCE=VALUE", ErrSyntax, tok)
		}
		r := Resource(name)
		if seen[r] {
			return fileLine{}, fmt.Errorf("%w: resource %q listed twice", ErrSyntax, name)
		}
		seen[r] = true
		var v Value
		if val == "max" {
			v = Max
		} else {
			n, err := parseDecimal(val)
			if err != nil {
				return fileLine{}, fmt.Errorf("%w: resource %s: %w", ErrSyntax, name, err)
			}
			v = n
		}
		fl.fields = append(fl.fields, ResourceValue{Resource: r, Value: v})
	}
	// The kernel prints its resources in enum order; a newer kernel would
	// append new ones after these.
	for i, r := range Resources() {
		if !seen[r] {
			return fileLine{}, fmt.Errorf("%w: resource %s missing", ErrSyntax, r)
		}
		if fl.fields[i].Resource != r {
			return fileLine{}, fmt.Errorf("%w: resource %s out of kernel order", ErrSyntax, r)
		}
	}
	return fl, nil
}

// checkDevice rejects names that cannot be one token of the line format.
func checkDevice(dev string) error {
	if dev == "" {
		return fmt.Errorf("%w: empty device name", ErrSyntax)
	}
	if strings.ContainsAny(dev, " \t\n\x00") {
		return fmt.Errorf("%w: device name %q contains white space or NUL", ErrSyntax, dev)
	}
	return nil
}

func split(fields []ResourceValue) (handle, object Value, other []ResourceValue) {
	for _, rv := range fields {
		switch rv.Resource {
		case HCAHandle:
			handle = rv.Value
		case HCAObject:
			object = rv.Value
		default:
			other = append(other, rv)
		}
	}
	return handle, object, other
}

// ParseLimits parses the contents of rdma.max. It is exact about the kernel's
// format: one line per device, every field followed by a space, "\n" after
// each line, hca_handle then hca_object (then any resources a newer kernel
// adds), values "max" or canonical decimals. Empty input (no RDMA device registered) gives no limits. Errors
// are [*ParseError].
func ParseLimits(data []byte) ([]Limit, error) { return parseLines[Limit]("rdma.max", data) }

// ParseUsage parses the contents of rdma.current, with the rules of
// [ParseLimits].
func ParseUsage(data []byte) ([]Usage, error) { return parseLines[Usage]("rdma.current", data) }

// parseLines parses rdma.max or rdma.current (file names it in errors): the two have one format, and Limit and
// Usage one layout.
func parseLines[T Limit | Usage](file string, data []byte) ([]T, error) {
	lines, err := parseFile(file, data)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(lines))
	for _, fl := range lines {
		l := Limit{Device: fl.device}
		l.HCAHandle, l.HCAObject, l.Other = split(fl.fields)
		out = append(out, T(l))
	}
	return out, nil
}

func appendLine(b []byte, dev string, handle, object Value, other []ResourceValue) []byte {
	b = append(b, dev...)
	b = append(b, ' ')
	for _, rv := range append([]ResourceValue{{HCAHandle, handle}, {HCAObject, object}}, other...) {
		b = append(b, rv.String()...)
		b = append(b, ' ')
	}
	return append(b, '\n')
}

// FormatLimits renders limits exactly as the kernel prints rdma.max. It is the
// inverse of [ParseLimits] and serves fakes and tests.
func FormatLimits(limits []Limit) []byte {
	var b []byte
	for _, l := range limits {
		b = appendLine(b, l.Device, l.HCAHandle, l.HCAObject, l.Other)
	}
	return b
}

// FormatUsage renders usage exactly as the kernel prints rdma.current.
func FormatUsage(usage []Usage) []byte {
	var b []byte
	for _, u := range usage {
		b = appendLine(b, u.Device, u.HCAHandle, u.HCAObject, u.Other)
	}
	return b
}

// FormatSetting returns the line to write to rdma.max to set the given limits
// of device: "<dev> <res>=<val> ...". Resources not named keep their limit.
// Values must be 0..[Max]; [Max] is written as "max". A setting with no values
// is valid (the kernel only checks that the device exists).
func FormatSetting(device string, values ...ResourceValue) (string, error) {
	if err := checkDevice(device); err != nil {
		return "", fmt.Errorf("cgroup: format setting: %w", err)
	}
	var b strings.Builder
	b.WriteString(device)
	seen := map[Resource]bool{}
	for _, rv := range values {
		if err := checkResourceValue(rv); err != nil {
			return "", fmt.Errorf("cgroup: format setting for %s: %w", device, err)
		}
		if seen[rv.Resource] {
			return "", fmt.Errorf("cgroup: format setting for %s: resource %s given twice", device, rv.Resource)
		}
		seen[rv.Resource] = true
		b.WriteByte(' ')
		b.WriteString(rv.String())
	}
	return b.String(), nil
}

func checkResourceValue(rv ResourceValue) error {
	name := string(rv.Resource)
	if name == "" || strings.ContainsAny(name, " =\t\n\x00") {
		return fmt.Errorf("invalid resource name %q", name)
	}
	if rv.Value < 0 || rv.Value > Max {
		return fmt.Errorf("%s=%d: %w", name, int64(rv.Value), errOutOfRange)
	}
	return nil
}

// ParseSetting parses a line in the canonical form [FormatSetting] writes:
// a device, then single-space separated RESOURCE=VALUE fields with VALUE "max"
// or 0..2147483647. Unlike the kernel it rejects prefixes of "max", signs and
// non-decimal numbers, and it only takes resources of [Resources].
func ParseSetting(line string) (device string, values []ResourceValue, err error) {
	fail := func(e error) (string, []ResourceValue, error) {
		return "", nil, &ParseError{File: "setting", Line: 1, Text: line, Err: e}
	}
	tokens := strings.Split(line, " ")
	if err := checkDevice(tokens[0]); err != nil {
		return fail(err)
	}
	seen := map[Resource]bool{}
	for _, tok := range tokens[1:] {
		rv, err := ParseResourceValue(tok)
		if err != nil {
			return fail(fmt.Errorf("%w: %w", ErrSyntax, err))
		}
		if seen[rv.Resource] {
			return fail(fmt.Errorf("%w: resource %s given twice", ErrSyntax, rv.Resource))
		}
		seen[rv.Resource] = true
		values = append(values, rv)
	}
	return tokens[0], values, nil
}
