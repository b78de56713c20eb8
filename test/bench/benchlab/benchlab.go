// Package benchlab is what the lab benchmark commands (test/bench/cmd/...) share: building goverbs and the
// command itself for the lab, booting it with the command inside ("-inner"), and the statistics they print.
package benchlab

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/goverbs/goverbs/test/interop"
	"github.com/goverbs/goverbs/test/lab"
	"golang.org/x/sys/unix"
)

// LabIP is rxe0's netdev address in the lab (rdma_cm needs it; 127.0.0.1 has no RDMA device).
const LabIP = "10.233.0.1"

// Parse declares the flags Host runs a command in the lab with, -inner and -bin, parses the command line
// (flag.CommandLine) and returns them: whether to run the measurements here, and the goverbs binary to run.
func Parse() (inner bool, bin string) {
	in := flag.Bool("inner", false, "run the measurements here (inside the lab)")
	b := flag.String("bin", "", "goverbs binary (inner mode)")
	flag.Parse()
	return *in, *b
}

// Host builds goverbs (static, cgo-free) and the benchmark command pkg into .lab/NAME of the working
// directory, then runs the command in the lab as "-inner -bin GOVERBS args..." with cfg (its Workdir is set
// here). It returns the command's exit status, or 1 after printing why the build or the lab failed.
func Host(name, pkg string, cfg lab.Config, args ...string) int {
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	dir := filepath.Join(root, ".lab", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	gov, self := filepath.Join(dir, "goverbs"), filepath.Join(dir, name)
	for _, b := range [][]string{{"-o", gov, "./cmd/goverbs"}, {"-o", self, pkg}} {
		cmd := exec.Command("go", append([]string{"build"}, b...)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: build %s: %v\n", name, b[2], err)
			return 1
		}
	}
	cfg.Workdir = root
	code, err := lab.Run(context.Background(), cfg, append([]string{self, "-inner", "-bin", gov}, args...))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	return code
}

// Pair runs one server/client pair in the lab: it starts server, waits until it listens on port (an rdma_cm
// listener on rxe0 with cm, else a TCP one), runs client to its end and waits for the server. It returns the
// client's output (stdout and stderr) and how long the client ran; on failure, the error quotes both sides'
// output. The pair has 10 minutes.
func Pair(server, client []string, port int, cm bool) (out []byte, took time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var sout bytes.Buffer
	srv := exec.CommandContext(ctx, server[0], server[1:]...)
	srv.Stdout, srv.Stderr = &sout, &sout
	if err := srv.Start(); err != nil {
		return nil, 0, err
	}
	if cm {
		err = interop.WaitCMListening("rxe0", uint16(port), time.Minute)
	} else {
		err = interop.WaitListening(port, time.Minute)
	}
	if err != nil {
		srv.Process.Kill()
		srv.Wait()
		return nil, 0, fmt.Errorf("server %q: %v\n%s", server, err, sout.Bytes())
	}
	start := time.Now()
	out, cerr := exec.CommandContext(ctx, client[0], client[1:]...).CombinedOutput()
	took = time.Since(start)
	werr := srv.Wait()
	if cerr != nil || werr != nil {
		return nil, 0, fmt.Errorf("client %q: %v, server: %v\nclient:\n%s\nserver:\n%s", client, cerr, werr, out, sout.Bytes())
	}
	return out, took, nil
}

// Median is the median of v (0 for none); v is not changed.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Spread is (max-min)/median of v: how far identical runs disagree (0 for fewer than two).
func Spread(v []float64) float64 {
	m := Median(v)
	if len(v) < 2 || m == 0 {
		return 0
	}
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return (hi - lo) / m
}

// RsocketConfDir is librdmacm's RS_CONF_DIR and goverbs' rsocket.ConfigDir: both the C and the Go tools read
// their defaults there.
const RsocketConfDir = "/etc/rdma/rsocket"

// MountRsocketConf mounts a tmpfs over RsocketConfDir's parent, /etc/rdma (the lab's root is the host's,
// read-only; rdma-core's package owns /etc/rdma), so that SetRsocketConf can write it. Inside the lab only.
func MountRsocketConf() (unmount func(), err error) {
	dir := filepath.Dir(RsocketConfDir)
	if err := unix.Mount("benchlab", dir, "tmpfs", 0, "mode=0755"); err != nil {
		return nil, fmt.Errorf("tmpfs on %s: %w", dir, err)
	}
	if err := os.MkdirAll(RsocketConfDir, 0o755); err != nil {
		unix.Unmount(dir, 0)
		return nil, err
	}
	return func() { unix.Unmount(dir, 0) }, nil
}

// SetRsocketConf writes value into the file name of RsocketConfDir, or removes the file when value is ""
// (the built-in default).
func SetRsocketConf(name, value string) error {
	p := filepath.Join(RsocketConfDir, name)
	if value == "" {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	return os.WriteFile(p, []byte(value+"\n"), 0o644)
}
