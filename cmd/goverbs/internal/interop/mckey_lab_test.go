package interop_test

import (
	"bytes"
	"context"
	"fmt"
	"github.com/goverbs/goverbs/test/interop"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/mckey"
	"github.com/goverbs/goverbs/test/labtest"
)

var mckeyTool = ppTool{"mckey", mckey.Main}

// joinWatch is a stdout that records everything and closes joined when the
// "mckey: joined" line has been written: the receiver must be in the group
// before the sender starts.
type joinWatch struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	joined chan struct{}
	seen   bool
}

func newJoinWatch() *joinWatch { return &joinWatch{joined: make(chan struct{})} }

func (w *joinWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.seen && strings.Contains(w.buf.String(), "mckey: joined ") {
		w.seen = true
		close(w.joined)
	}
	return len(p), nil
}

func (w *joinWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// runMckey runs one mckey, goverbs' static binary or rdma-core's (line-buffered through stdbuf so the joined
// line can be seen while it runs), and sends its result on the returned channel. Both are processes, so the
// context ends a receiver that waits for ever.
func runMckey(ctx context.Context, bin string, args []string, w *joinWatch) <-chan ppResult {
	res := make(chan ppResult, 1)
	argv := append([]string{"stdbuf", "-oL", "mckey"}, args...)
	if bin != "" {
		argv = append([]string{bin, "mckey"}, args...)
	}
	go func() {
		var e bytes.Buffer
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = w, &e
		err := cmd.Run()
		res <- exitResult(w.String(), e.String(), err)
	}()
	return res
}

func mckeyOut(role, group string, transfers bool) string {
	s := "mckey: starting " + role + "\nmckey: joining\nmckey: joined dgid: ::ffff:" + group + " mlid 0x0 sl 0\n"
	if transfers {
		if role == "client" {
			s += "initiating data transfers\n"
		} else {
			s += "receiving data transfers\n"
		}
		s += "data transfers complete\n"
	}
	return s + "test complete\nreturn status 0\n"
}

// TestLabMckeyInterop: a receiver joins, then a sender of the other implementation joins the same group and
// sends; the receiver must get every message (it polls until it has them) and both print the C tool's lines.
func TestLabMckeyInterop(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "mckey", "rdmacm-utils")
	interop.NeedTool(t, "stdbuf", "coreutils")
	// Whether this kernel's rxe delivers a multicast datagram to a receiver on the same device is the kernel's
	// business (on 6.12 the receivers got nothing in every Go/C pairing of one run): ask rdma-core's own pair
	// first, bounded, and assert the Go pairs only where the C pair works; the skip prints what the C pair did.
	if k := labtest.Kernel(); k.Major == 6 && k.Minor == 12 {
		// Measured on 6.12.117 (docs/kernels.md): rdma-core's own mckey pair lost the data in 5 of 6 runs,
		// the Go/C pairings likewise; the sender's rxe completed its sends without sending (sent_pkts).
		t.Skipf("rxe of Linux %s completes multicast UD sends it never transmits, rdma-core's own mckey pair included (docs/kernels.md)", k)
	}
	bin := interop.Binary(t)
	if why := mckeyCPairFails(); why != "" {
		t.Skipf("multicast loopback on rxe of Linux %s: %s", labtest.Kernel(), why)
	}
	for i, c := range []struct{ common, sender []string }{
		{nil, nil},
		{[]string{"-C", "3", "-S", "1024"}, nil},
		{nil, []string{"-o"}},
		{[]string{"-c", "2", "-C", "4"}, nil},
	} {
		for _, goRecv := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v+%v/goReceiver=%v", c.common, c.sender, goRecv), func(t *testing.T) {
				// UD multicast may lose a datagram (the receiver then waits for ever, as C mckey does), and 7.3.4's
				// rxe also drops multicast sends it completes, less often than 6.12's (two runs in a row lost in
				// one matrix run, sent_pkts +5 and +2 for 10 sends; docs/kernels.md): a lost run is retried, up
				// to four tries, each on a fresh group, and says so with the netdev's groups and counters.
				var r, s ppResult
				var group string
				for try := 1; ; try++ {
					group = fmt.Sprintf("239.1.%d.%d", try, 10+2*i+btoi(goRecv))
					var lost string
					recvBin, sendBin := bin, ""
					if !goRecv {
						recvBin, sendBin = "", bin
					}
					r, s, lost = mckeyPairRun(t, recvBin, sendBin, c.common, c.sender, group)
					if lost == "" {
						break
					}
					if try == 4 {
						t.Fatal(lost)
					}
					t.Logf("try %d: %s; once more", try, lost)
				}
				joins := 1
				if len(c.common) > 0 && c.common[0] == "-c" {
					joins = 2
				}
				wantR := strings.Replace(mckeyOut("server", group, true), "\nreceiving", strings.Repeat(
					"\nmckey: joined dgid: ::ffff:"+group+" mlid 0x0 sl 0", joins-1)+"\nreceiving", 1)
				wantS := strings.Replace(mckeyOut("client", group, true), "\ninitiating", strings.Repeat(
					"\nmckey: joined dgid: ::ffff:"+group+" mlid 0x0 sl 0", joins-1)+"\ninitiating", 1)
				if r.rc != 0 || s.rc != 0 || r.out != wantR || s.out != wantS || r.err != "" || s.err != "" {
					t.Fatalf("receiver: rc %d\n%s%s\nsender: rc %d\n%s%s", r.rc, r.out, r.err, s.rc, s.out, s.err)
				}
			})
		}
	}
}

