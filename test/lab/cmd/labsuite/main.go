// Command labsuite runs the tests of every package that has lab tests inside ONE lab VM boot, and prints go
// test's own summary lines ("ok", "FAIL", "--- FAIL") so the result reads like `go test`.
//
// Booting the lab costs tens of seconds under TCG, so `go test -exec labexec ./...` (one boot per package) is
// for development; `make test` uses this. It:
//
//  1. lists the packages whose tests use test/labtest (the ones with kernel-facing tests),
//  2. compiles each package's test binary on the host (go test -c),
//  3. boots the lab once and runs this same program inside it in "inner" mode, which runs every binary in its
//     package directory with GOVERBS_LAB_REQUIRED=1 (a missing device fails instead of skipping) and prints the
//     results,
//  4. exits non-zero if any package failed, or if the lab itself failed.
//
// Usage: go run ./test/lab/cmd/labsuite [-run REGEXP] [-v] [-timeout 20m] [packages...]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/goverbs/goverbs/test/lab"
)

type pkg struct {
	ImportPath string
	Dir        string
	Binary     string
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("labsuite", flag.ContinueOnError)
	inner := fs.String("inner", "", "run the manifest FILE inside the lab (internal)")
	runRE := fs.String("run", "", "run only tests matching REGEXP (passed as -test.run)")
	verbose := fs.Bool("v", false, "verbose test output")
	timeout := fs.Duration("timeout", 30*time.Minute, "limit for the whole lab run")
	pkgTimeout := fs.Duration("pkgtimeout", 15*time.Minute, "per-package test timeout inside the lab")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *inner != "" {
		return runInner(*inner)
	}
	patterns := fs.Args()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 1
	}
	work := filepath.Join(root, ".lab", "suite")
	os.RemoveAll(work)
	if err := os.MkdirAll(work, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 1
	}
	pkgs, err := labPackages(patterns)
	if err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 1
	}
	if len(pkgs) == 0 {
		fmt.Fprintln(os.Stderr, "labsuite: no package uses test/labtest; nothing to run in the lab")
		return 1
	}
	for i := range pkgs {
		p := &pkgs[i]
		p.Binary = filepath.Join(work, strings.ReplaceAll(p.ImportPath, "/", "_")+".test")
		cmd := exec.Command("go", "test", "-c", "-o", p.Binary, p.ImportPath)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Printf("FAIL\t%s [build failed]\n", p.ImportPath)
			return 1
		}
	}
	self := filepath.Join(work, "labsuite")
	build := exec.Command("go", "build", "-o", self, "./test/lab/cmd/labsuite")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "labsuite: build itself:", err)
		return 1
	}
	// The tools under test, as a binary: interop tests run it under the C tools' names (multi-call).
	bin := filepath.Join(work, "goverbs")
	gb := exec.Command("go", "build", "-o", bin, "./cmd/goverbs")
	gb.Env = append(os.Environ(), "CGO_ENABLED=0")
	gb.Stdout, gb.Stderr = os.Stderr, os.Stderr
	if err := gb.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "labsuite: build cmd/goverbs:", err)
		return 1
	}
	manifest := filepath.Join(work, "manifest.json")
	m := struct {
		Pkgs       []pkg
		Run        string
		Verbose    bool
		PkgTimeout string
	}{pkgs, *runRE, *verbose, pkgTimeout.String()}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(manifest, b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 1
	}
	env := lab.HostEnv()
	env["GOVERBS_LAB_REQUIRED"] = "1"
	env["GOVERBS_BIN"] = bin
	res, err := lab.RunResult(context.Background(), lab.Config{Timeout: *timeout, Env: env, Workdir: root},
		[]string{self, "-inner", manifest})
	if err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		fmt.Println("FAIL\tlab [the lab VM failed]")
		return 1
	}
	fmt.Fprintf(os.Stderr, "labsuite: %d packages in one lab boot (%s): boot %.1fs, tests %.1fs\n",
		len(pkgs), res.Accel, res.Boot.Seconds(), res.Command.Seconds())
	return res.ExitCode
}

// labPackages lists the packages among patterns whose tests import test/labtest.
func labPackages(patterns []string) ([]pkg, error) {
	args := append([]string{"list", "-f", `{{.ImportPath}}	{{.Dir}}	{{join .TestImports " "}} {{join .XTestImports " "}}`}, patterns...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []pkg
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 3)
		if len(f) < 3 {
			continue
		}
		for _, imp := range strings.Fields(f[2]) {
			if imp == "github.com/goverbs/goverbs/test/labtest" {
				pkgs = append(pkgs, pkg{ImportPath: f[0], Dir: f[1]})
				break
			}
		}
	}
	return pkgs, sc.Err()
}

// runInner runs inside the VM: every test binary in its package directory, with go test's summary lines.
func runInner(manifest string) int {
	b, err := os.ReadFile(manifest)
	if err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 1
	}
	var m struct {
		Pkgs       []pkg
		Run        string
		Verbose    bool
		PkgTimeout string
	}
	if err := json.Unmarshal(b, &m); err != nil {
		fmt.Fprintln(os.Stderr, "labsuite:", err)
		return 1
	}
	failed := 0
	for _, p := range m.Pkgs {
		args := []string{"-test.timeout=" + m.PkgTimeout}
		if m.Run != "" {
			args = append(args, "-test.run="+m.Run)
		}
		if m.Verbose {
			args = append(args, "-test.v")
		}
		cmd := exec.Command(p.Binary, args...)
		cmd.Dir = p.Dir
		var buf bytes.Buffer
		w := io.Writer(&buf)
		if m.Verbose {
			w = io.MultiWriter(&buf, os.Stdout)
		}
		cmd.Stdout, cmd.Stderr = w, w
		start := time.Now()
		err := cmd.Run()
		el := time.Since(start).Seconds()
		if err != nil {
			failed++
			if !m.Verbose {
				os.Stdout.Write(buf.Bytes())
			}
			fmt.Printf("FAIL\t%s\t%.3fs\n", p.ImportPath, el)
			continue
		}
		fmt.Printf("ok  \t%s\t%.3fs\n", p.ImportPath, el)
	}
	if failed > 0 {
		fmt.Printf("FAIL: %d of %d lab packages failed\n", failed, len(m.Pkgs))
		return 1
	}
	return 0
}
