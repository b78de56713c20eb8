// Package interop holds the lab tests that pair goverbs' tools with rdma-core's, perftest's and iproute2's C
// tools on the same kernel: our client against their server and the reverse.
package interop

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/goverbs/goverbs/netlinkrdma"
)

// WaitListening waits until a TCP socket of this process's network namespace listens on port (read from
// /proc/net/tcp and tcp6, so the single connection a pingpong or perftest server accepts is not consumed by
// probing).
func WaitListening(port int, timeout time.Duration) error {
	return WaitListeningIn(os.Getpid(), port, timeout, nil)
}

// WaitListeningIn is WaitListening in the network namespace of process pid (/proc/PID/net, so a server run
// on another host of the lab is seen); it gives up early when exited is closed (the server died).
func WaitListeningIn(pid, port int, timeout time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	want := fmt.Sprintf(":%04X", port)
	for {
		for _, f := range []string{"tcp", "tcp6"} {
			if listening(fmt.Sprintf("/proc/%d/net/%s", pid, f), want) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on TCP port %d after %v", port, timeout)
		}
		select {
		case <-exited:
			return fmt.Errorf("the server exited before listening on TCP port %d", port)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func listening(file, portSuffix string) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// sl local_address rem_address st ...; state 0A is LISTEN.
		if len(fields) > 3 && strings.HasSuffix(fields[1], portSuffix) && fields[3] == "0A" {
			return true
		}
	}
	return false
}

// Port returns a TCP port for test n, away from the tools' defaults.
func Port(n int) int { return 19000 + n }

// Itoa is strconv.Itoa, for building argument lists.
func Itoa(n int) string { return strconv.Itoa(n) }

// WaitCMListening waits until an rdma_cm id listens on port of the lab device (read from the kernel's
// resource tracker, `rdma resource show cm_id`): rdma_cm has no TCP port to watch, and probing with a
// connection would consume the single connection rping-like servers accept. The kernel shows the cm_id LISTEN a
// moment before its IB CM listen exists: a client may still be rejected (reason 8) right after; the pairs
// that use it connect again then (connectPastListen).
func WaitCMListening(dev string, port uint16, timeout time.Duration) error {
	c, err := netlinkrdma.Dial()
	if err != nil {
		return err
	}
	defer c.Close()
	d, err := c.Device(dev)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		ids, err := c.CMIDs(netlinkrdma.ResQuery{DevIndex: d.Index})
		if err != nil {
			return err
		}
		for _, id := range ids {
			if id.State.String() == "LISTEN" && id.SrcAddr.Port() == port {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no rdma_cm id listens on port %d of %s after %v", port, dev, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
