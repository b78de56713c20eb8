package siwlab

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/test/labtest"
)

// addr is siw0's address: veth0's in the lab.
const addr = "10.233.0.1"

// rpingPort is rping's default port (7174); iWARP's connection manager listens on it with a kernel TCP socket.
const rpingPort = 7174

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestSIWDevice checks siw0 with rdma-core's and iproute2's tools: ibv_devices lists it, ibv_devinfo shows an
// iWARP device with its port active, rdma link shows it on veth0.
func TestSIWDevice(t *testing.T) {
	labtest.RequireProvider(t, "siw")
	dev := labtest.Device()
	if out := run(t, "ibv_devices"); !strings.Contains(out, dev) {
		t.Errorf("ibv_devices does not list %s:\n%s", dev, out)
	}
	out := run(t, "ibv_devinfo", "-d", dev)
	for _, want := range []string{"hca_id:\t" + dev, "transport:\t\t\tiWARP", "state:\t\t\tPORT_ACTIVE"} {
		if !strings.Contains(out, want) {
			t.Errorf("ibv_devinfo -d %s lacks %q:\n%s", dev, want, out)
		}
	}
	if out := run(t, "rdma", "link", "show", dev+"/1"); !strings.Contains(out, "state ACTIVE") || !strings.Contains(out, "netdev "+labtest.Netdev()) {
		t.Errorf("rdma link show %s/1: want state ACTIVE on %s:\n%s", dev, labtest.Netdev(), out)
	}
}

// TestSIWRping runs rdma-core's rping (librdmacm, the iWARP connection manager, SEND and RDMA READ/WRITE)
// server and client over siw0's address for a few iterations; the client starts once the server's TCP
// listener (siw's, for rdma_listen) is in /proc/net/tcp.
func TestSIWRping(t *testing.T) {
	labtest.RequireProvider(t, "siw")
	const count = 3
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var srvOut bytes.Buffer
	srv := exec.CommandContext(ctx, "rping", "-s", "-a", addr, "-C", fmt.Sprint(count), "-v")
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatalf("start rping -s: %v", err)
	}
	var srvErr error
	exited := make(chan struct{})
	go func() { srvErr = srv.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			_ = srv.Process.Kill()
			<-exited
		}
	}()
	if err := waitListening(rpingPort, exited, 30*time.Second); err != nil {
		t.Fatalf("rping -s -a %s: %v\n%s", addr, err, srvOut.String())
	}
	cli, err := exec.CommandContext(ctx, "rping", "-c", "-a", addr, "-C", fmt.Sprint(count), "-v").CombinedOutput()
	if err != nil {
		t.Fatalf("rping -c -a %s: %v\n%s\nserver:\n%s", addr, err, cli, srvOut.String())
	}
	select {
	case <-exited:
		if srvErr != nil {
			t.Fatalf("rping -s: %v\n%s", srvErr, srvOut.String())
		}
	case <-ctx.Done():
		t.Fatalf("rping -s did not end after the client's %d pings\n%s", count, srvOut.String())
	}
	t.Logf("client:\n%sserver:\n%s", cli, srvOut.String())
	if n := strings.Count(string(cli), "ping data: rdma-ping-"); n != count {
		t.Errorf("client printed %d pings, want %d:\n%s", n, count, cli)
	}
	if n := strings.Count(srvOut.String(), "ping data: rdma-ping-"); n != count {
		t.Errorf("server printed %d pings, want %d:\n%s", n, count, srvOut.String())
	}
}

// waitListening polls /proc/net/tcp and tcp6 until a socket listens on port, failing early if the server
// ended (exited is closed) and after timeout.
func waitListening(port int, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	want := fmt.Sprintf(":%04X", port)
	for {
		for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
			if listening(f, want) {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("the server ended before listening")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listens on port %d after %v", port, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// listening reports whether the /proc/net/tcp-format file lists a socket in state LISTEN (0A) whose local
// address ends with portSuffix (":1C06").
func listening(file, portSuffix string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 3 && strings.HasSuffix(f[1], portSuffix) && f[3] == "0A" {
			return true
		}
	}
	return false
}
