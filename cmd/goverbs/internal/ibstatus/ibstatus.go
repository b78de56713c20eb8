// Package ibstatus is a clone of infiniband-diags' ibstatus (a POSIX shell script): the status of every port of
// the RDMA devices in /sys/class/infiniband, byte for byte as the script prints it under Debian's /bin/sh
// (dash), including its quirks: values are word-split and re-joined with single spaces, a missing file prints
// "unknown" (link_layer: "IB"), a device without a ports directory is a fatal error on stdout with status 255,
// and only "-h" is an option.
package ibstatus

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
	"golang.org/x/sys/unix"
)

// Command is one ibstatus run over a sysfs tree.
type Command struct {
	FS sysfs.FS // sysfs.Host on a real system
}

// Main runs ibstatus on the real system.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	return Command{FS: sysfs.Host}.Run(prog, args, stdout, stderr)
}

// fatalError ends the run as the script's fatal(): its message on stdout, status 255.
type fatalError string

func (c Command) base() string { return c.FS.SysPath("class/infiniband") }

// Run runs ibstatus with args (without argv[0]); prog is the name usage prints (basename $0).
func (c Command) Run(prog string, args []string, stdout, stderr io.Writer) (status int) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatalError)
			if !ok {
				panic(r)
			}
			fmt.Fprintf(stdout, "Fatal error:  %s\n", string(f))
			status = 255
		}
	}()
	if len(args) > 0 && args[0] == "-h" {
		p := filepath.Base(prog)
		fmt.Fprintf(stdout, "Usage:  %s  [-h] [devname[:portnum]]\n", p)
		fmt.Fprintf(stdout, "\t-h:\tthis help screen\n")
		fmt.Fprintf(stdout, "\tExamples:\n")
		fmt.Fprintf(stdout, "\t\t%s mthca1\t\t# shows status of all ports of 'mthca1'\n", p)
		fmt.Fprintf(stdout, "\t\t%s mthca0:2\t# shows status port number 2 of 'mthca0'\n", p)
		fmt.Fprintf(stdout, "\t\t%s\t\t# default: shows status of all 'mthca0' ports\n", p)
		return 255
	}
	if len(args) == 0 || args[0] == "" {
		devs, err := glob(c.base())
		if err != nil {
			panic(fatalError("No devices"))
		}
		for _, d := range devs {
			c.device(stdout, stderr, d, "+")
		}
		return 0
	}
	for _, a := range args {
		if a == "" {
			break // while [ "$1" ]
		}
		dev, port := a, a
		if i := strings.IndexByte(a, ':'); i >= 0 {
			dev = a[:i]
		}
		if i := strings.LastIndexByte(a, ':'); i >= 0 {
			port = a[i+1:]
		}
		if port == dev {
			port = "+"
		}
		// ib_status $dev $port: unquoted, so the words of both become the function's arguments.
		words := append(strings.Fields(dev), strings.Fields(port)...)
		var d, p string
		if len(words) > 0 {
			d = words[0]
		}
		if len(words) > 1 {
			p = words[1]
		}
		c.device(stdout, stderr, d, p)
	}
	return 0
}

// glob lists dir's entries as the shell's * does: no dot files, sorted bytewise; a literal "*" when none match.
func glob(dir string) ([]string, error) {
	names, err := sysfs.Names(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if !strings.HasPrefix(n, ".") {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return []string{"*"}, nil
	}
	sort.Strings(out)
	return out, nil
}

// device is the script's ib_status: every port ("+") or the ports named.
func (c Command) device(stdout, stderr io.Writer, dev, ports string) {
	dir := filepath.Join(c.base(), dev, "ports")
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		panic(fatalError(fmt.Sprintf("device '%s': sys files not found (%s)", dev, shellPath(c, dev))))
	}
	list := strings.Fields(ports)
	if ports == "+" {
		var err error
		if list, err = glob(dir); err != nil {
			panic(fatalError("No devices"))
		}
	}
	for _, p := range list {
		c.port(stdout, stderr, dev, p)
	}
}

// shellPath is the ports directory as the script names it (its base is always /sys/class/infiniband).
func shellPath(c Command, dev string) string {
	return "/sys/class/infiniband/" + dev + "/ports"
}

// port is the script's port_status.
func (c Command) port(stdout, stderr io.Writer, dev, port string) {
	dir := filepath.Join(c.base(), dev, "ports", port)
	fmt.Fprintf(stdout, "Infiniband device '%s' port %s status:\n", dev, port)
	for _, f := range []struct{ label, file, missing string }{
		{"\tdefault gid:\t", "gids/0", "unknown"},
		{"\tbase lid:\t", "lid", "unknown"},
		{"\tsm lid:\t\t", "sm_lid", "unknown"},
		{"\tstate:\t\t", "state", "unknown"},
		{"\tphys state:\t", "phys_state", "unknown"},
		{"\trate:\t\t", "rate", "unknown"},
		{"\tlink_layer:\t", "link_layer", "IB"},
	} {
		// echo "<label> " `[ -r f ] && cat f || echo <missing>`
		v := value(stderr, filepath.Join(dir, f.file), "/sys/class/infiniband/"+dev+"/ports/"+port+"/"+f.file, f.missing)
		words := strings.Fields(v)
		line := f.label
		if len(words) > 0 {
			line += " " + strings.Join(words, " ")
		}
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintln(stdout)
}

// value is what `[ -r f ] && cat f || echo missing` writes: the file, or missing when it is not readable, and
// cat's output followed by missing (with cat's complaint on stderr) when reading it fails.
func value(stderr io.Writer, path, shown, missing string) string {
	f, err := os.Open(path) // [ -r f ] fails for a missing or unreadable file
	if err != nil {
		return missing
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		msg := err.Error()
		var errno unix.Errno
		if errors.As(err, &errno) {
			msg = cstd.Strerror(errno)
		}
		fmt.Fprintf(stderr, "cat: %s: %s\n", shown, msg)
		return string(b) + "\n" + missing
	}
	return string(b)
}
