package rstream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/rsocket"
	"golang.org/x/sys/unix"
)

// udpong is rdmacm-utils' udpong (librdmacm/examples/udpong.c, the same in rdma-core 44 and 65): a UDP
// ping-pong and bandwidth test whose server answers control and echo messages and counts data messages.
// Over kernel UDP sockets (-T s) it runs as the C tool does and pairs with it both ways. Its default,
// datagram rsockets, is refused as rsocket.ListenPacket refuses it (rsocket.ErrDatagram): librdmacm's
// datagram rsockets cannot run on RoCE or iWARP, and the C tool fails there too, between two C peers.
type udpong struct {
	stdout, stderr io.Writer

	dst, src   string
	port       string
	useRS      bool
	echo       bool
	custom     bool
	size       int
	count      int
	bufferSize int
	testName   string

	conn    *net.UDPConn
	msg     [udpMsgSize]byte // struct message: op, id, seqno, reserved, be32 data, 2048 bytes
	reply   [udpMsgSize]byte // the client's receive buffer
	seqno   uint8
	elapsed time.Duration

	clients [256]uint64 // the server's receive count per client id
	id      uint8       // the server's next client id
}

const (
	udpMsgSize  = 8 + 2048
	udpCtrlSize = 16 // CTRL_MSG_SIZE

	udpOpLogin = 0
	udpOpStart = 1
	udpOpData  = 2
	udpOpEcho  = 3
	udpOpEnd   = 4

	eaiNoName = -2 // getaddrinfo's EAI_NONAME, which udpong returns from main
)

// udpongSizes is udpong's size table (test_size).
var udpongSizes = []int{1 << 6, 1 << 7, 1<<7 + 1<<6, 1 << 8, 1<<8 + 1<<7, 1 << 9, 1<<9 + 1<<8, 1 << 10, 1<<10 + 1<<9}

// MainUdpong runs udpong: prog is argv[0], args the rest; the result is the exit status.
func MainUdpong(prog string, args []string, stdout, stderr io.Writer) int {
	u := &udpong{stdout: stdout, stderr: stderr, port: "7174", useRS: true, size: 1000, count: 1000, testName: "custom"}
	p := getopt.New(prog, args, "s:b:B:C:S:p:T:", nil, stderr, false)
	for o := range p.All() {
		switch o.Val {
		case 's':
			u.dst = o.Arg
		case 'b':
			u.src = o.Arg
		case 'B':
			u.bufferSize = int(cstd.Atoi(o.Arg))
		case 'C':
			u.custom = true
			u.count = int(cstd.Atoi(o.Arg))
		case 'S':
			u.custom = true
			u.size = int(cstd.Atoi(o.Arg))
			if u.size < udpCtrlSize {
				fmt.Fprintf(stdout, "size must be at least %d bytes\n", udpCtrlSize)
				return 1
			}
		case 'p':
			u.port = o.Arg
		case 'T':
			if u.setTestOpt(o.Arg) {
				break
			}
			fallthrough
		default:
			fmt.Fprintf(stdout, "usage: %s\n", prog)
			for _, l := range []string{"[-s server_address]", "[-b bind_address]", "[-B buffer_size]",
				"[-C transfer_count]", "[-S transfer_size]", "[-p port_number]", "[-T test_option]",
				"    s|sockets - use standard tcp/ip sockets", "    a|async - asynchronous operation (use poll)",
				"    b|blocking - use blocking calls", "    n|nonblocking - use nonblocking calls",
				"    e|echo - server echoes all messages"} {
				fmt.Fprintf(stdout, "\t%s\n", l)
			}
			return 1
		}
	}
	if u.size > len(u.msg) {
		// udpong.c would send past its 2056-byte message.
		fmt.Fprintf(stderr, "%s: transfer size %d exceeds the %d-byte message\n", prog, u.size, len(u.msg))
		return 1
	}
	var ret int
	if u.dst != "" {
		ret = u.clientRun()
	} else {
		ret = u.serverRun()
	}
	return ret & 0xff
}

// setTestOpt is set_test_opt. Blocking, non-blocking and poll are how the C tool waits; Go's sockets wait
// the same way in each, so they are accepted and change nothing observable.
func (u *udpong) setTestOpt(arg string) bool {
	if len(arg) == 1 {
		switch arg[0] {
		case 's':
			u.useRS = false
		case 'a', 'b', 'n':
		case 'e':
			u.echo = true
		default:
			return false
		}
		return true
	}
	prefix := func(p string) bool { return len(arg) >= len(p) && strings.EqualFold(arg[:len(p)], p) }
	switch {
	case prefix("socket"):
		u.useRS = false
	case prefix("async"), prefix("block"), prefix("nonblock"):
	case prefix("echo"):
		u.echo = true
	default:
		return false
	}
	return true
}

