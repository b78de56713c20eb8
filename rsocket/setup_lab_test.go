package rsocket_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/cgroup"
	"github.com/goverbs/goverbs/cgroup/limit"
	"github.com/goverbs/goverbs/internal/cgrouptest"
	"github.com/goverbs/goverbs/rsocket"
	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// setupChildEnv marks a child of TestLabSetupFailures: "server:PORT" (a listener under a small
// RLIMIT_MEMLOCK) or "client:PORT" (a dial under one).
const setupChildEnv = "GOVERBS_TEST_RSOCKET_SETUP_CHILD"

// usage is what a failed set-up must give back: goroutines, fds, the device's mappings (rings, doorbells),
// pinned memory (VmPin) and the device's kernel objects. (Anonymous mappings are not counted: the Go heap
// grows them too.)
type usage struct {
	goroutines, fds, maps int
	pinned                uint64
	res                   map[string]uint64
}

func measure(t *testing.T) usage {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var pinned uint64
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "VmPin:"); ok {
			pinned, _ = strconv.ParseUint(strings.Fields(v)[0], 10, 64)
		}
	}
	return usage{runtime.NumGoroutine(), len(fds), bytes.Count(maps, []byte("/dev/infiniband/")), pinned << 10, labtest.ResourceCounts(t)}
}

// settled waits (bounded) until usage is back at before, and reports what is not.
func settled(t *testing.T, before usage, what string) {
	t.Helper()
	var now usage
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		now = measure(t)
		leak := now.goroutines > before.goroutines || now.fds > before.fds || now.maps > before.maps || now.pinned > before.pinned
		for k, v := range now.res {
			leak = leak || v > before.res[k]
		}
		if !leak || time.Now().After(deadline) {
			break
		}
	}
	if now.goroutines > before.goroutines {
		buf := make([]byte, 1<<16)
		t.Errorf("%s: %d goroutines, %d before:\n%s", what, now.goroutines, before.goroutines, buf[:runtime.Stack(buf, true)])
	}
	if now.fds > before.fds || now.maps > before.maps || now.pinned > before.pinned {
		t.Errorf("%s: %d fds, %d device mappings, %d bytes pinned; %d, %d and %d before", what,
			now.fds, now.maps, now.pinned, before.fds, before.maps, before.pinned)
	}
	for k, v := range now.res {
		if v > before.res[k] {
			t.Errorf("%s: %s is %d, %d before", what, k, v, before.res[k])
		}
	}
}

// echoOnce dials port with o, checks one round trip through the server's echo and closes. The connection is
// dialEcho's.
func echoOnce(t testing.TB, port int, o rsocket.Options, stalled func()) error {
	c, err := dialEcho(t, port, o, stalled)
	if err != nil {
		return err
	}
	defer c.Close()
	return echoCheck(c)
}

// dialEcho dials port, an echo server, with o, through dialChecked.
func dialEcho(t testing.TB, port int, o rsocket.Options, stalled func()) (net.Conn, error) {
	d := rsocket.Dialer{Options: o, Timeout: 30 * time.Second}
	return dialChecked(t, func() (net.Conn, error) {
		return d.DialContext(context.Background(), "rdma", hostPort(port))
	}, stalled)
}

// dialChecked dials with dial, a connection to an echo server. Where siwLosesFirstMessage it checks the
// connection with one byte through the echo (firstMessageLostErr), and a connection that stalled is closed,
// stalled (when not nil) runs, and it dials again, up to siwRaceReruns times.
func dialChecked(t testing.TB, dial func() (net.Conn, error), stalled func()) (net.Conn, error) {
	for attempt := 0; ; attempt++ {
		c, err := dial()
		if err != nil {
			return nil, err
		}
		lost, err := firstMessageLostErr(t, c, nil)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("first round trip of a new connection: %w", err)
		}
		if !lost {
			return c, nil
		}
		c.Close()
		if attempt == siwRaceReruns {
			return nil, errStalledAlways
		}
		if stalled != nil {
			stalled()
		}
	}
}

