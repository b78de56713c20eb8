// Command labexec is a "go test -exec" wrapper: it runs a test binary in
// the goverbs lab VM when the host has no RDMA device, and directly when it
// has one.
//
//	go install ./test/lab/cmd/labexec
//	go test -exec labexec ./uverbs/...
//
// or, without installing (go run adds an "exit status N" line on failure):
//
//	go test -exec 'go run github.com/goverbs/goverbs/test/lab/cmd/labexec' ./uverbs/...
//
// (go test runs the -exec command in the package's directory, so a relative
// ./test/lab/cmd/labexec would not be found)
//
// The test binary's arguments, stdout and stderr (byte for byte) and exit
// status pass through, so go test's output parsing keeps working. The
// environment follows lab.HostEnv (GOVERBS_* included, so
// GOVERBS_LAB_REQUIRED reaches the tests) plus GOVERBS_LAB=1. The test
// binary's directory and the directories named by -test.coverprofile,
// -test.gocoverdir, -test.outputdir and the profile flags are writable in
// the VM; the rest of the host is read-only.
//
// GOVERBS_LAB_MODE=vm forces the VM, =native forces a direct run, =auto (the
// default) picks by /sys/class/infiniband. GOVERBS_LAB_VERBOSE=1 prints the
// lab's messages and timings on stderr. If the VM cannot be set up the exit
// status is 125, on a lab timeout 124.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/goverbs/goverbs/test/lab"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: labexec TEST-BINARY [ARGS...]  (meant for go test -exec)")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1:]))
}

// hostHasRDMA reports whether the host has an RDMA device of its own.
func hostHasRDMA() bool {
	ents, err := os.ReadDir("/sys/class/infiniband")
	return err == nil && len(ents) > 0
}

func run(argv []string) int {
	mode := os.Getenv("GOVERBS_LAB_MODE")
	switch mode {
	case "", "auto":
		if hostHasRDMA() {
			mode = "native"
		} else {
			mode = "vm"
		}
	case "vm", "native":
	default:
		fmt.Fprintf(os.Stderr, "labexec: GOVERBS_LAB_MODE=%q: want auto, vm or native\n", mode)
		return 2
	}
	if mode == "native" {
		return runNative(argv)
	}
	return runVM(argv)
}

func runNative(argv []string) int {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "labexec: %v\n", err)
		return 2
	}
	err = syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "labexec: exec %s: %v\n", path, err)
	return 2
}

func runVM(argv []string) int {
	verbose, _ := strconv.ParseBool(os.Getenv("GOVERBS_LAB_VERBOSE"))
	bin, err := filepath.Abs(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "labexec: %v\n", err)
		return 2
	}
	argv = append([]string{bin}, argv[1:]...)
	cfg := lab.Config{
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		Log:    io.Discard,
		Shares: writableDirs(argv),
	}
	if verbose {
		cfg.Log = os.Stderr
	}
	if d := testTimeout(argv[1:]); d > 0 {
		// Leave the test binary's own timeout room to fire (and print its
		// goroutine dump) before the lab gives up on the VM.
		cfg.Timeout = d + 2*time.Minute
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := lab.RunResult(ctx, cfg, argv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "labexec: %v\n", err)
		return res.ExitCode
	}
	if verbose {
		fmt.Fprintf(os.Stderr, "lab: booted in %.2fs, command ran in %.2fs (%s)\n", res.Boot.Seconds(), res.Command.Seconds(), res.Accel)
	}
	return res.ExitCode
}

// outputFlags are test flags naming a file (false) or a directory (true)
// that the test binary writes.
var outputFlags = map[string]bool{
	"coverprofile": false, "cpuprofile": false, "memprofile": false, "blockprofile": false,
	"mutexprofile": false, "trace": false, "gocoverdir": true, "outputdir": true,
}

// writableDirs returns the test binary's directory and the directories its
// output flags write to, as writable shares.
func writableDirs(argv []string) []lab.Share {
	dirs := []string{filepath.Dir(argv[0])}
	outputDir := ""
	var relFiles []string
	for _, a := range argv[1:] {
		name, val, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok || !strings.HasPrefix(a, "-") {
			continue
		}
		name = strings.TrimPrefix(name, "test.")
		isDir, known := outputFlags[name]
		if !known || val == "" {
			continue
		}
		switch {
		case name == "outputdir":
			outputDir = val
			dirs = append(dirs, val)
		case isDir:
			dirs = append(dirs, val)
		case filepath.IsAbs(val):
			dirs = append(dirs, filepath.Dir(val))
		default:
			relFiles = append(relFiles, val) // relative to -test.outputdir
		}
	}
	for _, f := range relFiles {
		base := outputDir
		if base == "" {
			base, _ = os.Getwd()
		}
		dirs = append(dirs, filepath.Dir(filepath.Join(base, f)))
	}
	var shares []lab.Share
	seen := map[string]bool{}
	for _, d := range dirs {
		d, err := filepath.Abs(d)
		if err != nil || seen[d] {
			continue
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		seen[d] = true
		shares = append(shares, lab.Share{HostPath: d, Writable: true})
	}
	return shares
}

// testTimeout returns the value of -test.timeout, or 0.
func testTimeout(args []string) time.Duration {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "-test.timeout="); ok {
			d, _ := time.ParseDuration(v)
			return d
		}
	}
	return 0
}
