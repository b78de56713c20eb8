// Package devices is goverbs' clone of rdma-core 65's ibv_devices: it lists
// the verbs devices and their node GUIDs, byte for byte like the C tool.
package devices

import (
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/verbsdev"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/verbssrc"
)

// Entry is one line of the listing.
type Entry struct {
	Name     string // ibv_get_device_name
	NodeGUID uint64 // ibv_get_device_guid, as a number (0 when unknown)
}

// Render writes the ibv_devices table for entries.
func Render(w io.Writer, entries []Entry) {
	fmt.Fprintf(w, "    %-16s\t   node GUID\n", "device")
	fmt.Fprintf(w, "    %-16s\t----------------\n", "------")
	for _, e := range entries {
		fmt.Fprintf(w, "    %-16s\t%016x\n", e.Name, e.NodeGUID)
	}
}

// Source lists the devices. Errors must wrap a unix.Errno, which is printed
// the way perror does.
type Source interface {
	Entries() ([]Entry, error)
}

// SysfsSource lists devices like libibverbs' sysfs scan (package verbsdev).
type SysfsSource struct {
	FS sysfs.FS
	// Stderr receives libibverbs' own warnings.
	Stderr io.Writer
}

// Entries implements Source.
func (s SysfsSource) Entries() ([]Entry, error) {
	devs, err := verbsdev.Lister{FS: s.FS, Stderr: s.Stderr}.List()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(devs))
	for i, d := range devs {
		out[i] = Entry{Name: d.Name, NodeGUID: verbsdev.NodeGUID(d)}
	}
	return out, nil
}

// UverbsSource lists devices like "goverbs devinfo" (package verbssrc: the
// uverbs package's discovery with libibverbs' filtering).
type UverbsSource struct {
	// Stderr receives libibverbs' warnings; may be nil.
	Stderr io.Writer
}

// Entries implements Source.
func (s UverbsSource) Entries() ([]Entry, error) {
	devs, err := verbssrc.List(s.Stderr)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(devs))
	for i, d := range devs {
		out[i] = Entry{Name: d.Name, NodeGUID: uint64(d.NodeGUID)}
	}
	return out, nil
}

// Command is one configured ibv_devices.
type Command struct {
	// Source lists the devices; libibverbs' sysfs scan of the real system
	// (SysfsSource over sysfs.Host) when nil.
	Source Source
}

// Main is the tool as goverbs runs it: ibv_devices over UverbsSource.
// ibv_devices takes no options and prints no program name: prog and args
// are ignored, as the C tool ignores its arguments.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	return Command{Source: UverbsSource{Stderr: stderr}}.Run(args, stdout, stderr)
}

// Run runs the command and returns the exit status of the C tool: 0, or 1
// when the device list cannot be read.
func (c Command) Run(args []string, stdout, stderr io.Writer) int {
	src := c.Source
	if src == nil {
		verbsdev.WarnMemlock(stderr)
		src = SysfsSource{FS: sysfs.Host, Stderr: stderr}
	}
	entries, err := src.Entries()
	if err != nil {
		fmt.Fprintf(stderr, "Failed to get IB devices list: %s\n", cstd.Strerror(cstd.ErrnoOf(err, unix.EIO)))
		return 1
	}
	Render(stdout, entries)
	return 0
}
