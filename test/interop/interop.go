// Package interop holds the lab tests that pair goverbs' tools with rdma-core's, perftest's and iproute2's C
// tools on the same kernel: our client against their server and the reverse.
package interop

import (
	"bufio"
	"bytes"
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
			if Listening(fmt.Sprintf("/proc/%d/net/%s", pid, f), want) {
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

// Listening reports whether a /proc/net/tcp-style table (file) has a socket in state LISTEN whose local
// address ends in portSuffix (":PORT" in the table's upper-case hex, as WaitListening builds it).
func Listening(file, portSuffix string) bool { return hasSocket(file, portSuffix, "0A") }

// Bound reports whether a /proc/net/udp-style table (file) has a socket whose local address ends in
// portSuffix (":PORT" in the table's upper-case hex), whatever its state: a bound UDP socket.
func Bound(file, portSuffix string) bool { return hasSocket(file, portSuffix, "") }

// hasSocket reports whether the table has a socket whose local address ends in portSuffix and whose state
// is state ("" for any).
func hasSocket(file, portSuffix, state string) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// sl local_address rem_address st ...
		if len(fields) > 3 && strings.HasSuffix(fields[1], portSuffix) && (state == "" || fields[3] == state) {
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
// connection would consume the single connection rping-like servers accept.
//
// The kernel marks the cm_id LISTEN before it registers the IB CM listen for the service ID (rdma_listen, then
// cma_ib_listen); a request arriving in between is rejected (reason 8) and the server never sees it. Under TCG
// on one vCPU the listening thread can be preempted in that window, so after LISTEN shows, WaitCMListening also
// waits (up to 5 s) until every thread of the owning process is blocked or has run since (waitBlocked): the
// process is then past rdma_listen. The pairs that can recognise a rejection connect again as well
// (connectPastListen).
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
				waitBlocked(int(id.PID), 5*time.Second)
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no rdma_cm id listens on port %d of %s after %v", port, dev, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitBlocked waits until every thread of process pid is blocked or has run since the first look (its CPU
// time, utime+stime, grew by a clock tick), in two samples 10 ms apart, or the process is gone, or max passes. A
// thread preempted inside rdma_listen needs microseconds to finish it once it runs again, so one that has run a
// tick is past it; a server that busy-polls for its first connection (C rsockets' raccept in riostream and
// rstream) never blocks, and passes so. This process (a listener of the test itself) is not waited for: the
// thread reading /proc is running.
func waitBlocked(pid int, max time.Duration) {
	if pid <= 0 || pid == os.Getpid() {
		return
	}
	deadline := time.Now().Add(max)
	base := map[string]threadState{}
	quiet := 0
	for quiet < 2 && time.Now().Before(deadline) {
		cur, ok := threadStates(pid)
		if !ok {
			return
		}
		settled := true
		for tid, st := range cur {
			b, seen := base[tid]
			if !seen {
				base[tid], b = st, st
			}
			if st.state == 'R' && st.cpu == b.cpu {
				settled = false
			}
		}
		if settled {
			quiet++
		} else {
			quiet = 0
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// threadState is one thread's scheduler state (R, S, D, ...) and CPU time (utime+stime, in clock ticks).
type threadState struct {
	state byte
	cpu   uint64
}

// threadStates reads /proc/PID/task/*/stat; ok is false when the process is gone.
func threadStates(pid int) (map[string]threadState, bool) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	out := make(map[string]threadState, len(ents))
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/stat")
		if err != nil {
			continue // the thread exited
		}
		// The fields follow the command name, which is in parentheses and may itself hold ") ": state is
		// field 3, utime and stime fields 14 and 15.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 || len(f[0]) != 1 {
			continue
		}
		ut, _ := strconv.ParseUint(f[11], 10, 64)
		st, _ := strconv.ParseUint(f[12], 10, 64)
		out[e.Name()] = threadState{state: f[0][0], cpu: ut + st}
	}
	return out, true
}
