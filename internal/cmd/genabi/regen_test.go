package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRegenerationIsClean reruns the generator into a temporary directory
// and requires the result to be byte-identical to the committed
// abi/z*_linux.go files, so a hand edit of a generated file, a
// generator change without regeneration, or a stale file is caught.
func TestRegenerationIsClean(t *testing.T) {
	requireGenerationTools(t)

	out := t.TempDir()
	if err := run([]string{"-out", out}); err != nil {
		t.Fatalf("genabi: %v", err)
	}
	committed, err := filepath.Glob(filepath.Join("..", "..", "..", "abi", "z*_linux.go"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, spec := range headers {
		want[outputName(spec.name)] = true
	}
	for _, path := range committed {
		if !want[filepath.Base(path)] {
			t.Errorf("%s is not produced by the generator any more; delete it", path)
		}
	}
	for name := range want {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		old, err := os.ReadFile(filepath.Join("..", "..", "..", "abi", name))
		if err != nil {
			t.Errorf("abi/%s: %v (run go generate ./abi)", name, err)
			continue
		}
		if !bytes.Equal(got, old) {
			t.Errorf("abi/%s differs from the generator output (run go generate ./abi):\n%s",
				name, firstDiff(string(old), string(got)))
		}
	}
}

// requireGenerationTools skips the test when GOVERBS_SKIP_REGEN=1 asks to,
// else fails (not skips) when the generator cannot run, so that a missing
// toolchain can never make the check silently disappear. It returns the C
// compiler ($CC, else gcc).
func requireGenerationTools(t *testing.T) string {
	t.Helper()
	if os.Getenv("GOVERBS_SKIP_REGEN") == "1" {
		t.Skip("GOVERBS_SKIP_REGEN=1: not checking the generator against gcc and the installed headers")
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Fatalf("C compiler %q not found: cgo -godefs needs it; install the gcc package (apt-get install gcc) "+
			"or set GOVERBS_SKIP_REGEN=1 to skip this check", cc)
	}
	if _, err := os.Stat("/usr/include/rdma/ib_user_verbs.h"); err != nil {
		t.Fatalf("RDMA uAPI headers missing (%v): install the linux-libc-dev package "+
			"or set GOVERBS_SKIP_REGEN=1 to skip this check", err)
	}
	return cc
}

// firstDiff describes the first differing line of two texts.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n  committed: " + wl + "\n  generated: " + gl
		}
	}
	return "(no line differs)"
}