func echoCheck(c net.Conn) error {
	msg := []byte("still serving")
	if _, err := c.Write(msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if !bytes.Equal(got, msg) {
		return fmt.Errorf("echo %q, want %q", got, msg)
	}
	return nil
}

// echoServer accepts on ln until it is closed, echoing each connection; done says "closed" after each.
func echoServer(ln net.Listener, closed chan<- struct{}) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			io.Copy(c, c)
			c.Close()
			if closed != nil {
				closed <- struct{}{}
			}
		}()
	}
}

func memAvailable(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "MemAvailable:"); ok {
			n, err := strconv.ParseUint(strings.Fields(v)[0], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n << 10
		}
	}
	t.Fatal("no MemAvailable in /proc/meminfo")
	return 0
}

// A failed rsocket set-up (issue 30) is a typed error, never a panic, leaks nothing, and leaves the listener
// serving the next client. Client side, in this process: sizes over the protocol's 32-bit buffers (the
// 1<<34 and 1<<40 that panicked), a receive buffer larger than the memory available (that got the process
// OOM-killed), inline data over the device's maximum, an rdma cgroup limit met halfway through (CQ and QP
// made, the first registration refused), and queue depths over the device's maximum, which librdmacm clamps
// (so the dial succeeds). Then RLIMIT_MEMLOCK without CAP_IPC_LOCK in a child, on each side: a child client
// gets the typed error; a child server under a limit that holds one connection's buffers refuses the second
// client, logs why, and serves the third once the first has gone.
func TestLabSetupFailures(t *testing.T) {
	if v := os.Getenv(setupChildEnv); v != "" {
		setupChild(t, v)
		return
	}
	labtest.Require(t)
	labtest.RequireRoot(t)
	const port = 20460
	lc := rsocket.ListenConfig{ErrorLog: log.New(io.Discard, "", 0)}
	ln, err := lc.Listen(context.Background(), "rdma", listenAddr(port))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go echoServer(ln, nil)
	if err := echoOnce(t, port, rsocket.Options{}, nil); err != nil { // warm-up: lazily made process state
		t.Fatal(err)
	}
	avail := memAvailable(t)
	for _, tc := range []struct {
		name  string
		o     rsocket.Options
		check func(error) bool
	}{
		{"SendBuffer1<<34", rsocket.Options{SendBuffer: 1 << 34}, func(err error) bool {
			var le *rsocket.LimitError
			return errors.As(err, &le) && le.Option == "SendBuffer" && errors.Is(err, unix.EINVAL)
		}},
		{"SendBuffer1<<40", rsocket.Options{SendBuffer: 1 << 40}, func(err error) bool {
			var le *rsocket.LimitError
			return errors.As(err, &le) && le.Option == "SendBuffer" && errors.Is(err, unix.EINVAL)
		}},
		{"RecvBufferOverMemory", rsocket.Options{RecvBuffer: int(avail + 256<<20)}, func(err error) bool {
			var me *uverbs.MemoryError
			return errors.As(err, &me) && errors.Is(err, unix.ENOMEM)
		}},
		{"InlineOverDevice", rsocket.Options{InlineSize: 1 << 20}, func(err error) bool {
			var ue *uverbs.Error
			return errors.As(err, &ue) && errors.Is(err, unix.EINVAL)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := measure(t)
			d := rsocket.Dialer{Options: tc.o, Timeout: 30 * time.Second}
			c, err := d.DialContext(context.Background(), "rdma", hostPort(port))
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded")
			}
			t.Logf("%v", err)
			if !tc.check(err) {
				t.Errorf("error %T %v is not the typed error expected", errors.Unwrap(err), err)
			}
			settled(t, before, "after the failed dial")
			if err := echoOnce(t, port, rsocket.Options{}, nil); err != nil {
				t.Fatalf("the listener stopped serving: %v", err)
			}
		})
	}
	t.Run("QueuesOverDeviceClamped", func(t *testing.T) {
		before := measure(t)
		if err := echoOnce(t, port, rsocket.Options{SQSize: 1 << 20, RQSize: 1 << 20}, nil); err != nil {
			t.Fatalf("queue depths over the device's maximum are clamped as librdmacm does: %v", err)
		}
		settled(t, before, "after the connection")
	})
	var before usage
	t.Run("CgroupLimit", func(t *testing.T) {
		before = measure(t)
		h := cgrouptest.UseV2(t)
		cg := cgrouptest.NewCgroup(t, h, "rsocket-setup")
		// The dial opens a context (hca_handle) and makes PD, CQ and QP (hca_object 3); its first MR is refused.
		if err := cg.SetLimit(labtest.Device(), cgroup.ResourceValue{Resource: cgroup.HCAObject, Value: 3}); err != nil {
			t.Fatal(err)
		}
		func() {
			cgrouptest.Enter(t, cg)
			d := rsocket.Dialer{Timeout: 30 * time.Second}
			c, err := d.DialContext(context.Background(), "rdma", hostPort(port))
			if err == nil {
				c.Close()
				t.Fatal("dial succeeded under hca_object=3")
			}
			t.Logf("%v", err)
			if !errors.Is(err, limit.ErrReached) {
				t.Errorf("error %v is not the cgroup's limit (limit.ErrReached)", err)
			}
		}()
	})
	t.Run("CgroupLimitAfter", func(t *testing.T) { // out of the cgroup again (its cleanup ran)
		settled(t, before, "after the refused dial")
		if err := echoOnce(t, port, rsocket.Options{}, nil); err != nil {
			t.Fatalf("the listener stopped serving: %v", err)
		}
	})
	t.Run("MemlockClient", func(t *testing.T) {
		out, err := runSetupChild(t, "client:"+strconv.Itoa(port), nil)
		if err != nil {
			t.Fatalf("child client: %v\n%s", err, out)
		}
		if err := echoOnce(t, port, rsocket.Options{}, nil); err != nil {
			t.Fatalf("the listener stopped serving: %v", err)
		}
	})
	t.Run("MemlockServer", func(t *testing.T) { memlockServer(t, port+1) })
}