// resolve is udpong's getaddrinfo(host, port, {SOCK_DGRAM}) taking the first answer: no host is the
// loopback address (no AI_PASSIVE), ::1 first as glibc orders it.
func (u *udpong) resolve(host string) (netip.AddrPort, bool) {
	if host == "" {
		host = "::1"
	}
	a, err := net.ResolveUDPAddr("udp", net.JoinHostPort(host, u.port))
	if err != nil {
		fmt.Fprintf(u.stdout, "getaddrinfo: %s\n", "Name or service not known")
		return netip.AddrPort{}, false
	}
	ap := a.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}

// refuse reports the datagram rsocket refusal as the C tool reports a failed call (what: rbind, rconnect).
func (u *udpong) refuse(ap netip.AddrPort, what string) int {
	network := "rdma6"
	if ap.Addr().Is4() {
		network = "rdma4"
	}
	_, err := rsocket.ListenPacket(network, ap.String())
	errno := cstd.ErrnoOf(err, unix.EIO)
	if errors.Is(err, rsocket.ErrDatagram) {
		errno = unix.EOPNOTSUPP
	}
	fmt.Fprintf(u.stderr, "%s: %s\n", what, cstd.Strerror(errno))
	return -1
}

// setOptions is set_options: SO_SNDBUF and SO_RCVBUF of -B, else 512 KiB.
func (u *udpong) setOptions() {
	b := u.bufferSize
	if b == 0 {
		b = 1 << 19
	}
	u.conn.SetWriteBuffer(b)
	u.conn.SetReadBuffer(b)
}

func udpNetwork(ap netip.AddrPort) string {
	if ap.Addr().Is4() {
		return "udp4"
	}
	return "udp6"
}

// serverRun is svr_run: bind, then answer for ever (the C server ends only on an error).
func (u *udpong) serverRun() int {
	ap, ok := u.resolve(u.src)
	if !ok {
		return eaiNoName
	}
	if u.useRS {
		return u.refuse(ap, "rbind")
	}
	var err error
	u.conn, err = net.ListenUDP(udpNetwork(ap), net.UDPAddrFromAddrPort(ap))
	if err != nil {
		cstd.Perror(u.stderr, "rbind", err)
		return -1
	}
	defer u.conn.Close()
	u.setOptions()
	return u.serve()
}

// serve answers messages on u.conn until a receive or a send fails.
func (u *udpong) serve() int {
	for {
		n, from, err := u.conn.ReadFromUDPAddrPort(u.msg[:])
		if err != nil {
			cstd.Perror(u.stderr, "rrecv", err)
			return -1
		}
		if err := u.serverProcess(u.msg[:n], from); err != nil {
			return -1
		}
	}
}

// serverProcess is svr_process: a login names the client and gives it an id, start clears its count, echo
// and data messages count, end returns the count; every message but data is sent back as it came.
func (u *udpong) serverProcess(m []byte, from netip.AddrPort) error {
	if len(m) < 8 {
		// svr_process reads the fixed header of whatever arrived; a shorter datagram is counted as data.
		u.clients[0]++
		return nil
	}
	switch m[0] {
	case udpOpLogin:
		fmt.Fprintf(u.stdout, "client login from %s\n", from.Addr().Unmap())
		m[1] = u.id
		u.id++
		u.clients[m[1]] = 0
	case udpOpStart:
		u.clients[m[1]] = 0
	case udpOpEcho:
		u.clients[m[1]]++
	case udpOpEnd:
		binary.BigEndian.PutUint32(m[4:8], uint32(u.clients[m[1]]))
	default:
		u.clients[m[1]]++
		return nil
	}
	if _, err := u.conn.WriteToUDPAddrPort(m, from); err != nil {
		cstd.Perror(u.stderr, "rsend", err)
		return err
	}
	return nil
}

