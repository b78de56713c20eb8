package cgroup

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseLimits(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Limit
		err  string // substring of the error; "" means success
	}{
		{name: "no devices", in: "", want: []Limit{}},
		{
			name: "unlimited device as the kernel prints it",
			in:   "rxe0 hca_handle=max hca_object=max \n",
			want: []Limit{{Device: "rxe0", HCAHandle: Max, HCAObject: Max}},
		},
		{
			name: "two devices, numbers",
			in:   "mlx5_0 hca_handle=2 hca_object=2000 \nrxe0 hca_handle=0 hca_object=max \n",
			want: []Limit{
				{Device: "mlx5_0", HCAHandle: 2, HCAObject: 2000},
				{Device: "rxe0", HCAHandle: 0, HCAObject: Max},
			},
		},
		{
			name: "unknown resource kept",
			in:   "rxe0 hca_handle=1 hca_object=max mr_mem=4096 \n",
			want: []Limit{{Device: "rxe0", HCAHandle: 1, HCAObject: Max, Other: []ResourceValue{{"mr_mem", 4096}}}},
		},
		{name: "kernel order", in: "rxe0 hca_object=3 hca_handle=1 \n", err: "out of kernel order"},
		{name: "unknown before known", in: "rxe0 mr_mem=1 hca_handle=1 hca_object=3 \n", err: "out of kernel order"},
		{name: "missing trailing space", in: "rxe0 hca_handle=max hca_object=max\n", err: "missing trailing space"},
		{name: "missing newline", in: "rxe0 hca_handle=max hca_object=max ", err: "missing newline"},
		{name: "double space", in: "rxe0  hca_handle=max hca_object=max \n", err: `field "" is not`},
		{name: "two trailing spaces", in: "rxe0 hca_handle=max hca_object=max  \n", err: `field "" is not`},
		{name: "empty line", in: "\n", err: "missing trailing space"},
		{name: "device only", in: "rxe0 \n", err: "no resources"},
		{name: "empty device", in: " hca_handle=max hca_object=max \n", err: "empty device"},
		{name: "missing hca_object", in: "rxe0 hca_handle=max \n", err: "hca_object missing"},
		{name: "duplicate resource", in: "rxe0 hca_handle=1 hca_handle=2 hca_object=max \n", err: "listed twice"},
		{name: "duplicate device", in: "rxe0 hca_handle=1 hca_object=max \nrxe0 hca_handle=1 hca_object=max \n", err: "listed twice"},
		{name: "negative", in: "rxe0 hca_handle=-1 hca_object=max \n", err: "not a decimal"},
		{name: "prefix of max", in: "rxe0 hca_handle=ma hca_object=max \n", err: "not a decimal"},
		{name: "empty value", in: "rxe0 hca_handle= hca_object=max \n", err: "empty value"},
		{name: "leading zero", in: "rxe0 hca_handle=01 hca_object=max \n", err: "leading zero"},
		{name: "no equals", in: "rxe0 hca_handle hca_object=max \n", err: "not RESOURCE=VALUE"},
		{name: "tab", in: "rxe0\thca_handle=1 hca_object=max \n", err: "white space"},
		{name: "overflow", in: "rxe0 hca_handle=99999999999999999999 hca_object=max \n", err: "out of range"},
		{name: "CRLF", in: "rxe0 hca_handle=max hca_object=max \r\n", err: "missing trailing space"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLimits([]byte(tt.in))
			if tt.err != "" {
				var pe *ParseError
				if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseLimits(%q) error = %v, want *ParseError containing %q", tt.in, err, tt.err)
				}
				if !errors.Is(err, ErrSyntax) {
					t.Fatalf("error %v does not wrap ErrSyntax", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseLimits(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParseLimits(%q):\n- want: %+v\n-  got: %+v", tt.in, tt.want, got)
			}
		})
	}
}

func TestParseUsage(t *testing.T) {
	got, err := ParseUsage([]byte("rxe0 hca_handle=1 hca_object=4 \nrxe1 hca_handle=0 hca_object=0 \n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Usage{{Device: "rxe0", HCAHandle: 1, HCAObject: 4}, {Device: "rxe1"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("- want: %+v\n-  got: %+v", want, got)
	}
	_, err = ParseUsage([]byte("rxe0 hca_handle=1\n"))
	var pe *ParseError
	if !errors.As(err, &pe) || pe.File != "rdma.current" || pe.Line != 1 {
		t.Fatalf("error = %#v, want *ParseError for rdma.current line 1", err)
	}
}

func TestParseErrorLine(t *testing.T) {
	_, err := ParseLimits([]byte("rxe0 hca_handle=max hca_object=max \nrxe1 hca_handle=x hca_object=max \n"))
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("error = %v, want *ParseError", err)
	}
	if pe.Line != 2 || pe.Text != "rxe1 hca_handle=x hca_object=max " || pe.File != "rdma.max" {
		t.Fatalf("got %+v", pe)
	}
}