// runSetupChild runs this test in a child under setpriv without CAP_IPC_LOCK (a root process then execs
// without it) with mode in the environment; stdin, when not nil, is the child's standard input.
func runSetupChild(t *testing.T, mode string, stdin io.Reader) ([]byte, error) {
	cmd := setupChildCmd(t, mode)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	if err == nil && !strings.Contains(string(out), "--- PASS: TestLabSetupFailures") {
		err = errors.New("the child did not run the test")
	}
	return out, err
}

// setupChildCmd is this test binary run as a child of TestLabSetupFailures in mode, under setpriv without
// CAP_IPC_LOCK.
func setupChildCmd(t *testing.T, mode string) *exec.Cmd {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not found: cannot drop CAP_IPC_LOCK for the child")
	}
	cmd := exec.Command(setpriv, "--bounding-set", "-ipc_lock", "--inh-caps", "-ipc_lock", "--",
		os.Args[0], "-test.run", "^TestLabSetupFailures$", "-test.v")
	cmd.Env = append(os.Environ(), setupChildEnv+"="+mode)
	return cmd
}

// memlockLimit holds one connection's pinned buffers (default options: about 264 KiB) but not two.
const memlockLimit = 400 << 10

func setupChild(t *testing.T, mode string) {
	role, portS, _ := strings.Cut(mode, ":")
	port, _ := strconv.Atoi(portS)
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: memlockLimit, Max: memlockLimit}); err != nil {
		t.Fatal(err)
	}
	switch role {
	case "client":
		d := rsocket.Dialer{Options: rsocket.Options{SendBuffer: 1 << 20}, Timeout: 30 * time.Second}
		c, err := d.DialContext(context.Background(), "rdma", hostPort(port))
		if err == nil {
			c.Close()
			t.Fatal("dial with 1 MiB buffers succeeded under RLIMIT_MEMLOCK 400 KiB without CAP_IPC_LOCK")
		}
		var le *rsocket.LimitError
		var me *uverbs.MemlockError
		if !errors.As(err, &le) || !errors.As(err, &me) || !errors.Is(err, unix.ENOMEM) {
			t.Fatalf("dial: %T %v, want a *rsocket.LimitError with a *uverbs.MemlockError", errors.Unwrap(err), err)
		}
		t.Logf("%v", err)
	case "server":
		lc := rsocket.ListenConfig{ErrorLog: log.New(os.Stdout, "server log: ", 0)}
		ln, err := lc.Listen(context.Background(), "rdma", listenAddr(port))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		closed := make(chan struct{}, 4)
		go echoServer(ln, closed)
		fmt.Println("child: listening")
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() { // the parent asks, line by line, to wait for a connection to be closed
			if in.Text() == "wait closed" {
				<-closed
				fmt.Println("child: closed")
			}
		}
	}
}

