package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/help.golden")

// echo is a fake tool that reports how it was called.
func echo(name string) Command {
	return Command{Name: name, Aliases: []string{"c_" + name, "alt_" + name}, Summary: name + " tool",
		Run: func(prog string, args []string, o, e io.Writer) int {
			fmt.Fprintf(o, "%s prog=%s args=%q\n", name, prog, args)
			return len(args)
		}}
}

func TestDispatch(t *testing.T) {
	cmds := []Command{echo("one"), echo("two")}
	tests := []struct {
		argv           []string
		stdout, stderr string
		status         int
	}{
		{[]string{"goverbs", "one", "-x", "y"}, "one prog=c_one args=[\"-x\" \"y\"]\n", "", 2},
		{[]string{"/opt/bin/goverbs", "two"}, "two prog=c_two args=[]\n", "", 0},
		{[]string{"goverbs", "alt_two", "a"}, "two prog=c_two args=[\"a\"]\n", "", 1},
		{[]string{"c_one", "a"}, "one prog=c_one args=[\"a\"]\n", "", 1},
		{[]string{"/usr/local/bin/alt_two", "one"}, "two prog=/usr/local/bin/alt_two args=[\"one\"]\n", "", 1},
		{[]string{"./c_two"}, "two prog=./c_two args=[]\n", "", 0},
		{[]string{"goverbs", "three"}, "", "goverbs: unknown command \"three\" (run \"goverbs help\" for the list)\n", 2},
		{[]string{"goverbs", "help"}, helpText, "", 0},
		{[]string{"goverbs", "-h"}, helpText, "", 0},
		{[]string{"goverbs", "--help"}, helpText, "", 0},
		{[]string{"goverbs"}, "", helpText, 2},
		{nil, "", helpText, 2},
		{[]string{"renamed-binary", "one"}, "one prog=c_one args=[]\n", "", 0},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		st := dispatch(cmds, tt.argv, &out, &errb)
		if st != tt.status || out.String() != tt.stdout || errb.String() != tt.stderr {
			t.Errorf("%q: status %d stdout %q stderr %q; want %d %q %q", tt.argv, st, out.String(), errb.String(), tt.status, tt.stdout, tt.stderr)
		}
	}
}

const helpText = `Usage: goverbs COMMAND [ARGS...]
       TOOL [ARGS...]    (goverbs invoked through a link named TOOL)

Commands:
  one   one tool [c_one, alt_one]
  two   two tool [c_two, alt_two]
  help  show this list
`

// The real registry: help text golden, and every tool reachable both ways.
func TestRegistry(t *testing.T) {
	var out bytes.Buffer
	if st := run([]string{"goverbs", "help"}, &out, io.Discard); st != 0 {
		t.Fatalf("help status %d", st)
	}
	file := filepath.Join("testdata", "help.golden")
	if *update {
		if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != string(want) {
		t.Errorf("help:\n%s\nwant:\n%s", out.String(), want)
	}
	seen := map[string]bool{}
	for _, c := range commands {
		for _, n := range append([]string{c.Name}, c.Aliases...) {
			if seen[n] && n != c.Name {
				t.Errorf("name %q registered twice", n)
			}
			seen[n] = true
		}
		if c.Run == nil || c.Summary == "" {
			t.Errorf("command %q incomplete", c.Name)
		}
	}
	for _, n := range []string{"devices", "devinfo", "ibstat", "ibv_devices", "ibv_devinfo"} {
		if !seen[n] {
			t.Errorf("%q not registered", n)
		}
	}
}

// TestRegistryDocumented: every registered tool has its row in the README's table of tools and in
// cmd/goverbs/internal/README.md's map (docs/DESIGN.md's rule, with internal/designrules' for the library).
func TestRegistryDocumented(t *testing.T) {
	for _, doc := range []string{"../../README.md", "internal/README.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		var table strings.Builder // the lines of its tables, where the rows are
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "|") {
				table.WriteString(l + "\n")
			}
		}
		for _, c := range commands {
			if c.Name == "help" {
				continue
			}
			named := false
			for _, n := range append([]string{c.Name}, c.Aliases...) { // its subcommand, or the C tool's name
				named = named || regexp.MustCompile(`(^|[^A-Za-z0-9_])`+regexp.QuoteMeta(n)+`([^A-Za-z0-9_]|$)`).MatchString(table.String())
			}
			if !named {
				t.Errorf("%s has no table row naming the tool %q (or one of %q)", doc, c.Name, c.Aliases)
			}
		}
	}
}

// Real tools through the dispatcher, on paths that do not depend on the
// machine's devices.
func TestRealTools(t *testing.T) {
	tests := []struct {
		argv       []string
		status     int
		stdoutHead string
		stderr     string
	}{
		{[]string{"goverbs", "devinfo", "-x"}, 255, "Usage: ibv_devinfo  ", "ibv_devinfo: invalid option -- 'x'\n"},
		{[]string{"/usr/bin/ibv_devinfo", "-i", "0"}, 1, "Usage: /usr/bin/ibv_devinfo  ", ""},
		{[]string{"goverbs", "ibstat", "-V"}, 0, "", "ibstat BUILD VERSION: 65.0\n"},
		{[]string{"/sbin/ibstat", "--version"}, 0, "", "/sbin/ibstat BUILD VERSION: 65.0\n"},
		{[]string{"goverbs", "pingpong", "srq", "-q", "300"}, 1, "", "num_qp 300 must be less than 255\n"},
		{[]string{"goverbs", "srq_pingpong", "-r", "4"}, 1, "",
			"rx_depth 4 is too small for 16 QPs -- must have at least one receive per QP.\n"},
		{[]string{"goverbs", "pingpong", "uc", "-m", "7"}, 1, "Usage:\n  ibv_uc_pingpong  ", ""},
		{[]string{"/usr/bin/ibv_ud_pingpong", "-p", "70000"}, 1, "Usage:\n  /usr/bin/ibv_ud_pingpong  ", ""},
		{[]string{"goverbs", "pingpong", "xsrq", "-x"}, 1, "Usage:\n  ibv_xsrq_pingpong  ", "ibv_xsrq_pingpong: invalid option -- 'x'\n"},
		{[]string{"goverbs", "pingpong", "dc"}, 1, "", "usage: goverbs pingpong rc|uc|ud|srq|xsrq [options] [host]\n"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		st := run(tt.argv, &out, &errb)
		if st != tt.status || !strings.HasPrefix(out.String(), tt.stdoutHead) || errb.String() != tt.stderr {
			t.Errorf("%q: status %d stdout %q stderr %q", tt.argv, st, out.String(), errb.String())
		}
	}
}

// The built binary dispatches on the name of a link to it.
func TestMultiCallBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "goverbs")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	link := filepath.Join(dir, "ibv_devinfo")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, "--ib")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 255 {
		t.Fatalf("run: %v", err)
	}
	wantErr := link + ": option '--ib' is ambiguous; possibilities: '--ib-dev' '--ib-port'\n"
	if errb.String() != wantErr || !strings.HasPrefix(out.String(), "Usage: "+link+" ") {
		t.Errorf("stdout %q stderr %q", out.String(), errb.String())
	}
}
