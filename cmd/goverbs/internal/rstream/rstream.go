// Package rstream is rdmacm-utils' rstream (librdmacm/examples/rstream.c, v44)
// over package rsocket: the same options, test sequence, data pattern (-T v)
// and result lines, wire-compatible with the C tool in both roles. It also
// holds riostream (riostream.c, v44; MainRiostream), which shares them and
// moves its data with rsocket's IOMap/IOWrite, and udpong (udpong.c; MainUdpong), which
// shares its result formatting.
package rstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/rsocket"
	"golang.org/x/sys/unix"
)

// testSizes is rstream's size table: {size, option}; option 1 sizes run only with -S all.
var testSizes = [][2]int{
	{1 << 6, 0},
	{1 << 7, 1}, {1<<7 + 1<<6, 1},
	{1 << 8, 1}, {1<<8 + 1<<7, 1},
	{1 << 9, 1}, {1<<9 + 1<<8, 1},
	{1 << 10, 1}, {1<<10 + 1<<9, 1},
	{1 << 11, 1}, {1<<11 + 1<<10, 1},
	{1 << 12, 0}, {1<<12 + 1<<11, 1},
	{1 << 13, 1}, {1<<13 + 1<<12, 1},
	{1 << 14, 1}, {1<<14 + 1<<13, 1},
	{1 << 15, 1}, {1<<15 + 1<<14, 1},
	{1 << 16, 0}, {1<<16 + 1<<15, 1},
	{1 << 17, 1}, {1<<17 + 1<<16, 1},
	{1 << 18, 1}, {1<<18 + 1<<17, 1},
	{1 << 19, 1}, {1<<19 + 1<<18, 1},
	{1 << 20, 0}, {1<<20 + 1<<19, 1},
	{1 << 21, 1}, {1<<21 + 1<<20, 1},
	{1 << 22, 1}, {1<<22 + 1<<21, 1},
}

type optimization int

const (
	optMixed optimization = iota
	optLatency
	optBandwidth
)

type state struct {
	stdout, stderr io.Writer

	dst, src   string
	port       string
	useRS      bool
	verify     bool
	custom     bool
	sizeOption int
	iterations int
	size       int
	count      int
	bufferSize int
	inline     int
	keepalive  int
	rio        bool            // riostream: data by IOWrite into the peer's mapped buffer
	conf       rsocket.Options // the system's defaults (rsocket.ConfigDir), as librdmacm reads them
	testName   string
	opt        optimization

	ln   net.Listener
	conn net.Conn
	buf  []byte

	formatData, verifyData byte
	verifyTotal            int64
}

// sizeStr is common.c's size_str.
func sizeStr(size int64) string {
	var base int64 = 1
	mag := ""
	switch {
	case size >= 1<<30:
		base, mag = 1<<30, "g"
	case size >= 1<<20:
		base, mag = 1<<20, "m"
	case size >= 1<<10:
		base, mag = 1<<10, "k"
	}
	var fraction int64
	if size/base < 10 {
		fraction = (size % base) * 10 / base
	}
	if fraction != 0 {
		return fmt.Sprintf("%d.%d%s", size/base, fraction, mag)
	}
	return fmt.Sprintf("%d%s", size/base, mag)
}

// cntStr is common.c's cnt_str.
func cntStr(cnt int64) string {
	switch {
	case cnt >= 1000000000:
		return fmt.Sprintf("%db", cnt/1000000000)
	case cnt >= 1000000:
		return fmt.Sprintf("%dm", cnt/1000000)
	case cnt >= 1000:
		return fmt.Sprintf("%dk", cnt/1000)
	}
	return fmt.Sprintf("%d", cnt)
}

// sizeToCount is common.c's size_to_count.
func sizeToCount(size int) int {
	switch {
	case size >= 1<<20:
		return 100
	case size >= 1<<16:
		return 1000
	case size >= 1<<10:
		return 10000
	}
	return 100000
}

func (s *state) showPerf(elapsed time.Duration) {
	usec := float32(elapsed.Microseconds())
	bytes := int64(s.iterations) * int64(s.count) * int64(s.size) * 2
	fmt.Fprintf(s.stdout, "%-10s%-8s%-8s%-8s%-8s%8.2fs%10.2f%11.2f\n", s.testName, sizeStr(int64(s.size)),
		cntStr(int64(s.count)), cntStr(int64(s.iterations)), sizeStr(bytes), float64(usec/1000000.),
		float64(bytes*8)/(1000.*float64(usec)), float64((usec/float32(s.iterations))/float32(s.count*2)))
}