// memlockServer runs a child server whose RLIMIT_MEMLOCK holds one connection's buffers.
func memlockServer(t *testing.T, port int) {
	cmd := setupChildCmd(t, "server:"+strconv.Itoa(port))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out labtest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		waitExit(t, cmd, "child server", &out, 30*time.Second)
	}()
	waitLine := func(s string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), s); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("child server never said %q:\n%s", s, out.String())
			}
		}
	}
	waitLine("child: listening")
	// The limit holds one connection: a connection that stalled (dialEcho) is gone in the child before the next.
	closes := 0
	waitClosed := func() {
		t.Helper()
		closes++
		io.WriteString(stdin, "wait closed\n")
		for deadline := time.Now().Add(30 * time.Second); strings.Count(out.String(), "child: closed") < closes; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("child server never said \"child: closed\" %d times:\n%s", closes, out.String())
			}
		}
	}
	first, err := dialEcho(t, port, rsocket.Options{}, waitClosed)
	if err != nil {
		t.Fatalf("first client: %v\n%s", err, out.String())
	}
	if err := echoCheck(first); err != nil {
		t.Fatal(err)
	}
	d := rsocket.Dialer{Timeout: 30 * time.Second}
	second, err := d.DialContext(context.Background(), "rdma", hostPort(port))
	if err == nil {
		second.Close()
		t.Fatalf("second client connected: the server pinned two connections' buffers under RLIMIT_MEMLOCK %d", memlockLimit)
	}
	if !errors.Is(err, unix.ECONNREFUSED) {
		t.Errorf("second client: %v, want ECONNREFUSED (the server rejects what it cannot set up)", err)
	}
	waitLine("RLIMIT_MEMLOCK")
	first.Close()
	waitClosed()
	if err := echoOnce(t, port, rsocket.Options{}, waitClosed); err != nil {
		t.Fatalf("third client, after the first closed: %v\n%s", err, out.String())
	}
	t.Logf("child server:\n%s", out.String())
}

