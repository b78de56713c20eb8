package cmtime

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/rdmacm"
)

// goldenPeers is struct peer_info[2] as rdma-core 65's cmtime sends it on x86-64 Linux: a listener at
// 10.233.0.1:4791 (sockaddr_in: family 2 little-endian, port big-endian, address) with role 1, then a connecting
// peer (all-zero sockaddr_storage, role 0). Each entry is 128 bytes of sockaddr_storage, a 4-byte enum and 4 bytes
// of padding.
func goldenPeers() []byte {
	b := make([]byte, 2*136)
	copy(b, []byte{0x02, 0x00, 0x12, 0xb7, 0x0a, 0xe9, 0x00, 0x01})
	copy(b[128:], []byte{0x01, 0x00, 0x00, 0x00})
	return b
}

func TestPeerInfoGolden(t *testing.T) {
	ps := []peerInfo{
		peerInfoFor(netip.MustParseAddrPort("10.233.0.1:4791"), roleListen),
		peerInfoFor(netip.AddrPort{}, roleConnect),
	}
	got := encodePeers(ps)
	if want := goldenPeers(); !bytes.Equal(got, want) {
		t.Fatalf("encoded\n%s\nwant\n%s", hex.Dump(got), hex.Dump(want))
	}
	back, err := decodePeers(got)
	if err != nil {
		t.Fatal(err)
	}
	if back[0] != ps[0] || back[1] != ps[1] {
		t.Fatalf("decoded %+v, want %+v", back, ps)
	}
	if ap := back[0].AddrPort(); ap != netip.MustParseAddrPort("10.233.0.1:4791") {
		t.Fatalf("listener address %v", ap)
	}
	if ap := back[1].AddrPort(); ap.IsValid() {
		t.Fatalf("connecting peer has address %v", ap)
	}
	// C's padding (whatever the stack held) is ignored.
	b := goldenPeers()
	copy(b[132:136], []byte{0xde, 0xad, 0xbe, 0xef})
	if back, _ := decodePeers(b); back[0] != ps[0] {
		t.Fatalf("padding changed the decoded entry: %+v", back[0])
	}
}

func TestPeerInfoGoldenIPv6(t *testing.T) {
	want := make([]byte, 136)
	copy(want, []byte{0x0a, 0x00, 0x1d, 0x2f, 0, 0, 0, 0, 0xfe, 0x80})
	want[23] = 0x01
	want[24] = 0x03 // sin6_scope_id, host order
	copy(want[128:], []byte{0x01, 0, 0, 0})
	ap := netip.MustParseAddrPort("[fe80::1%3]:7471")
	got := encodePeers([]peerInfo{peerInfoFor(ap, roleListen)})
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded\n%s\nwant\n%s", hex.Dump(got), hex.Dump(want))
	}
	back, _ := decodePeers(got)
	if back[0].AddrPort() != ap {
		t.Fatalf("decoded %v, want %v", back[0].AddrPort(), ap)
	}
}

func TestPeerInfoBadLength(t *testing.T) {
	for _, n := range []int{1, 135, 137, 271} {
		if _, err := decodePeers(make([]byte, n)); err == nil {
			t.Errorf("%d bytes decoded", n)
		}
	}
	if ps, err := decodePeers(nil); err != nil || len(ps) != 0 {
		t.Errorf("empty: %v %v", ps, err)
	}
}

func FuzzDecodePeers(f *testing.F) {
	f.Add(goldenPeers())
	f.Add(make([]byte, 136))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := decodePeers(b)
		if err != nil {
			if len(b)%peerInfoSize == 0 {
				t.Fatalf("%d bytes refused: %v", len(b), err)
			}
			return
		}
		enc := encodePeers(ps)
		if len(enc) != len(b) {
			t.Fatalf("re-encoded %d bytes from %d", len(enc), len(b))
		}
		for i := range ps {
			o := i * peerInfoSize
			if !bytes.Equal(enc[o:o+132], b[o:o+132]) {
				t.Fatalf("entry %d does not round-trip", i)
			}
			ps[i].AddrPort() // never panics
		}
		again, _ := decodePeers(enc)
		for i := range ps {
			if again[i] != ps[i] {
				t.Fatalf("entry %d changed", i)
			}
		}
	})
}