// clientRun is client_run: the header, the login, then the test table or the custom test.
func (u *udpong) clientRun() int {
	fmt.Fprintf(u.stdout, "%-10s%-8s%-8s%-8s%8s %10s%13s\n", "name", "bytes", "xfers", "total", "time", "Gb/sec", "usec/xfer")
	if ret := u.clientConnect(); ret != 0 {
		return ret
	}
	defer u.conn.Close()
	if u.custom {
		u.runTest()
		return 0
	}
	for _, size := range udpongSizes {
		u.testName = sizeStr(int64(size)) + "_lat"
		u.size, u.count, u.echo = size, sizeToCount(size)/10, true
		u.runTest()
	}
	for _, size := range udpongSizes {
		u.testName = sizeStr(int64(size)) + "_bw"
		u.size, u.count, u.echo = size, sizeToCount(size), false
		u.runTest()
	}
	return 0
}

// clientConnect is client_connect: a connected socket, then the login exchange (a second's wait per try).
func (u *udpong) clientConnect() int {
	ap, ok := u.resolve(u.dst)
	if !ok {
		return eaiNoName
	}
	if u.useRS {
		return u.refuse(ap, "rconnect")
	}
	var err error
	u.conn, err = net.DialUDP(udpNetwork(ap), nil, net.UDPAddrFromAddrPort(ap))
	if err != nil {
		cstd.Perror(u.stderr, "rconnect", err)
		return -1
	}
	u.setOptions()
	u.msg[0] = udpOpLogin
	if n := u.sendRecv(udpCtrlSize, time.Second); n != udpCtrlSize {
		u.conn.Close()
		return n
	}
	return 0
}

// send is client_send: one datagram of the message's first size bytes; the result is send's.
func (u *udpong) send(size int) int {
	n, err := u.conn.Write(u.msg[:size])
	if err != nil {
		cstd.Perror(u.stderr, "rsend", err)
		return -1
	}
	return n
}

// recv is client_recv: wait up to timeout for the answer, into u.reply; 0 when none came (the caller sends
// again).
func (u *udpong) recv(size int, timeout time.Duration) int {
	u.conn.SetReadDeadline(time.Now().Add(timeout))
	n, err := u.conn.Read(u.reply[:size])
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return 0
		}
		cstd.Perror(u.stderr, "rrecv", err)
		return -1
	}
	return n
}

// sendRecv is client_send_recv: send and wait, sending again after each wait without the answer of this
// sequence number; the answer becomes the message. Unlike client_send_recv, which receives into the message
// it sends again, a late answer to an earlier message is dropped rather than sent back: the C client then
// repeats the old message, whose answers never carry the awaited sequence number, for ever (seen over
// loopback when the server answers a burst of end messages after a bandwidth run).
func (u *udpong) sendRecv(size int, timeout time.Duration) int {
	u.msg[2] = u.seqno
	for {
		if n := u.send(size); n != size {
			return n
		}
		if n := u.recv(size, timeout); n > 0 && u.reply[2] == u.seqno {
			copy(u.msg[:n], u.reply[:n])
			u.seqno++
			return n
		}
	}
}

// runTest is run_test: start, count transfers (echoed with -T e and in the latency tests, a millisecond's
// wait each), end, and the result line.
func (u *udpong) runTest() {
	u.msg[0] = udpOpStart
	if u.sendRecv(udpCtrlSize, time.Second) != udpCtrlSize {
		return
	}
	u.msg[0] = udpOpData
	if u.echo {
		u.msg[0] = udpOpEcho
	}
	start := time.Now()
	for range u.count {
		var n int
		if u.echo {
			n = u.sendRecv(u.size, time.Millisecond)
		} else {
			n = u.send(u.size)
		}
		if n != u.size {
			return
		}
	}
	u.msg[0] = udpOpEnd
	if u.sendRecv(udpCtrlSize, time.Millisecond) != udpCtrlSize {
		return
	}
	u.elapsed = time.Since(start)
	u.showPerf()
}

// showPerf is show_perf: transfers are twice the count when echoed, else what the server counted.
func (u *udpong) showPerf() {
	usec := float32(u.elapsed.Microseconds())
	transfers := int64(binary.BigEndian.Uint32(u.msg[4:8]))
	if u.echo {
		transfers = int64(u.count) * 2
	}
	bytes := transfers * int64(u.size)
	fmt.Fprintf(u.stdout, "%-10s%-8s%-8s%-8s%8.2fs%10.2f%11.2f\n", u.testName, sizeStr(int64(u.size)), cntStr(transfers),
		sizeStr(bytes), float64(usec/1000000.), float64(bytes*8)/(1000.*float64(usec)), float64(usec/float32(transfers)))
}
