// Command goverbs is the goverbs multi-call binary: the RDMA tools
// (ibv_devices, ibv_devinfo, ibstat, ...) reimplemented in Go with output
// identical to rdma-core's.
//
// Run a tool as a subcommand ("goverbs devinfo -v") or through a link named
// after the C tool ("ln -s goverbs ibv_devinfo; ./ibv_devinfo -v").
// "goverbs help" lists the tools.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
)

func main() {
	stop := startProfile(os.Stderr)
	code := run(os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// ProfileEnv names a directory where each run writes a CPU profile of itself, TOOL-PID.pprof (for go tool
// pprof; 1000 samples per second of CPU). A run ended by SIGINT or SIGTERM writes its profile before it exits
// (status 128+signal), so a server tool stopped that way is profiled too. Unset, nothing changes.
const ProfileEnv = "GOVERBS_CPUPROFILE"

func startProfile(stderr io.Writer) (stop func()) {
	dir := os.Getenv(ProfileEnv)
	if dir == "" {
		return func() {}
	}
	tool := filepath.Base(os.Args[0])
	if len(os.Args) > 1 && tool == "goverbs" {
		tool = filepath.Base(os.Args[1])
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", tool, os.Getpid())))
	if err == nil {
		runtime.SetCPUProfileRate(1000)
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(stderr, "goverbs: %s: %v\n", ProfileEnv, err)
		return func() {}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		pprof.StopCPUProfile()
		f.Close()
		os.Exit(128 + int(s.(syscall.Signal)))
	}()
	return func() {
		signal.Stop(sigs)
		pprof.StopCPUProfile()
		f.Close()
	}
}

// findCommand returns the command called name, as subcommand name or alias.
func findCommand(cmds []Command, name string) (Command, bool) {
	for _, c := range cmds {
		if c.Name == name {
			return c, true
		}
		for _, a := range c.Aliases {
			if a == name {
				return c, true
			}
		}
	}
	return Command{}, false
}

// run dispatches argv (argv[0] included) and returns the exit status.
func run(argv []string, stdout, stderr io.Writer) int {
	return dispatch(commands, argv, stdout, stderr)
}

func dispatch(cmds []Command, argv []string, stdout, stderr io.Writer) int {
	if len(argv) == 0 {
		argv = []string{"goverbs"}
	}
	base := filepath.Base(argv[0])
	for _, c := range cmds {
		for _, a := range c.Aliases {
			if a == base {
				// Multi-call: the tool sees argv[0] exactly as the C tool
				// would.
				return c.Run(argv[0], argv[1:], stdout, stderr)
			}
		}
	}
	if len(argv) < 2 {
		writeHelp(stderr, cmds)
		return 2
	}
	switch argv[1] {
	case "help", "-h", "--help":
		writeHelp(stdout, cmds)
		return 0
	}
	c, ok := findCommand(cmds, argv[1])
	if !ok {
		fmt.Fprintf(stderr, "goverbs: unknown command %q (run \"goverbs help\" for the list)\n", argv[1])
		return 2
	}
	return c.Run(c.progName(), argv[2:], stdout, stderr)
}

func writeHelp(w io.Writer, cmds []Command) {
	var b strings.Builder
	b.WriteString("Usage: goverbs COMMAND [ARGS...]\n")
	b.WriteString("       TOOL [ARGS...]    (goverbs invoked through a link named TOOL)\n\n")
	b.WriteString("Commands:\n")
	width := len("help")
	for _, c := range cmds {
		width = max(width, len(c.Name))
	}
	for _, c := range cmds {
		fmt.Fprintf(&b, "  %-*s  %s", width, c.Name, c.Summary)
		if len(c.Aliases) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(c.Aliases, ", "))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "  %-*s  show this list\n", width, "help")
	io.WriteString(w, b.String())
}