func TestWants65(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"-s", "10.0.0.1"}, false},
		{[]string{"-h"}, false},
		{nil, false},
		{[]string{"-C", "10.0.0.1", "-b", "10.0.0.1"}, true},
		{[]string{"-b10.0.0.1", "-LC10.0.0.1"}, true},
		{[]string{"-b", "-C"}, false}, // -C is -b's argument
		{[]string{"-x", "-C", "a"}, true},
		{[]string{"-b", "10.0.0.1", "-L"}, true}, // 65-only options: 65's usage says -C is missing
		{[]string{"-b", "10.0.0.1", "-c", "5", "-p", "7000"}, false},
		{[]string{"-s", "10.0.0.1", "-m", "5"}, true},
		{[]string{"--", "-C", "a"}, false},
	} {
		if got := wants65("cmtime", c.args); got != c.want {
			t.Errorf("%q: %v, want %v", c.args, got, c.want)
		}
	}
}

const usage65Text = `usage: cmtime
	-B bind_interface (only one of -B or -b accepted)
	-b bind_address (only one of -B or -b accepted)
	-C controller_address
	[-c num_conns] connections per listener
	[-L] run as listening server
	[-m mimic_qp_delay_us]
	[-n num_threads]
	[-P num_peers] total number of peers
	[-p oob_port]
	[-q base_qpn]
	[-r retries]
	[-S] run socket baseline test, 2 peers only
	[-t timeout_ms]
`

func TestUsage65(t *testing.T) {
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"-C", "10.0.0.1"}, ""},                                        // no -b/-B
		{[]string{"-C", "10.0.0.1", "-b", "1.1.1.1", "-b", "1.1.1.1"}, ""},      // two -b
		{[]string{"-C", "10.0.0.1", "-b", "1.1.1.1", "-P", "1"}, ""},            // fewer than 2 peers
		{[]string{"-C", "10.0.0.1", "-b", "1.1.1.1", "-P", "3", "-S", "x"}, ""}, // socket test with 3 peers
		{[]string{"-C", "10.0.0.1", "-h"}, "cmtime: invalid option -- 'h'\n"},
		{[]string{"-C", "10.0.0.1", "-b", "1.1.1.1", "-S"}, "cmtime: option requires an argument -- 'S'\n"},
	} {
		var o, e bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		rc := MainContext(ctx, "cmtime", c.args, &o, &e)
		cancel()
		if rc != 1 || o.String() != usage65Text || e.String() != c.stderr {
			t.Errorf("%q: rc %d\nstdout:\n%s\nstderr:\n%s", c.args, rc, o.String(), e.String())
		}
	}
}

func TestUsage44Kept(t *testing.T) {
	var o, e bytes.Buffer
	rc := Main("cmtime", []string{"-h"}, &o, &e)
	if rc != 1 || !strings.HasPrefix(o.String(), "usage: cmtime\n\t[-s server_address]\n") {
		t.Fatalf("rc %d\n%s%s", rc, o.String(), e.String())
	}
}