// A dial to an address nobody answers (no neighbour on the lab's subnet) ends within Dialer.Timeout, or the
// context's deadline, with an error whose Timeout() is true, as net.Dial's does (issue 30: it took 129 s, the
// sum of librdmacm's address-resolution retries, and was not a timeout). Without a deadline the retries are
// librdmacm's, as C does.
func TestLabDialTimeout(t *testing.T) {
	labtest.Require(t)
	const nowhere = "10.233.0.99:7471"
	const bound = 2 * time.Second
	check := func(t *testing.T, err error, start time.Time) {
		t.Helper()
		el := time.Since(start)
		t.Logf("after %v: %v", el.Round(time.Millisecond), err)
		if err == nil {
			t.Fatal("dial to nowhere succeeded")
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("error %v: Timeout() is not true", err)
		}
		if el > bound+3*time.Second { // the bound plus the time to tear down the id
			t.Errorf("dial took %v, bound %v", el, bound)
		}
	}
	t.Run("Dialer.Timeout", func(t *testing.T) {
		start := time.Now()
		d := rsocket.Dialer{Timeout: bound}
		_, err := d.DialContext(context.Background(), "rdma", nowhere)
		check(t, err, start)
	})
	t.Run("ContextDeadline", func(t *testing.T) {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		_, err := rsocket.DialContext(ctx, "rdma", nowhere)
		check(t, err, start)
	})
	// Loopback: the listen succeeds, as librdmacm's rlisten does (the kernel binds 127.0.0.1), but rdma_cm
	// has no route over loopback; the dial says so.
	t.Run("Loopback", func(t *testing.T) {
		ln, err := rsocket.Listen("rdma", "127.0.0.1:20470")
		if err != nil {
			t.Fatalf("listen on 127.0.0.1: %v (librdmacm's rlisten succeeds)", err)
		}
		defer ln.Close()
		d := rsocket.Dialer{Timeout: 10 * time.Second}
		_, err = d.DialContext(context.Background(), "rdma", "127.0.0.1:20470")
		// rdma_cm's address resolution refuses the loopback destination with ENODEV on rxe, EINVAL on siw
		// (the kernel's answer with an iWARP device).
		want := unix.ENODEV
		if labtest.Provider() == "siw" {
			want = unix.EINVAL
		}
		if err == nil || !errors.Is(err, want) || !strings.Contains(err.Error(), "loopback") {
			t.Fatalf("dial 127.0.0.1: %v, want %v naming loopback", err, want)
		}
		t.Logf("%v", err)
	})
}

// The server side of a failed set-up: a Listener whose own options no connection can be set up with (sizes
// over the protocol, over the memory available, inline over the device) rejects each client (ECONNREFUSED),
// logs the typed error on ErrorLog, keeps listening (a second client is answered the same way, not left
// waiting), and leaks nothing per refused request.
func TestLabSetupFailuresServer(t *testing.T) {
	labtest.Require(t)
	avail := memAvailable(t)
	for i, tc := range []struct {
		name string
		o    rsocket.Options
		want string // in the logged error
	}{
		{"RecvBuffer1<<34", rsocket.Options{RecvBuffer: 1 << 34}, "RecvBuffer of 17179869184 exceeds the rsockets protocol's 32-bit buffer size"},
		{"SendBufferOverMemory", rsocket.Options{SendBuffer: int(avail + 256<<20)}, "exceeds MemAvailable"},
		{"InlineOverDevice", rsocket.Options{InlineSize: 1 << 20}, "create QP (RC)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := 20480 + i
			var logged labtest.SyncBuffer
			lc := rsocket.ListenConfig{Options: tc.o, ErrorLog: log.New(&logged, "", 0)}
			ln, err := lc.Listen(context.Background(), "rdma", listenAddr(port))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			accepted := make(chan error, 1)
			go func() {
				c, err := ln.Accept()
				if err == nil {
					c.Close()
					err = errors.New("a connection was accepted")
				}
				accepted <- err
			}()
			before := measure(t)
			for n := 1; n <= 2; n++ {
				d := rsocket.Dialer{Timeout: 30 * time.Second}
				c, err := d.DialContext(context.Background(), "rdma", hostPort(port))
				if err == nil {
					c.Close()
					t.Fatalf("client %d connected", n)
				}
				if !errors.Is(err, unix.ECONNREFUSED) {
					t.Fatalf("client %d: %v, want ECONNREFUSED", n, err)
				}
				for deadline := time.Now().Add(10 * time.Second); strings.Count(logged.String(), tc.want) < n; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("after client %d the listener logged %q, want %d lines with %q", n, logged.String(), n, tc.want)
					}
				}
			}
			settled(t, before, "after two refused requests")
			t.Logf("logged:\n%s", logged.String())
			ln.Close()
			if err := <-accepted; !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Accept after Close: %v, want net.ErrClosed (the listener must not have failed)", err)
			}
		})
	}
}
