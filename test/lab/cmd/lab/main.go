// Command lab runs one command in the goverbs lab VM (a Debian kernel,
// GOVERBS_LAB_KERNEL=6.1|6.12|newest, with rdma_rxe, or siw with -provider
// siw, under QEMU; the host's root visible read-only) and exits with the
// command's status.
//
//	go run ./test/lab/cmd/lab [flags] -- CMD [ARGS...]
//	go run ./test/lab/cmd/lab -sh 'ibv_devices; rdma link'
//
// The command's stdout and stderr are passed through byte for byte. On
// stderr the lab adds one line: "lab: booted in X.XXs, command ran in Y.YYs"
// (-q leaves it out). If the VM cannot be set up the exit status is 125;
// if the run times out it is 124.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/goverbs/goverbs/test/lab"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg   lab.Config
		shell = fs.String("sh", "", "run this `script` with /bin/sh -c instead of a command after --")
		quiet = fs.Bool("q", false, "do not print the boot and run times")
		peer  = fs.String("peer", "", "build (once, in the lab cache) the C tools of Debian `release` (trixie, sid) and pass their root as GOVERBS_LAB_PEER_<RELEASE>")
	)
	fs.IntVar(&cfg.Memory, "m", 2048, "VM memory in `MiB`")
	fs.IntVar(&cfg.CPUs, "smp", 0, "number of virtual `CPUs` (default 2 with KVM, 1 under TCG)")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Minute, "limit for the whole run (0: none)")
	fs.StringVar(&cfg.OutDir, "out", "", "host `dir` the command can write to, at $GOVERBS_LAB_OUT in the VM")
	fs.StringVar(&cfg.Workdir, "C", "", "working `dir` of the command (default: current directory)")
	fs.BoolVar(&cfg.ICount, "icount", false, "count instructions: one vCPU, guest time = executed instructions (see lab.Config.ICount)")
	fs.BoolVar(&cfg.NoRXE, "no-rxe", false, "do not create rxe0 (siw0 with -provider siw; also GOVERBS_LAB_NO_RXE=1)")
	fs.StringVar(&cfg.Provider, "provider", "", "software RDMA `provider`: rxe (rxe0) or siw (siw0, siw.ko built once from Debian's source) (default $"+lab.ProviderEnv+", else rxe)")
	fs.BoolVar(&cfg.Debug, "debug", false, "show the kernel console (also GOVERBS_LAB_DEBUG=1)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: lab [flags] -- CMD [ARGS...]\n       lab [flags] -sh SCRIPT\n\nRuns a command in the goverbs lab VM.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if _, err := lab.CheckProvider(cfg.Provider); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	argv := fs.Args()
	switch {
	case *shell != "" && len(argv) > 0:
		fmt.Fprintln(stderr, "lab: give either -sh or a command, not both")
		return 2
	case *shell != "":
		argv = lab.Shell(*shell)
	case len(argv) == 0:
		fs.Usage()
		return 2
	}
	cfg.Stdout, cfg.Stderr, cfg.Log = stdout, stderr, stderr
	if *peer != "" {
		if _, ok := lab.PeerEras[*peer]; !ok {
			fmt.Fprintf(stderr, "lab: -peer %q: no such release (have trixie, sid)\n", *peer)
			return 2
		}
		cache, err := lab.CacheDir()
		if err != nil {
			fmt.Fprintln(stderr, "lab:", err)
			return 1
		}
		root, err := lab.EnsurePeerRoot(context.Background(), cache, *peer, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "lab:", err)
			return 1
		}
		cfg.Env = lab.HostEnv()
		cfg.Env["GOVERBS_LAB_PEER_"+strings.ToUpper(*peer)] = root
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := lab.RunResult(ctx, cfg, argv)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return res.ExitCode
	}
	if !*quiet {
		fmt.Fprintf(stderr, "lab: booted in %.2fs, command ran in %.2fs (%s, %.2fs CPU)\n", res.Boot.Seconds(), res.Command.Seconds(), res.Accel, res.CPU.Seconds())
	}
	return res.ExitCode
}
