package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/lab"
)

func TestTestTimeout(t *testing.T) {
	tests := []struct {
		args []string
		want time.Duration
	}{
		{[]string{"-test.v=true", "-test.timeout=10m0s"}, 10 * time.Minute},
		{[]string{"-test.timeout=0s"}, 0},
		{[]string{"-test.run=X"}, 0},
		{nil, 0},
	}
	for _, tt := range tests {
		if got := testTimeout(tt.args); got != tt.want {
			t.Errorf("testTimeout(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestWritableDirs(t *testing.T) {
	root := t.TempDir()
	mk := func(p string) string {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bin, cover, out, gocov := mk("b001"), mk("cover"), mk("out"), mk("gocov")
	got := writableDirs([]string{
		filepath.Join(bin, "pkg.test"),
		"-test.paniconexit0",
		"-test.coverprofile=" + filepath.Join(cover, "c.out"),
		"-test.outputdir=" + out,
		"-test.cpuprofile=cpu.out", // relative to -test.outputdir
		"-test.gocoverdir=" + gocov,
		"-test.coverprofile=" + filepath.Join(bin, "again.out"), // already shared
		"-test.memprofile=" + filepath.Join(root, "missing", "m.out"),
	})
	want := []lab.Share{
		{HostPath: bin, Writable: true},
		{HostPath: cover, Writable: true},
		{HostPath: out, Writable: true},
		{HostPath: gocov, Writable: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("writableDirs =\n%+v\nwant\n%+v", got, want)
	}
}
