package conformance

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// snapshot is what the leak check compares: the device's kernel objects (restrack summary over RDMA netlink, the
// same numbers `rdma resource show DEV` prints) and this process's open file descriptors.
type snapshot struct {
	res map[string]uint64
	fds int
}

func (s snapshot) String() string { return fmt.Sprintf("resources %v, open fds %d", s.res, s.fds) }

func takeSnapshot(dev string) (snapshot, error) {
	c, err := netlinkrdma.Dial()
	if err != nil {
		return snapshot{}, err
	}
	d, err := c.Device(dev)
	if err != nil {
		c.Close()
		return snapshot{}, err
	}
	sum, err := c.ResourceSummary(d.Index)
	c.Close()
	if err != nil {
		return snapshot{}, err
	}
	s := snapshot{res: map[string]uint64{}}
	for _, rc := range sum.Counts {
		s.res[rc.Name] = rc.Current
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return snapshot{}, err
	}
	s.fds = len(fds) - 1 // ReadDir's own fd
	return s, nil
}

func (s snapshot) equal(o snapshot) bool {
	if s.fds != o.fds || len(s.res) != len(o.res) {
		return false
	}
	for k, v := range s.res {
		if o.res[k] != v {
			return false
		}
	}
	return true
}

// warmUp creates, once, the process-wide things the first verbs calls create lazily and keep (the Go runtime's
// network poller fds, used by completion channels and async events), so they do not count as leaks.
func warmUp(dev string) error {
	ctx, err := uverbs.Open(dev)
	if err != nil {
		return err
	}
	ch, err := ctx.CreateCompChannel(nil)
	if err != nil {
		ctx.Close()
		return err
	}
	if err := ch.Close(); err != nil {
		return err
	}
	return ctx.Close()
}

// TestMain runs the suite and, on a device, the leak check: the device's kernel object counts and the process's
// open fds after the suite must equal those before it. A difference fails the run.
func TestMain(m *testing.M) {
	flag.Parse()
	if !labtest.HasDevice() || testing.Short() {
		os.Exit(m.Run())
	}
	if err := warmUp(labtest.Device()); err != nil {
		fmt.Fprintf(os.Stderr, "conformance: open %s: %v\n", labtest.Device(), err)
		os.Exit(m.Run()) // the tests themselves report the failure
	}
	before, err := takeSnapshot(labtest.Device())
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance: leak check: snapshot before: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	after, err := takeSnapshot(labtest.Device())
	if err != nil {
		fmt.Fprintf(os.Stderr, "conformance: leak check: snapshot after: %v\n", err)
		os.Exit(1)
	}
	if !before.equal(after) {
		fmt.Fprintf(os.Stderr, "conformance: LEAK CHECK FAILED\n  before: %v\n  after:  %v\n", before, after)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "conformance: leak check passed: %v\n", after)
	os.Exit(code)
}