// mckeyPairRun runs one receiver and one sender on group (each goverbs' binary when its path is set, else
// rdma-core's); lost is non-empty when the receiver did not get its data within the bound.
func mckeyPairRun(t *testing.T, recvBin, sendBin string, common, sender []string, group string) (r, s ppResult, lost string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rArgs := append([]string{"-m", group, "-b", labIP}, common...)
	sArgs := append(append([]string{"-m", group, "-b", labIP, "-s"}, common...), sender...)
	rw := newJoinWatch()
	recv := runMckey(ctx, recvBin, rArgs, rw)
	select {
	case <-rw.joined:
	case r = <-recv:
		t.Fatalf("receiver exited before joining: rc %d\n%s%s", r.rc, r.out, r.err)
	case <-ctx.Done():
		t.Fatalf("receiver did not join:\n%s", rw.String())
	}
	before := rxeCounters()
	sw := newJoinWatch()
	select {
	case s = <-runMckey(ctx, sendBin, sArgs, sw):
	case <-ctx.Done():
		t.Fatalf("sender did not finish:\n%s", sw.String())
	}
	select {
	case r = <-recv:
	case <-time.After(15 * time.Second):
		// Read while the receiver still waits (the deferred cancel then ends it): is the group joined?
		maddr, _ := exec.Command("ip", "maddr", "show", "dev", labtest.Netdev()).CombinedOutput()
		return r, s, fmt.Sprintf("receiver did not finish after the sender (rc %d\n%s%s):\n%s\nip maddr show dev %s:\n%s"+
			"rxe counters before the sender: %s\nand now: %s", s.rc, s.out, s.err, rw.String(), labtest.Netdev(), maddr,
			before, rxeCounters())
	}
	return r, s, ""
}

// mckeyCPairFails runs rdma-core's mckey as receiver and sender on the lab device and says why no data
// arrived ("" when the receiver got it all).
func mckeyCPairFails() string {
	why := mckeyCPairRun("239.1.0.9")
	if why != "" {
		why = mckeyCPairRun("239.1.0.10") // UD may lose a datagram: once more, on a fresh group
	}
	return why
}

func mckeyCPairRun(group string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	args := []string{"-m", group, "-b", labIP}
	rw := newJoinWatch()
	recv := runMckey(ctx, "", args, rw)
	select {
	case <-rw.joined:
	case r := <-recv:
		return fmt.Sprintf("the C receiver exited before joining (rc %d: %s)", r.rc, strings.TrimSpace(r.out+r.err))
	case <-ctx.Done():
		return "the C receiver did not join"
	}
	if s := <-runMckey(ctx, "", append(args, "-s"), newJoinWatch()); s.rc != 0 {
		return fmt.Sprintf("the C sender failed (rc %d: %s)", s.rc, strings.TrimSpace(s.out+s.err))
	}
	select {
	case r := <-recv:
		if r.rc != 0 {
			return fmt.Sprintf("the C receiver failed (rc %d)", r.rc)
		}
		return ""
	case <-ctx.Done():
		return "rdma-core's mckey receiver got no data from rdma-core's mckey sender (45 s bound)"
	}
}

// Runs that end before any data: same stdout, stderr and status as rdma-core's mckey.
func TestLabMckeyErrorsMatchC(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "mckey", "rdmacm-utils")
	for _, args := range [][]string{
		{"-x"},
		{},                // no group: getaddrinfo fails
		{"-M", "ff0e::1"}, // -M needs -b
		{"-m", "239.1.2.1", "-b", labIP, "-S", "2048"}, // larger than the active MTU
		{"-m", "239.1.2.2", "-b", "10.233.0.2"},        // a netdev without an RDMA device
		{"-m", "239.1.2.3", "-b", labIP, "-l"},         // no loopback: rxe refuses the QP create flag
		{"-m", "239.1.2.4", "-b", labIP, "-C", "0"},    // join and leave, no data
		{"-m", "239.1.2.5", "-b", labIP, "-s", "-S", "0"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			c := cPP(mckeyTool, args)
			g := goPP(mckeyTool, args)
			if c.rc != g.rc || c.out != g.out || c.err != g.err {
				t.Errorf("C: rc %d\n%s%s\nGo: rc %d\n%s%s", c.rc, c.out, c.err, g.rc, g.out, g.err)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rxeCounters is the lab device's sent and received packet counters, as rdma statistic shows them.
func rxeCounters() string {
	out, err := exec.Command("rdma", "statistic", "show", "link", labtest.Device()+"/1").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(rdma statistic: %v)", err)
	}
	var keep []string
	f := strings.Fields(string(out))
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "sent_pkts" || f[i] == "rcvd_pkts" || f[i] == "send_err" {
			keep = append(keep, f[i]+" "+f[i+1])
		}
	}
	return strings.Join(keep, " ")
}