func (s *state) perror(what string, err error) {
	fmt.Fprintf(s.stderr, "%s: %s\n", what, cstd.Strerror(cstd.ErrnoOf(err, unix.EIO)))
}

// sendMsg and recvMsg send and receive the first size bytes of the buffer as they are (rsend, rrecv); a peer
// that closed is ECONNRESET.
func (s *state) sendMsg(size int) error {
	if _, err := s.conn.Write(s.buf[:size]); err != nil {
		s.perror("rsend", err)
		return err
	}
	return nil
}

func (s *state) recvMsg(size int) error {
	if _, err := io.ReadFull(s.conn, s.buf[:size]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			err = unix.ECONNRESET
		}
		s.perror("rrecv", err)
		return err
	}
	return nil
}

// format is -T v's data pattern in b: the running byte counter.
func (s *state) format(b []byte) {
	for i := range b {
		b[i] = s.formatData
		s.formatData++
	}
}

// check is -T v's verification of received data b against the running counter.
func (s *state) check(b []byte) error {
	for _, c := range b {
		if c != s.verifyData {
			fmt.Fprintf(s.stdout, "data verification failed byte %d\n", s.verifyTotal)
			return errors.New("verification failed")
		}
		s.verifyData++
		s.verifyTotal++
	}
	return nil
}

func (s *state) sendXfer(size int) error {
	if s.verify {
		s.format(s.buf[:size])
	}
	return s.sendMsg(size)
}

func (s *state) recvXfer(size int) error {
	if err := s.recvMsg(size); err != nil {
		return err
	}
	if s.verify {
		return s.check(s.buf[:size])
	}
	return nil
}

func (s *state) runTest() error {
	if s.rio {
		return s.runIOTest()
	}
	client := s.dst != ""
	first, second := s.recvXfer, s.sendXfer
	if client {
		first, second = s.sendXfer, s.recvXfer
	}
	if err := first(16); err != nil {
		return err
	}
	if err := second(16); err != nil {
		return err
	}
	start := time.Now()
	for range s.iterations {
		for range s.count {
			if err := first(s.size); err != nil {
				return err
			}
		}
		for range s.count {
			if err := second(s.size); err != nil {
				return err
			}
		}
	}
	s.showPerf(time.Since(start))
	return nil
}

// options are set_options: SO_SNDBUF/SO_RCVBUF (doubled by rsockets), and the
// inline size by optimization.
func (s *state) options() rsocket.Options {
	b := s.bufferSize
	if b == 0 {
		b = 1 << 19
	}
	o := s.conf
	o.SendBuffer, o.RecvBuffer, o.KeepAlive = 2*b, 2*b, s.keepaliveDuration()
	if s.rio {
		o.IOMapSize = 1 // riostream's RDMA_IOMAPSIZE
	}
	switch s.opt {
	case optLatency:
		o.InlineSize = s.inline
		if o.InlineSize == 0 {
			o.InlineSize = -1
		}
	case optBandwidth:
		o.InlineSize = -1
	}
	return o
}

// keepaliveTime is the keepalive time set_keepalive leaves: -k's seconds,
// or, for a value TCP_KEEPIDLE refuses, the system's tcp_keepalive_time
// (which rsockets and TCP both start from), else 7200.
func (s *state) keepaliveTime() int {
	if s.keepalive > 0 {
		return s.keepalive
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_keepalive_time"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			return n
		}
	}
	return 7200
}

// keepaliveDuration is what -k enables: the probe period, or -1 (none; also
// for TCP, whose Go default would be on).
func (s *state) keepaliveDuration() time.Duration {
	if s.keepalive == 0 {
		return -1
	}
	return time.Duration(s.keepaliveTime()) * time.Second
}

// keepaliveLines is set_keepalive's output (SO_KEEPALIVE on, TCP_KEEPIDLE = -k).
func (s *state) keepaliveLines() {
	if s.keepalive == 0 {
		return
	}
	if s.keepalive < 0 {
		fmt.Fprintf(s.stderr, "rsetsockopt TCP_KEEPIDLE: %s\n", cstd.Strerror(unix.EINVAL))
	}
	fmt.Fprintf(s.stdout, "Keepalive: ON\n  time: %d\n", s.keepaliveTime())
}

