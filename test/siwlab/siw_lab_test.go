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

	"github.com/goverbs/goverbs/test/interop"
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

// TestSIWRping runs rping (librdmacm, the iWARP connection manager, SEND and RDMA READ/WRITE) server and
// client over siw0's address for a few iterations, in every pairing of rdma-core's rping and goverbs' (whose
// verbs go through providers/siw): C-C (the lab's control), goverbs as client, goverbs as server, goverbs on
// both sides. The client starts once the server's TCP listener (siw's, for rdma_listen) is in /proc/net/tcp.
//
// Linux 7.3.4's siw loses the client's first message about two runs in five, C against C as much as with
// goverbs (0 of 20 on 6.1 and 6.12): the passive side's connection manager takes the socket's data-ready
// callback for the SEND that arrives right after its MPA reply and never hands it to the QP (siw's dynamic
// debug shows the data read only when the client closes), so the server waits for it forever and the client
// for the server. A pair that stalls that way (the server waiting for the client's advertisement, killed at
// the attempt's deadline) is run again, up to siwRaceReruns more times, with a note; any other failure fails.
func TestSIWRping(t *testing.T) {
	labtest.RequireProvider(t, "siw")
	for _, pair := range [][2]string{{"c", "c"}, {"c", "go"}, {"go", "c"}, {"go", "go"}} {
		t.Run(pair[0]+"-server/"+pair[1]+"-client", func(t *testing.T) {
			for attempt := 0; ; attempt++ {
				stalled, msg := rpingPair(t, pair[0], pair[1])
				if msg == "" {
					return
				}
				if !stalled || attempt == siwRaceReruns {
					t.Fatal(msg)
				}
				labtest.Note(t, "%s-server/%s-client: the first message was lost (siw's passive-side race), running the pair again", pair[0], pair[1])
			}
		})
	}
}

// siwRaceReruns bounds the reruns of a pair that met siw's lost first message: at two in five, eleven stalls
// in a row are a chance of 4e-5.
const siwRaceReruns = 10

// stallDeadline is how long one attempt may take: a pair takes under a second in the lab, a stalled one
// never ends by itself.
const stallDeadline = 20 * time.Second

// rpingCmd is rping ("c": rdma-core's) or goverbs' clone ("go") with args.
func rpingCmd(ctx context.Context, t *testing.T, impl string, args ...string) *exec.Cmd {
	if impl == "go" {
		return exec.CommandContext(ctx, interop.Binary(t), append([]string{"rping"}, args...)...)
	}
	return exec.CommandContext(ctx, "rping", args...)
}

// rpingPair runs one pair and returns "" when both sides printed their pings and exited 0, else what went
// wrong, and whether it was the stall of siw's lost first message (the server still waiting for the client's
// advertisement or its RDMA READ when the attempt's deadline ended both).
func rpingPair(t *testing.T, srvImpl, cliImpl string) (stalled bool, msg string) {
	const count = 3
	// The client has the attempt's deadline; the server some seconds more, so that a stalled server sees the
	// killed client's disconnect and says what it was waiting for.
	ctx, cancel := context.WithTimeout(context.Background(), stallDeadline)
	defer cancel()
	srvCtx, srvCancel := context.WithTimeout(context.Background(), stallDeadline+15*time.Second)
	defer srvCancel()
	var srvOut bytes.Buffer
	srv := rpingCmd(srvCtx, t, srvImpl, "-s", "-a", addr, "-C", fmt.Sprint(count), "-v")
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatalf("start %s rping -s: %v", srvImpl, err)
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
	if err := waitListening(rpingPort, exited, stallDeadline); err != nil {
		return false, fmt.Sprintf("%s rping -s -a %s: %v\n%s", srvImpl, addr, err, srvOut.String())
	}
	cli, err := rpingCmd(ctx, t, cliImpl, "-c", "-a", addr, "-C", fmt.Sprint(count), "-v").CombinedOutput()
	if err == nil {
		select {
		case <-exited:
			err = srvErr
		case <-srvCtx.Done():
			err = fmt.Errorf("the server did not end after the client's %d pings", count)
		}
	}
	if err != nil {
		<-exited // the client's disconnect, or the server's own deadline, ends the server
		stalled = ctx.Err() != nil && (strings.Contains(srvOut.String(), "wait for RDMA_READ_ADV state") ||
			strings.Contains(srvOut.String(), "wait for RDMA_READ_COMPLETE state"))
		return stalled, fmt.Sprintf("%s-server/%s-client: %v\nclient:\n%s\nserver:\n%s", srvImpl, cliImpl, err, cli, srvOut.String())
	}
	t.Logf("client:\n%sserver:\n%s", cli, srvOut.String())
	if n := strings.Count(string(cli), "ping data: rdma-ping-"); n != count {
		return false, fmt.Sprintf("client printed %d pings, want %d:\n%s", n, count, cli)
	}
	if n := strings.Count(srvOut.String(), "ping data: rdma-ping-"); n != count {
		return false, fmt.Sprintf("server printed %d pings, want %d:\n%s", n, count, srvOut.String())
	}
	return false, ""
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
