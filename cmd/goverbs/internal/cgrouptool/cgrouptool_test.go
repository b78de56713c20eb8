package cgrouptool

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func write(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fakeTree is a cgroupfs-like directory with /a carrying the rdma files.
func fakeTree(t *testing.T) string {
	root := t.TempDir()
	write(t, filepath.Join(root, "cgroup.subtree_control"), "rdma\n")
	write(t, filepath.Join(root, "a", "cgroup.subtree_control"), "")
	write(t, filepath.Join(root, "a", "cgroup.procs"), "")
	write(t, filepath.Join(root, "a", "rdma.max"), "rxe0 hca_handle=1 hca_object=max \nmlx5_0 hca_handle=max hca_object=max \n")
	write(t, filepath.Join(root, "a", "rdma.current"), "rxe0 hca_handle=1 hca_object=3 \nmlx5_0 hca_handle=0 hca_object=0 \n")
	return root
}

func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main("goverbs cgroup", args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestShow(t *testing.T) {
	root := fakeTree(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-mount", root, "show", "/a"}, "cgroup /a (v2 " + root + ")\n" +
			"dev rxe0 hca_handle 1 hca_handle_max 1 hca_object 3 hca_object_max max\n" +
			"dev mlx5_0 hca_handle 0 hca_handle_max max hca_object 0 hca_object_max max\n"},
		{[]string{"-mount", root, "-version", "1", "show", "-d", "rxe0", "a"}, "cgroup /a (v1 " + root + ")\n" +
			"dev rxe0 hca_handle 1 hca_handle_max 1 hca_object 3 hca_object_max max\n"},
		{[]string{"show", "-mount", root, "-j", "-d", "rxe0", "/a"},
			`[{"cgroup":"/a","dev":"rxe0","hca_handle":1,"hca_handle_max":1,"hca_object":3,"hca_object_max":"max","version":2}]` + "\n"},
	}
	for _, tt := range tests {
		code, out, errs := run(t, tt.args...)
		if code != 0 || out != tt.want {
			t.Errorf("Run(%q) = %d\n- want: %q\n-  got: %q\nstderr: %s", tt.args, code, tt.want, out, errs)
		}
	}
	code, out, _ := run(t, "-mount", root, "-p", "show", "-d", "mlx5_0", "/a")
	if code != 0 || !strings.Contains(out, "\n  {\n    \"cgroup\": \"/a\",\n") {
		t.Errorf("pretty JSON: %d %q", code, out)
	}
}

func TestSetUnset(t *testing.T) {
	root := fakeTree(t)
	max := filepath.Join(root, "a", "rdma.max")
	if code, _, errs := run(t, "-mount", root, "set", "/a", "rxe0", "hca_handle=2", "hca_object=max"); code != 0 {
		t.Fatalf("set: %d %s", code, errs)
	}
	if got := read(t, max); got != "rxe0 hca_handle=2 hca_object=max" {
		t.Fatalf("rdma.max written as %q", got)
	}
	if code, _, errs := run(t, "-mount", root, "unset", "/a", "mlx5_0"); code != 0 {
		t.Fatalf("unset: %d %s", code, errs)
	}
	if got := read(t, max); got != "mlx5_0 hca_handle=max hca_object=max" {
		t.Fatalf("rdma.max written as %q", got)
	}
}

// TestAbsolutePaths: CGROUP may be the cgroup's directory below the mount
// point ("goverbs cgroup set /sys/fs/cgroup/lim rxe0 hca_handle=1").
func TestAbsolutePaths(t *testing.T) {
	root := fakeTree(t)
	max := filepath.Join(root, "a", "rdma.max")
	dir := filepath.Join(root, "a")
	code, out, errs := run(t, "-mount", root, "show", dir+"/")
	if code != 0 || !strings.HasPrefix(out, "cgroup /a (v2 "+root+")\n") {
		t.Fatalf("show %s/: %d %q %s", dir, code, out, errs)
	}
	if code, _, errs := run(t, "-mount", root, "set", dir, "rxe0", "hca_handle=2"); code != 0 {
		t.Fatalf("set %s: %d %s", dir, code, errs)
	}
	if got := read(t, max); got != "rxe0 hca_handle=2" {
		t.Fatalf("rdma.max written as %q", got)
	}
	if code, _, errs := run(t, "-mount", root, "-version", "1", "create", filepath.Join(root, "x", "y")); code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	if st, err := os.Stat(filepath.Join(root, "x", "y")); err != nil || !st.IsDir() {
		t.Fatalf("create made no directory: %v", err)
	}
	if code, _, errs := run(t, "-mount", root, "delete", filepath.Join(root, "x", "y")); code != 0 {
		t.Fatalf("delete: %d %s", code, errs)
	}
	// A directory outside the hierarchy: exit 1, naming it and the mount.
	outside := t.TempDir()
	for _, cmd := range [][]string{{"set", outside, "rxe0", "hca_handle=1"}, {"show", outside}, {"create", outside + "/x"}, {"unset", outside, "rxe0"}} {
		code, _, errs := run(t, append([]string{"-mount", root}, cmd...)...)
		want := "goverbs cgroup: cgroup: " + outside
		if code != 1 || !strings.HasPrefix(errs, want) || !strings.Contains(errs, "mounted at "+root) {
			t.Errorf("%q = %d %q; want 1 with %q and the mount", cmd, code, errs, want)
		}
	}
	if _, err := os.Stat(outside + "/x"); !os.IsNotExist(err) {
		t.Errorf("create outside made %s/x: %v", outside, err)
	}
}

func TestCreateDelete(t *testing.T) {
	root := fakeTree(t)
	if code, _, errs := run(t, "-mount", root, "-version", "1", "create", "/x/y"); code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	if st, err := os.Stat(filepath.Join(root, "x", "y")); err != nil || !st.IsDir() {
		t.Fatalf("create made no directory: %v", err)
	}
	if code, _, errs := run(t, "-mount", root, "delete", "/x/y"); code != 0 {
		t.Fatalf("delete: %d %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(root, "x", "y")); !os.IsNotExist(err) {
		t.Fatalf("delete left the directory: %v", err)
	}
	// v2 create enables rdma where it is missing (/a has an empty subtree_control).
	if code, _, errs := run(t, "-mount", root, "create", "/a/b"); code != 0 {
		t.Fatalf("create v2: %d %s", code, errs)
	}
	if got := read(t, filepath.Join(root, "a", "cgroup.subtree_control")); got != "+rdma" {
		t.Fatalf("/a subtree_control = %q", got)
	}
}

func TestErrors(t *testing.T) {
	root := fakeTree(t)
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{nil, 2, "missing command"},
		{[]string{"frob"}, 2, `unknown command "frob"`},
		{[]string{"-bogus"}, 2, "flag provided but not defined"},
		{[]string{"-mount", root, "set", "/a", "rxe0"}, 2, "set needs"},
		{[]string{"-mount", root, "set", "/a", "rxe0", "hca_handle=-1"}, 2, "not a decimal"},
		{[]string{"-mount", root, "set", "/a", "rxe0", "hca_objects=1"}, 2, "unknown resource"},
		{[]string{"-mount", root, "unset", "/a"}, 2, "unset needs"},
		{[]string{"-mount", root, "show", "/a", "/b"}, 2, "at most one"},
		{[]string{"-mount", root, "-version", "3", "show", "/a"}, 2, "-version must be 1 or 2"},
		{[]string{"-mount", root, "show", "/missing"}, 1, "no such file or directory"},
		{[]string{"-mount", root, "show", "-d", "rxe9", "/a"}, 1, "device rxe9: no such device"},
		{[]string{"-mount", root, "show", "/"}, 1, "rdma controller not enabled"},
		{[]string{"-mount", root, "exec", "/a"}, 2, "exec needs"},
		{[]string{"-mount", root, "where", "x"}, 2, "no arguments"},
	}
	for _, tt := range tests {
		code, _, errs := run(t, tt.args...)
		if code != tt.code || !strings.Contains(errs, tt.msg) || !strings.HasPrefix(errs, "goverbs cgroup: ") {
			t.Errorf("Run(%q) = %d, %q; want %d with %q", tt.args, code, errs, tt.code, tt.msg)
		}
	}
	code, out, _ := run(t, "help")
	if code != 0 || !strings.HasPrefix(out, "Usage: goverbs cgroup") {
		t.Errorf("help = %d %q", code, out)
	}
}

// TestExecV1 runs commands through the v1 path, which writes the tool's own
// pid to cgroup.procs (a plain file here) before starting the child.
func TestExecV1(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	root := fakeTree(t)
	code, out, errs := run(t, "-mount", root, "-version", "1", "exec", "/a", "--", sh, "-c", "echo hi; exit 3")
	if code != 3 || out != "hi\n" {
		t.Fatalf("exec = %d %q %q; want 3 \"hi\\n\"", code, out, errs)
	}
	if got := read(t, filepath.Join(root, "a", "cgroup.procs")); got != strconv.Itoa(os.Getpid()) {
		t.Fatalf("cgroup.procs = %q, want our pid", got)
	}
	code, _, _ = run(t, "-mount", root, "-version", "1", "exec", "/a", sh, "-c", "kill -TERM $$")
	if code != 128+15 {
		t.Fatalf("exec of a killed command = %d, want 143", code)
	}
	code, _, errs = run(t, "-mount", root, "-version", "1", "exec", "/a", "/nonexistent/cmd")
	if code != 127 || !strings.Contains(errs, "exec /nonexistent/cmd in /a") {
		t.Fatalf("exec of a missing command = %d %q", code, errs)
	}
}