func (s *state) serverListen() error {
	addr := net.JoinHostPort(s.src, s.port)
	var err error
	if s.useRS {
		network := "rdma4"
		if strings.Contains(s.src, ":") {
			network = "rdma6"
		}
		lc := rsocket.ListenConfig{Options: s.options(), Backlog: 1}
		s.ln, err = lc.Listen(context.Background(), network, addr)
	} else {
		lc := net.ListenConfig{KeepAlive: s.keepaliveDuration()}
		s.ln, err = lc.Listen(context.Background(), "tcp", addr)
	}
	if err != nil {
		var dns *net.DNSError
		if errors.As(err, &dns) {
			fmt.Fprintf(s.stdout, "getaddrinfo: %s\n", "Name or service not known")
		} else {
			s.perror("rbind", err)
		}
		return err
	}
	return nil
}

func (s *state) serverConnect() error {
	s.keepaliveLines()
	c, err := s.ln.Accept()
	if err != nil {
		s.perror("raccept", err)
		return err
	}
	s.conn = c
	s.keepaliveLines()
	return nil
}

func (s *state) clientConnect() error {
	s.keepaliveLines()
	addr := net.JoinHostPort(s.dst, s.port)
	var err error
	if s.useRS {
		d := rsocket.Dialer{Options: s.options()}
		if s.src != "" {
			ip, perr := net.ResolveIPAddr("ip", s.src)
			if perr != nil {
				fmt.Fprintf(s.stdout, "getaddrinfo src_addr: %s\n", "Name or service not known")
				return perr
			}
			if a, ok := netip.AddrFromSlice(ip.IP); ok {
				d.LocalAddr = a.Unmap()
			}
		}
		s.conn, err = d.DialContext(context.Background(), "rdma", addr)
	} else {
		d := net.Dialer{KeepAlive: s.keepaliveDuration()}
		s.conn, err = d.Dial("tcp", addr)
	}
	if err != nil {
		var dns *net.DNSError
		if errors.As(err, &dns) {
			fmt.Fprintf(s.stdout, "getaddrinfo: %s\n", "Name or service not known")
		} else {
			s.perror("rconnect", err)
		}
		return err
	}
	return nil
}

func (s *state) closeConn() {
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
}

func (s *state) run() int {
	if s.custom {
		s.buf = make([]byte, max(s.size, 16))
	} else {
		s.buf = make([]byte, testSizes[len(testSizes)-1][0])
	}
	if s.dst == "" {
		if err := s.serverListen(); err != nil {
			return 255
		}
		defer s.ln.Close()
	}
	fmt.Fprintf(s.stdout, "%-10s%-8s%-8s%-8s%-8s%8s %10s%13s\n", "name", "bytes", "xfers", "iters", "total", "time", "Gb/sec", "usec/xfer")
	connect := s.clientConnect
	if s.dst == "" {
		connect = s.serverConnect
	}
	if !s.custom {
		s.opt = optLatency
		if connect() != nil {
			return 255
		}
		for _, ts := range testSizes {
			if ts[1] > s.sizeOption {
				continue
			}
			s.testName = sizeStr(int64(ts[0])) + "_lat"
			s.count, s.size, s.iterations = 1, ts[0], sizeToCount(ts[0])
			s.runTest()
		}
		s.closeConn()
		s.opt = optBandwidth
		if connect() != nil {
			return 255
		}
		for _, ts := range testSizes {
			if ts[1] > s.sizeOption {
				continue
			}
			s.testName = sizeStr(int64(ts[0])) + "_bw"
			s.iterations, s.size, s.count = 1, ts[0], sizeToCount(ts[0])
			s.runTest()
		}
		s.closeConn()
		return 0
	}
	if connect() != nil {
		return 255
	}
	err := s.runTest()
	s.closeConn()
	if err != nil {
		return 255
	}
	return 0
}

// usage is the usage of rstream, or riostream's (no -k, and only the -T options a, b, n and v).
func (s *state) usage(prog string) int {
	lines := []string{"usage: " + prog, "\t[-s server_address]", "\t[-b bind_address]", "\t[-f address_format]",
		"\t    name, ip, ipv6, or gid", "\t[-B buffer_size]", "\t[-i inline_size]", "\t[-I iterations]",
		"\t[-C transfer_count]", "\t[-S transfer_size or all]", "\t[-p port_number]"}
	if !s.rio {
		lines = append(lines, "\t[-k keepalive_time]")
	}
	lines = append(lines, "\t[-T test_option]")
	if !s.rio {
		lines = append(lines, "\t    s|sockets - use standard tcp/ip sockets")
	}
	lines = append(lines, "\t    a|async - asynchronous operation (use poll)", "\t    b|blocking - use blocking calls")
	if !s.rio {
		lines = append(lines, "\t    f|fork - fork server processing")
	}
	lines = append(lines, "\t    n|nonblocking - use nonblocking calls")
	if !s.rio {
		lines = append(lines, "\t    r|resolve - use rdma cm to resolve address")
	}
	for _, l := range append(lines, "\t    v|verify - verify data") {
		fmt.Fprintln(s.stdout, l)
	}
	return 1
}