func TestShowPerf65(t *testing.T) {
	var o bytes.Buffer
	tt := &t65{stdout: &o, numConns: 2, numThreads: 1}
	tt.conns = make([]conn65, 2)
	tt.conns[0].times[s65CreateID] = [2]uint64{100, 110}
	tt.conns[1].times[s65CreateID] = [2]uint64{200, 230}
	tt.conns[0].times[s65FullConnect] = [2]uint64{100, 500}
	tt.times[s65CreateID] = [2]uint64{90, 240}
	tt.times[s65FullConnect] = [2]uint64{90, 600}
	tt.showPerf()
	want := `qp_conn                 2
threads                 1
step             avg/conn  total(us)    us/conn    sum(us)    max(us)    min(us)
full connect          255        510          0          0        400        400
create id              75        150         20         40         30         10
`
	if !strings.HasPrefix(o.String(), want) {
		t.Fatalf("got\n%s\nwant prefix\n%s", o.String(), want)
	}
	lines := strings.Split(strings.TrimSuffix(o.String(), "\n"), "\n")
	if len(lines) != 3+s65Cnt || lines[len(lines)-1] != "destroy qp              0          0          0          0          0          0" {
		t.Fatalf("table:\n%s", o.String())
	}
	o.Reset()
	tt.curQPN.Store(1000)
	tt.showPerf()
	if !strings.HasPrefix(o.String(), "cm_conn                 2\n") {
		t.Fatalf("mimic table starts %q", o.String()[:30])
	}
}

func TestSleepUSQuirk(t *testing.T) {
	start := time.Now()
	sleepUS(context.Background(), 1000000) // nanosleep refuses tv_nsec >= 1e9: no sleep
	sleepUS(context.Background(), 5000000) // 5e9 wraps in 32 bits to 705032704 ns: sleeps 0.7 s in C
	if d := time.Since(start); d < 600*time.Millisecond || d > 3*time.Second {
		t.Fatalf("slept %v", d)
	}
}

// TestSyncValues: the sync bytes are the C enum step's values, which the peers compare.
func TestSyncValues(t *testing.T) {
	if s65InitQP != 7 || s65Connect != 12 || s65Disconnect != 14 || s65Cnt != 17 {
		t.Fatalf("steps: init qp %d, cm connect %d, disconnect %d, count %d", s65InitQP, s65Connect, s65Disconnect, s65Cnt)
	}
}

// testPeer is a t65 with only what the OOB steps use.
func testPeer(t *testing.T, port string, listen bool) *t65 {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	var o, e bytes.Buffer
	tt := &t65{stdout: &o, stderr: &e, oobPort: port, ctrlAddr: "127.0.0.1", numPeers: 2, numConns: 5, listen: listen,
		ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1), byID: map[*rdmacm.ID]*conn65{}}
	tt.peers = make([]peerInfo, tt.numPeers)
	if listen {
		tt.peers[0] = peerInfoFor(netip.MustParseAddrPort("10.233.0.1:4791"), roleListen)
	}
	t.Cleanup(tt.cleanupOOB)
	return tt
}

