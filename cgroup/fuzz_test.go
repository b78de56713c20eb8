package cgroup

import (
	"bytes"
	"reflect"
	"testing"
)

var fileSeeds = []string{
	"",
	"rxe0 hca_handle=max hca_object=max \n",
	"mlx5_0 hca_handle=2 hca_object=2000 \nrxe0 hca_handle=0 hca_object=max \n",
	"rxe0 hca_handle=1 hca_object=max mr_mem=4096 \n",
	"rxe0 hca_handle=max hca_object=max\n",
	"rxe0  hca_handle=1 hca_object=1 \n",
	"rxe0 hca_handle=2147483647 hca_object=0 \n",
}

// FuzzParseLimits checks that ParseLimits never panics and that whatever it
// accepts formats back to text it parses to the same limits.
func FuzzParseLimits(f *testing.F) {
	for _, s := range fileSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseLimits(data)
		if err != nil {
			return
		}
		out := FormatLimits(l)
		l2, err := ParseLimits(out)
		if err != nil {
			t.Fatalf("reparse of %q: %v", out, err)
		}
		if !reflect.DeepEqual(l, l2) {
			t.Fatalf("round trip of %q:\n- want: %+v\n-  got: %+v", data, l, l2)
		}
		// Text the kernel could have printed (no numeric 2147483647) is
		// reproduced byte for byte.
		if !bytes.Contains(data, []byte("=2147483647 ")) && !bytes.Equal(out, data) {
			t.Fatalf("FormatLimits(ParseLimits(%q)) = %q", data, out)
		}
	})
}

// FuzzParseUsage is FuzzParseLimits for rdma.current.
func FuzzParseUsage(f *testing.F) {
	for _, s := range fileSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := ParseUsage(data)
		if err != nil {
			return
		}
		u2, err := ParseUsage(FormatUsage(u))
		if err != nil || !reflect.DeepEqual(u, u2) {
			t.Fatalf("round trip of %q: %+v, %v", data, u2, err)
		}
	})
}

// FuzzParseSetting checks ParseSetting against FormatSetting.
func FuzzParseSetting(f *testing.F) {
	for _, s := range []string{"rxe0", "rxe0 hca_handle=1 hca_object=max", "rxe0 hca_object=0", "x hca_handle=ma", "a  b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		dev, vals, err := ParseSetting(line)
		if err != nil {
			return
		}
		out, err := FormatSetting(dev, vals...)
		if err != nil {
			t.Fatalf("FormatSetting of parsed %q: %v", line, err)
		}
		dev2, vals2, err := ParseSetting(out)
		if err != nil || dev2 != dev || !reflect.DeepEqual(vals, vals2) {
			t.Fatalf("round trip of %q via %q: %q %v %v", line, out, dev2, vals2, err)
		}
	})
}

// FuzzParseMountinfo checks the mountinfo parser never panics and that what
// it accepts has the fields it promises.
func FuzzParseMountinfo(f *testing.F) {
	f.Add([]byte(hostMountinfo))
	f.Add([]byte(labMountinfo))
	f.Add([]byte(`1 2 0:1 / /a\040b rw - cgroup2 cgroup2 rw` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, err := parseMountinfo(data)
		if err != nil {
			return
		}
		for _, m := range ms {
			if m.fsType == "" || len(m.superOpts) == 0 {
				t.Fatalf("accepted mount without type or options: %+v from %q", m, data)
			}
		}
	})
}

// FuzzProcCgroupPath checks the /proc/PID/cgroup parser.
func FuzzProcCgroupPath(f *testing.F) {
	f.Add([]byte("0::/user.slice/a\n"), 2)
	f.Add([]byte("12:rdma:/x\n11:cpu,cpuacct:/\n0::/\n"), 1)
	f.Fuzz(func(t *testing.T, data []byte, v int) {
		p, err := procCgroupPath(data, Version(v))
		if err == nil && (p == "" || p[0] != '/') {
			t.Fatalf("path %q from %q is not absolute", p, data)
		}
	})
}
