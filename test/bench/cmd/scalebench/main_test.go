package main

import (
	"strings"
	"testing"
)

const cmtimeOut = `creating id
step              total ms     max ms     min us  us / conn
create id    :        0.07       0.01       5.00       6.80
resolve addr :        2.25       2.20    2124.00     225.20
resolve route:        0.29       0.24     196.00      29.30
create qp    :        0.74       0.14      59.00      74.20
connect      :        3.28       2.58    1017.00     327.80
disconnect   :        1.97       1.94     211.00     196.60
destroy      :        0.06       0.01       5.00       6.10
`

func TestParseCmtime(t *testing.T) {
	kv := parseCmtime(cmtimeOut)
	if len(kv) != 8 || kv["create_qp"] != 74.2 || kv["resolve_addr"] != 225.2 {
		t.Fatalf("%v", kv)
	}
	if s := kv["steps"]; s < 865.99 || s > 866.01 {
		t.Fatalf("steps %v, want 866", s)
	}
}

func TestParseKV(t *testing.T) {
	kv, err := parseKV("cq_create 35416.5\nrss 4776\n")
	if err != nil || kv["cq_create"] != 35416.5 || kv["rss"] != 4776 {
		t.Fatalf("%v %v", kv, err)
	}
	for _, bad := range []string{"", "cq_create", "cq_create x", "a 1 2"} {
		if _, err := parseKV(bad); err == nil {
			t.Errorf("parseKV(%q) took it", bad)
		}
	}
}

func TestParseCounts(t *testing.T) {
	n, err := parseCounts("1, 10,100")
	if err != nil || len(n) != 3 || n[2] != 100 {
		t.Fatalf("%v %v", n, err)
	}
	for _, bad := range []string{"", "0", "1,x", "-3"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q) took it", bad)
		}
	}
}

// The tables: Go/C per point and the growth from 10 to the largest N.
func TestResultsText(t *testing.T) {
	var r results
	for _, p := range []struct {
		side string
		x    int
		v    float64
	}{{"C", 10, 1000}, {"C", 1000, 1050}, {"Go", 10, 1100}, {"Go", 1000, 1320}} {
		r.add("objects", "cq_create", p.side, p.x, p.v*1000, 0)
	}
	out := r.text()
	for _, want := range []string{"CQ create", "1000", "1.257", "growth per object: C 1.05× (10→1000), Go 1.20× (10→1000)"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if md := r.markdown(); !strings.Contains(md, "| 1000 | 1050 | 1320 | 1.257 |") {
		t.Errorf("markdown:\n%s", md)
	}
}

func FuzzParseKV(f *testing.F) {
	f.Add("cq_create 35416.5\nrss 4776\n")
	f.Add("a b\n")
	f.Fuzz(func(t *testing.T, s string) {
		kv, err := parseKV(s)
		if err == nil && len(kv) == 0 {
			t.Fatal("no error and no figures")
		}
	})
}

func FuzzParseCmtime(f *testing.F) {
	f.Add(cmtimeOut)
	f.Fuzz(func(t *testing.T, s string) {
		kv := parseCmtime(s)
		if len(kv) == 1 {
			t.Fatalf("a sum without steps: %v", kv)
		}
	})
}