func TestFormatRoundTrip(t *testing.T) {
	in := "mlx5_0 hca_handle=2 hca_object=max \nrxe0 hca_handle=max hca_object=0 mr_mem=7 \n"
	l, err := ParseLimits([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(FormatLimits(l)); got != in {
		t.Fatalf("FormatLimits:\n- want: %q\n-  got: %q", in, got)
	}
	u, err := ParseUsage([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(FormatUsage(u)); got != in {
		t.Fatalf("FormatUsage:\n- want: %q\n-  got: %q", in, got)
	}
}

func TestLimitGetUnlimited(t *testing.T) {
	l := Limit{Device: "rxe0", HCAHandle: 1, HCAObject: Max, Other: []ResourceValue{{"mr_mem", Max}}}
	for _, tt := range []struct {
		r    Resource
		want Value
		ok   bool
	}{{HCAHandle, 1, true}, {HCAObject, Max, true}, {"mr_mem", Max, true}, {"nope", 0, false}} {
		if v, ok := l.Get(tt.r); v != tt.want || ok != tt.ok {
			t.Errorf("Get(%s) = %v, %v; want %v, %v", tt.r, v, ok, tt.want, tt.ok)
		}
	}
	if l.Unlimited() {
		t.Error("Unlimited() = true with hca_handle=1")
	}
	l.HCAHandle = Max
	if !l.Unlimited() {
		t.Error("Unlimited() = false with everything max")
	}
	l.Other[0].Value = 3
	if l.Unlimited() {
		t.Error("Unlimited() = true with mr_mem=3")
	}
}

func TestFormatSetting(t *testing.T) {
	tests := []struct {
		dev  string
		vals []ResourceValue
		want string
		err  string
	}{
		{"rxe0", nil, "rxe0", ""},
		{"rxe0", []ResourceValue{{HCAHandle, 1}}, "rxe0 hca_handle=1", ""},
		{"rxe0", []ResourceValue{{HCAObject, Max}, {HCAHandle, 0}}, "rxe0 hca_object=max hca_handle=0", ""},
		{"rxe0", []ResourceValue{{HCAObject, 2147483647}}, "rxe0 hca_object=max", ""},
		{"", nil, "", "empty device"},
		{"rx e0", nil, "", "white space"},
		{"rxe0", []ResourceValue{{HCAHandle, -1}}, "", "out of range"},
		{"rxe0", []ResourceValue{{HCAHandle, Max + 1}}, "", "out of range"},
		{"rxe0", []ResourceValue{{"", 1}}, "", "invalid resource"},
		{"rxe0", []ResourceValue{{"a=b", 1}}, "", "invalid resource"},
		{"rxe0", []ResourceValue{{HCAHandle, 1}, {HCAHandle, 2}}, "", "given twice"},
	}
	for _, tt := range tests {
		got, err := FormatSetting(tt.dev, tt.vals...)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("FormatSetting(%q, %v) error = %v, want %q", tt.dev, tt.vals, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("FormatSetting(%q, %v) = %q, %v; want %q", tt.dev, tt.vals, got, err, tt.want)
		}
	}
}

func TestParseSetting(t *testing.T) {
	tests := []struct {
		in   string
		dev  string
		vals []ResourceValue
		err  string
	}{
		{in: "rxe0", dev: "rxe0"},
		{in: "rxe0 hca_handle=1 hca_object=max", dev: "rxe0", vals: []ResourceValue{{HCAHandle, 1}, {HCAObject, Max}}},
		{in: "rxe0 hca_object=2147483647", dev: "rxe0", vals: []ResourceValue{{HCAObject, Max}}},
		{in: "", err: "empty device"},
		{in: "rxe0 ", err: "want RESOURCE=VALUE"},
		{in: "rxe0  hca_handle=1", err: "want RESOURCE=VALUE"},
		{in: "rxe0 hca_handle=ma", err: "not a decimal"},
		{in: "rxe0 hca_handle=", err: "empty value"},
		{in: "rxe0 hca_handle=+1", err: "not a decimal"},
		{in: "rxe0 hca_handle=0x10", err: "not a decimal"},
		{in: "rxe0 hca_handle=2147483648", err: "out of range"},
		{in: "rxe0 foo=1", err: "unknown resource"},
		{in: "rxe0 hca_handle=1 hca_handle=max", err: "given twice"},
	}
	for _, tt := range tests {
		dev, vals, err := ParseSetting(tt.in)
		if tt.err != "" {
			var pe *ParseError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseSetting(%q) error = %v, want *ParseError with %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || dev != tt.dev || !reflect.DeepEqual(vals, tt.vals) {
			t.Errorf("ParseSetting(%q) = %q, %v, %v; want %q, %v", tt.in, dev, vals, err, tt.dev, tt.vals)
		}
	}
}

func TestValueJSON(t *testing.T) {
	for _, tt := range []struct {
		v    Value
		json string
	}{{0, "0"}, {42, "42"}, {Max, `"max"`}} {
		b, err := tt.v.MarshalJSON()
		if err != nil || string(b) != tt.json {
			t.Errorf("MarshalJSON(%d) = %s, %v; want %s", int64(tt.v), b, err, tt.json)
		}
		var back Value
		if err := back.UnmarshalJSON(b); err != nil || back != tt.v {
			t.Errorf("UnmarshalJSON(%s) = %v, %v; want %v", b, back, err, tt.v)
		}
	}
	var v Value
	if err := v.UnmarshalJSON([]byte(`"ma"`)); err == nil {
		t.Error(`UnmarshalJSON("ma") succeeded`)
	}
}

func TestUsageGetAndText(t *testing.T) {
	u := Usage{Device: "rxe0", HCAHandle: 2, HCAObject: 5, Other: []ResourceValue{{"mr_mem", 9}}}
	for r, want := range map[Resource]Value{HCAHandle: 2, HCAObject: 5, "mr_mem": 9} {
		if v, ok := u.Get(r); !ok || v != want {
			t.Errorf("Get(%s) = %v, %v; want %v", r, v, ok, want)
		}
	}
	if _, ok := u.Get("nope"); ok {
		t.Error(`Get("nope") found something`)
	}
	for v, want := range map[Value]string{0: "0", 17: "17", Max: "max"} {
		if b, err := v.MarshalText(); err != nil || string(b) != want {
			t.Errorf("MarshalText(%d) = %q, %v; want %q", int64(v), b, err, want)
		}
	}
}
