package golden

import (
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, r := range []Result{
		{},
		{Status: 255, Stdout: "a\n-- stderr --\nb\n", Stderr: "x"},
		{Status: 1, Stdout: "no newline", Stderr: "Failed to close device"},
	} {
		got, err := Parse(r.String())
		if err != nil || got != r {
			t.Errorf("Parse(%q) = %+v, %v", r.String(), got, err)
		}
	}
	for _, bad := range []string{"", "-- status --\nx\n-- stdout --\n-- stderr --\n", "-- status --\n0\n-- stdout --\n"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

func TestNormalizePid(t *testing.T) {
	got := NormalizePid("ibwarn: [177] f: x [pid 12] [abc] [1a]")
	if want := "ibwarn: [4242] f: x [pid 4242] [abc] [1a]"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

func TestDiff(t *testing.T) {
	if d := Diff("a\nb\n", "a\nb\n"); d != "" {
		t.Fatal(d)
	}
	if d := Diff("a\nb\n", "a\nc\n"); !strings.Contains(d, "line 2") {
		t.Fatal(d)
	}
	if d := Diff("a\n", "a\nb\n"); !strings.Contains(d, "line 2") {
		t.Fatal(d)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(Result{Status: 3, Stdout: "x\n", Stderr: "y"}.String())
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			return
		}
		if _, err := Parse(r.String()); err != nil {
			t.Fatalf("re-parse of %q: %v", r.String(), err)
		}
	})
}