// setTestOpt is set_test_opt of rstream and riostream, which knows only a, b, n and v. Blocking,
// non-blocking and async (rpoll) modes behave alike here (Go's runtime does the waiting); fork serves with
// plain sockets as the C tool does, without forking.
func (s *state) setTestOpt(arg string) bool {
	prefix := func(word string) bool {
		return len(arg) >= len(word) && strings.EqualFold(arg[:len(word)], word)
	}
	if len(arg) == 1 {
		switch arg[0] {
		case 's', 'f':
			if s.rio {
				return false
			}
			s.useRS = false
		case 'r':
			if s.rio {
				return false
			}
		case 'a', 'b', 'n':
		case 'v':
			s.verify = true
		default:
			return false
		}
		return true
	}
	switch {
	case !s.rio && (prefix("socket") || prefix("fork")):
		s.useRS = false
	case !s.rio && prefix("resolve"):
	case prefix("async"), prefix("block"), prefix("nonblock"):
	case prefix("verify"):
		s.verify = true
	default:
		return false
	}
	return true
}

// Main runs rstream: prog is argv[0], args the rest; the result is the exit status.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	return mainRS(prog, args, stdout, stderr, false)
}

// mainRS is the main of rstream, or with rio of riostream, which has no -k.
func mainRS(prog string, args []string, stdout, stderr io.Writer, rio bool) int {
	s := &state{stdout: stdout, stderr: stderr, port: "7471", useRS: true, rio: rio, iterations: 1, size: 1000,
		count: 1000, inline: 64, testName: "custom"}
	optstring := "s:b:f:B:i:I:C:S:p:k:T:"
	if rio {
		optstring = "s:b:f:B:i:I:C:S:p:T:"
	}
	p := getopt.New(prog, args, optstring, nil, stderr, false)
	for o := range p.All() {
		switch o.Val {
		case 's', 'b', 'f', 'B', 'i', 'I', 'C', 'S', 'p':
			if rc := s.sharedOpt(prog, o.Val, o.Arg); rc >= 0 {
				return rc
			}
		case 'k':
			s.keepalive = int(cstd.Atoi(o.Arg))
		case 'T':
			if !s.setTestOpt(o.Arg) {
				return s.usage(prog)
			}
		default:
			return s.usage(prog)
		}
	}
	if s.size < 0 || s.count < 0 || s.iterations < 0 {
		return s.usage(prog) // riostream.c would index before its buffer
	}
	s.loadConfig(prog)
	return s.run()
}

// loadConfig reads the system's rsockets defaults, as librdmacm does at the
// first rsocket call; a file it cannot use is reported (librdmacm is silent)
// and left at the built-in default.
func (s *state) loadConfig(prog string) {
	var err error
	if s.conf, err = rsocket.LoadConfig(rsocket.ConfigDir); err != nil {
		fmt.Fprintf(s.stderr, "%s: %v\n", prog, err)
	}
}

// sharedOpt applies one of the options rstream and riostream share; rc >= 0 ends the run with that status.
func (s *state) sharedOpt(prog string, opt byte, arg string) (rc int) {
	switch opt {
	case 's':
		s.dst = arg
	case 'b':
		s.src = arg
	case 'f':
		switch {
		case len(arg) >= 2 && strings.EqualFold(arg[:2], "ip"):
		case len(arg) >= 3 && strings.EqualFold(arg[:3], "gid"):
			fmt.Fprintf(s.stderr, "%s: AF_IB (gid) addresses are not supported\n", prog)
			return 1
		default:
			fmt.Fprintf(s.stderr, "Warning: unknown address format\n")
		}
	case 'B':
		s.bufferSize = int(cstd.Atoi(arg))
	case 'i':
		s.inline = int(cstd.Atoi(arg))
	case 'I':
		s.custom = true
		s.iterations = int(cstd.Atoi(arg))
	case 'C':
		s.custom = true
		s.count = int(cstd.Atoi(arg))
	case 'S':
		if len(arg) >= 3 && strings.EqualFold(arg[:3], "all") {
			s.sizeOption = 1
		} else {
			s.custom = true
			s.size = int(cstd.Atoi(arg))
		}
	case 'p':
		s.port = arg
	}
	return -1
}