// freePort is a TCP port nothing listens on now.
func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// waitListen waits until 127.0.0.1:port accepts, without connecting (which would take the root's one accept).
func waitListen(t *testing.T, port string) {
	p, _ := strconv.Atoi(port)
	want := fmt.Sprintf(":%04X ", p)
	for range 500 {
		b, _ := os.ReadFile("/proc/net/tcp")
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 3 && strings.HasSuffix(f[1]+" ", want) && f[3] == "0A" {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", port)
}

// TestOOBGoRootGoLeaf: a listener as controller and a client as peer exchange their peer info and sync.
func TestOOBGoRootGoLeaf(t *testing.T) {
	port := freePort(t)
	root, leaf := testPeer(t, port, true), testPeer(t, port, false)
	rootOK := make(chan bool, 1)
	go func() { rootOK <- root.setupOOB() && root.setupMesh() && root.sync(0) && root.sync(s65InitQP) }()
	waitListen(t, port)
	if !leaf.setupOOB() || !leaf.setupMesh() || !leaf.sync(0) || !leaf.sync(s65InitQP) {
		t.Fatalf("leaf failed: %s%s", leaf.stdout, leaf.stderr)
	}
	if !<-rootOK {
		t.Fatalf("root failed: %s%s", root.stdout, root.stderr)
	}
	if !root.isRoot || leaf.isRoot || root.stdout.(*bytes.Buffer).String() != "Running as OOB root\n" {
		t.Fatalf("roles: root %v leaf %v, root printed %q", root.isRoot, leaf.isRoot, root.stdout)
	}
	if len(leaf.peers) != 2 || leaf.peers[0] != root.peers[0] || leaf.peers[1] != root.peers[1] ||
		leaf.peers[0].AddrPort() != netip.MustParseAddrPort("10.233.0.1:4791") || leaf.peers[1].Role != roleConnect {
		t.Fatalf("peers: leaf %+v root %+v", leaf.peers, root.peers)
	}
	if root.numListeners != 1 || leaf.numListeners != 1 || root.numConns != 5 || leaf.numConns != 5 {
		t.Fatalf("listeners %d/%d, conns %d/%d", root.numListeners, leaf.numListeners, root.numConns, leaf.numConns)
	}
}

// TestOOBLeafWire: a client peer against a controller that speaks C's bytes (golden).
func TestOOBLeafWire(t *testing.T) {
	port := freePort(t)
	l, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fake := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			fake <- err
			return
		}
		defer c.Close()
		b := make([]byte, 136)
		if _, err := io.ReadFull(c, b); err != nil {
			fake <- err
			return
		}
		if !bytes.Equal(b, make([]byte, 136)) {
			fake <- fmt.Errorf("client's peer info:\n%s", hex.Dump(b))
			return
		}
		c.Write(goldenPeers())
		for _, v := range []byte{0, 7} {
			if _, err := io.ReadFull(c, b[:1]); err != nil || b[0] != v {
				fake <- fmt.Errorf("sync %d: got %d, %v", v, b[0], err)
				return
			}
			c.Write([]byte{v})
		}
		fake <- nil
	}()
	leaf := testPeer(t, port, false)
	if !leaf.setupOOB() || leaf.isRoot || !leaf.setupMesh() || !leaf.sync(0) || !leaf.sync(s65InitQP) {
		t.Fatalf("leaf failed (root %v): %s%s", leaf.isRoot, leaf.stdout, leaf.stderr)
	}
	if err := <-fake; err != nil {
		t.Fatal(err)
	}
	if leaf.peers[0].AddrPort() != netip.MustParseAddrPort("10.233.0.1:4791") || leaf.numListeners != 1 {
		t.Fatalf("peers %+v", leaf.peers)
	}
	// The controller gone, the next sync fails instead of waiting for ever.
	if leaf.sync(s65Connect) || !leaf.dead.Load() {
		t.Fatal("sync with a lost controller succeeded")
	}
}

// TestOOBRootWire: a listener controller against a client peer that speaks C's bytes.
func TestOOBRootWire(t *testing.T) {
	port := freePort(t)
	root := testPeer(t, port, true)
	rootOK := make(chan bool, 1)
	go func() { rootOK <- root.setupOOB() && root.setupMesh() && root.sync(0) }()
	waitListen(t, port)
	c, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(make([]byte, 136))
	b := make([]byte, 272)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, goldenPeers()) {
		t.Fatalf("peers sent:\n%s", hex.Dump(b))
	}
	c.Write([]byte{0})
	if _, err := io.ReadFull(c, b[:1]); err != nil || b[0] != 0 {
		t.Fatalf("sync: %d %v", b[0], err)
	}
	if !<-rootOK {
		t.Fatalf("root failed: %s%s", root.stdout, root.stderr)
	}
}

// TestOOBAllListeners: two listeners is C's "cannot have all listeners".
func TestOOBAllListeners(t *testing.T) {
	port := freePort(t)
	root, leaf := testPeer(t, port, true), testPeer(t, port, true)
	rootOK := make(chan bool, 1)
	go func() { rootOK <- root.setupOOB() && root.setupMesh() }()
	waitListen(t, port)
	if !leaf.setupOOB() || leaf.setupMesh() || <-rootOK {
		t.Fatal("two listeners accepted")
	}
	if got := leaf.stdout.(*bytes.Buffer).String(); got != "cannot have all listeners\n" {
		t.Fatalf("leaf printed %q", got)
	}
}
