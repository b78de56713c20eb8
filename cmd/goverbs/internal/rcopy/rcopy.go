// Package rcopy is rdmacm-utils' rcopy (librdmacm/examples/rcopy.c, v44) over
// package rsocket: a file copy over rsockets, with the C tool's options,
// output, exit statuses and 16-byte message format, so that either side can
// be the C tool.
//
//	rcopy [-p port]                        server: loops for ever (port 7427)
//	rcopy source server[:destination] [-p port]
//
// Messages are in host byte order (the C tool's "TODO: handle byte swapping"):
// a header {version u8 = 0, command u8, len u16, data u32, id u64}; OPEN
// (1) carries the file mode in data and the destination path, NUL-padded to
// a multiple of 8; WRITE (3) carries the size (u64), then the file's bytes
// follow; CLOSE (2) is the header alone. Every command is answered by a
// header with command | 0x80, len 16 and the status (an errno) in data.
//
// Quirks of the C tool kept on purpose, because they are what a peer sees:
// the client maps the source file, so an empty file (mmap of length 0) fails
// with EINVAL (exit 22) after "opening..." and a directory with ENODEV (19);
// the server keeps its open file across connections when a client goes away
// without CLOSE, and then refuses every later OPEN with EBUSY ("cannot open
// another file"); the CLOSE answer does not change the client's exit status.
// One difference: where a receive fails with an error rather than an orderly
// end of stream, the C tool's _recv (size_t arithmetic on rrecv's -1) reports
// the full length as received; here it is a short receive.
package rcopy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/rsocket"
	"golang.org/x/sys/unix"
)

// DefaultPort is rcopy's port.
const DefaultPort = "7427"

// Commands (enum in rcopy.c).
const (
	cmdOpen  = 1
	cmdClose = 2
	cmdWrite = 3
	cmdResp  = 0x80
)

// hdrLen is sizeof(struct msg_hdr); writeLen is sizeof(struct msg_write).
const (
	hdrLen   = 16
	writeLen = hdrLen + 8
)

// glibc's getaddrinfo errors (EAI_*), as rcopy prints and returns them.
const (
	eaiNoName  = -2
	eaiAgain   = -3
	eaiService = -8
)

var gaiText = map[int]string{
	eaiNoName:  "Name or service not known",
	eaiAgain:   "Temporary failure in name resolution",
	eaiService: "Servname not supported for ai_socktype",
}

// hdr is struct msg_hdr.
type hdr struct {
	version, command uint8
	len              uint16
	data             uint32
	id               uint64
}

var order = binary.NativeEndian // host byte order, as the C tool

func (h *hdr) put(b []byte) {
	b[0], b[1] = h.version, h.command
	order.PutUint16(b[2:], h.len)
	order.PutUint32(b[4:], h.data)
	order.PutUint64(b[8:], h.id)
}

func parseHdr(b []byte) hdr {
	return hdr{version: b[0], command: b[1], len: order.Uint16(b[2:]), data: order.Uint32(b[4:]), id: order.Uint64(b[8:])}
}

type state struct {
	stdout, stderr io.Writer
	port           string
	conf           rsocket.Options // the system's defaults (rsocket.ConfigDir), as librdmacm reads them

	// The C tool's globals: the open file (fd 0 = none, as in C), its mapping
	// (mapped is file_addr != NULL, also after a failed mmap, MAP_FAILED) and
	// the byte count.
	fd     int
	mapped bool
	addr   []byte
	bytes  uint64
}

func (s *state) printf(format string, a ...any) { fmt.Fprintf(s.stdout, format, a...) }

// recvFull is rcopy's _recv: len(b) when all arrived, else 0.
func recvFull(c net.Conn, b []byte) int {
	if _, err := io.ReadFull(c, b); err != nil {
		return 0
	}
	return len(b)
}

// send is rsend's result: bytes sent, or -1 when none were.
func send(c net.Conn, b []byte) int {
	n, err := c.Write(b)
	if err != nil && n == 0 {
		return -1
	}
	return n
}

// recvHdr is msg_recv_hdr.
func (s *state) recvHdr(c net.Conn) (hdr, bool) {
	var b [hdrLen]byte
	if recvFull(c, b[:]) != hdrLen {
		return hdr{}, false
	}
	h := parseHdr(b[:])
	if h.version != 0 || h.len < hdrLen {
		s.printf("invalid version %d or length %d\n", h.version, h.len)
		return h, false
	}
	return h, true
}

// getResp is msg_get_resp: the status in the response to cmd, or -1.
func (s *state) getResp(c net.Conn, cmd uint8) int {
	h, ok := s.recvHdr(c)
	if !ok {
		return -1
	}
	if h.len != hdrLen || h.command != cmd|cmdResp {
		s.printf("invalid length %d or bad command response %x:%x\n", h.len, h.command, cmd|cmdResp)
		return -1
	}
	return int(int32(h.data))
}

func sendResp(c net.Conn, m hdr, status int) {
	var b [hdrLen]byte
	r := hdr{command: m.command | cmdResp, len: hdrLen, data: uint32(status), id: m.id}
	r.put(b[:])
	send(c, b[:])
}

// lookupPort resolves a service as getaddrinfo with ai_socktype 0 does: a
// number (no range check, the port is its low 16 bits) or a name in
// /etc/services.
func lookupPort(service string) (uint16, int) {
	if v, end, _ := cstd.Strtoul(service, 10); end == len(service) {
		return uint16(v), 0
	}
	for _, proto := range []string{"tcp", "udp"} {
		if p, err := net.LookupPort(proto, service); err == nil {
			return uint16(p), 0
		}
	}
	return 0, eaiService
}

// lookupHost resolves the client's host as getaddrinfo would.
func lookupHost(host string) (netip.Addr, int) {
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Unmap(), 0
	}
	ips, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
	if err != nil || len(ips) == 0 {
		var dns *net.DNSError
		if errors.As(err, &dns) && !dns.IsNotFound && (dns.IsTemporary || dns.IsTimeout) {
			return netip.Addr{}, eaiAgain
		}
		return netip.Addr{}, eaiNoName
	}
	// getaddrinfo's order prefers IPv4 for a name with both (no IPv6 route on an RDMA netdev is the common case).
	for _, ip := range ips {
		if ip.Unmap().Is4() {
			return ip.Unmap(), 0
		}
	}
	return ips[0], 0
}

// ntop is _ntop: the peer's address as inet_ntop prints it.
func ntop(a net.Addr) string {
	if ra, ok := a.(*rsocket.Addr); ok {
		return ra.Addr().String()
	}
	if h, _, err := net.SplitHostPort(a.String()); err == nil {
		return h
	}
	return ""
}

func (s *state) serverListen() (net.Listener, int) {
	port, eai := lookupPort(s.port)
	if eai != 0 {
		s.printf("getaddrinfo failed: %s\n", gaiText[eai])
		return nil, eai
	}
	// getaddrinfo(NULL, port, AI_PASSIVE) gives 0.0.0.0 first: the C server listens on IPv4 only.
	lc := rsocket.ListenConfig{Options: s.conf, Backlog: 1}
	ln, err := lc.Listen(context.Background(), "rdma4", netip.AddrPortFrom(netip.IPv4Unspecified(), port).String())
	if err != nil {
		what := "rbind failed"
		var ce *rdmacm.Error
		if errors.As(err, &ce) && ce.Op == "listen" {
			what = "rlisten failed"
		}
		cstd.Perror(s.stderr, what, err)
		return nil, -1
	}
	return ln, 0
}

func (s *state) serverOpen(c net.Conn, m hdr) int {
	s.printf("opening: ")
	ret := 0
	func() {
		if s.mapped || s.fd > 0 {
			s.printf("cannot open another file\n")
			ret = int(unix.EBUSY)
			return
		}
		path := make([]byte, int(m.len)-hdrLen)
		if n := recvFull(c, path); n != len(path) {
			s.printf("error receiving path\n")
			ret = n
			return
		}
		if i := strings.IndexByte(string(path), 0); i >= 0 {
			path = path[:i]
		}
		s.printf("%s, ", path)
		fd, err := unix.Open(string(path), unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, m.data)
		if err != nil {
			s.printf("unable to open destination file\n")
			s.fd = -1
			ret = int(cstd.ErrnoOf(err, unix.EIO))
			return
		}
		s.fd = fd
	}()
	sendResp(c, m, ret)
	return ret
}

func (s *state) serverClose(c net.Conn, m hdr) {
	s.printf("closing...")
	sendResp(c, m, 0)
	if s.mapped {
		if s.addr != nil {
			unix.Munmap(s.addr)
		}
		s.addr, s.mapped = nil, false
	}
	if s.fd > 0 {
		unix.Close(s.fd)
		s.fd = 0
	}
	s.printf("done\n")
}

func (s *state) serverWrite(c net.Conn, m hdr) int {
	s.printf("transferring")
	ret := 0
	func() {
		if s.fd <= 0 {
			s.printf("...file not opened\n")
			ret = int(unix.EINVAL)
			return
		}
		if m.len != writeLen {
			s.printf("...invalid message length %d\n", m.len)
			ret = int(unix.EINVAL)
			return
		}
		var b [8]byte
		if ret = recvFull(c, b[:]); ret != len(b) {
			return
		}
		s.bytes = order.Uint64(b[:])
		if err := unix.Ftruncate(s.fd, int64(s.bytes)); err != nil {
			ret = -1
			return
		}
		ret = 0
		addr, err := mmap(s.fd, s.bytes, unix.PROT_WRITE)
		s.mapped = true // file_addr is MAP_FAILED after a failure, which counts as mapped
		if err != nil {
			s.printf("...error mapping file\n")
			ret = int(cstd.ErrnoOf(err, unix.EINVAL))
			return
		}
		s.addr = addr
		s.printf("...%d bytes...", int64(s.bytes))
		if n := recvFull(c, addr); uint64(n) != s.bytes {
			s.printf("...error receiving data\n")
			ret = n
		}
	}()
	sendResp(c, m, ret)
	return ret
}

func mmap(fd int, size uint64, prot int) ([]byte, error) {
	if size > math.MaxInt {
		return nil, unix.ENOMEM
	}
	return unix.Mmap(fd, 0, int(size), prot, unix.MAP_SHARED)
}

func (s *state) serverProcess(c net.Conn) {
	for {
		m, ok := s.recvHdr(c)
		if !ok {
			return
		}
		ret := 0
		switch m.command {
		case cmdOpen:
			ret = s.serverOpen(c, m)
		case cmdClose:
			s.serverClose(c, m)
		case cmdWrite:
			ret = s.serverWrite(c, m)
		default:
			sendResp(c, m, int(unix.EINVAL))
			ret = -1
		}
		if ret != 0 {
			return
		}
	}
}

// serverRun serves connections one at a time, for ever.
func (s *state) serverRun() int {
	ln, ret := s.serverListen()
	if ln == nil {
		return ret
	}
	defer ln.Close()
	for {
		s.printf("waiting for connection...")
		c, err := ln.Accept()
		if err != nil {
			// The C tool would go on with rs = -1; here the listener is gone.
			s.printf("\n")
			cstd.Perror(s.stderr, "raccept", err)
			return -1
		}
		s.printf("client: %s\n", ntop(c.RemoteAddr()))
		s.serverProcess(c)
		c.Close()
	}
}

type client struct {
	*state
	src, dstAddr, dstFile string
	file                  []byte
	stMode                uint32
}

func (s *client) connect() (net.Conn, int) {
	port, eai := lookupPort(s.port)
	if eai == 0 {
		var ip netip.Addr
		if ip, eai = lookupHost(s.dstAddr); eai == 0 {
			d := rsocket.Dialer{Options: s.conf}
			c, err := d.DialContext(context.Background(), "rdma", netip.AddrPortFrom(ip, port).String())
			if err != nil {
				cstd.Perror(s.stderr, "rconnect failed\n", err)
				return nil, -1
			}
			return c, 0
		}
	}
	s.printf("getaddrinfo failed: %s\n", gaiText[eai])
	return nil, eai
}

// open is client_open: map the source and send OPEN with the destination path.
func (s *client) open(c net.Conn) int {
	s.printf("opening...")
	fd, err := unix.Open(s.src, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1
	}
	s.fd, s.bytes, s.stMode = fd, uint64(st.Size), st.Mode
	if s.file, err = mmap(fd, s.bytes, unix.PROT_READ); err != nil {
		unix.Close(fd)
		return int(cstd.ErrnoOf(err, unix.EINVAL))
	}
	n := (len(s.dstFile) + 8) &^ 7
	msg := make([]byte, hdrLen+n)
	h := hdr{command: cmdOpen, len: uint16(hdrLen + n), data: s.stMode}
	h.put(msg)
	copy(msg[hdrLen:], s.dstFile)
	ret := send(c, msg[:h.len])
	if ret == int(h.len) {
		if ret = s.getResp(c, cmdOpen); ret == 0 {
			return 0
		}
	}
	unix.Munmap(s.file)
	unix.Close(fd)
	return ret
}

// startWrite is client_start_write: the WRITE header and the size.
func (s *client) startWrite(c net.Conn) int {
	s.printf("transferring")
	var b [writeLen]byte
	h := hdr{command: cmdWrite, len: writeLen}
	h.put(b[:])
	order.PutUint64(b[hdrLen:], s.bytes)
	if ret := send(c, b[:]); ret != writeLen {
		return ret
	}
	return 0
}

// closeFile is client_close (its status is not the client's).
func (s *client) closeFile(c net.Conn) {
	s.printf("closing...")
	var b [hdrLen]byte
	h := hdr{command: cmdClose, len: hdrLen}
	h.put(b[:])
	if send(c, b[:]) == hdrLen && s.getResp(c, cmdClose) == 0 {
		s.printf("done\n")
	}
	unix.Munmap(s.file)
	unix.Close(s.fd)
}

// showPerf is show_perf, with gettimeofday's microseconds.
func (s *client) showPerf(elapsed time.Duration) {
	usec := float32(elapsed.Microseconds())
	rate := float64(s.bytes*8) / (1000. * float64(usec))
	r := fmt.Sprintf("%.2f", rate)
	if math.IsInf(rate, 1) {
		r = "inf"
	}
	s.printf("%d bytes in %.2f seconds = %s Gb/sec\n", int64(s.bytes), float64(usec)/1000000., r)
}

func (s *client) run() int {
	c, ret := s.connect()
	if c == nil {
		return ret
	}
	return s.transfer(c)
}

// transfer is client_run after the connection: OPEN, WRITE, CLOSE, close
// the connection, show the rate.
func (s *client) transfer(c net.Conn) int {
	var elapsed time.Duration
	ret := 0
	if ret = s.open(c); ret == 0 {
		if ret = s.startWrite(c); ret == 0 {
			s.printf("...")
			start := time.Now()
			if n := send(c, s.file); uint64(n) == s.bytes {
				ret = s.getResp(c, cmdWrite)
			} else {
				ret = n
			}
			elapsed = time.Since(start)
		}
		s.closeFile(c)
	}
	c.Close()
	if ret == 0 {
		s.showPerf(elapsed)
	}
	return ret
}

func (s *state) usage(prog string) int {
	s.printf("usage 1: %s [options]\n", prog)
	s.printf("\t     starts the server application\n")
	s.printf("\t[-p  port_number]\n")
	s.printf("usage 2: %s source server[:destination] [options]\n", prog)
	s.printf("\t     source - file name and path\n")
	s.printf("\t     server - name or address\n")
	s.printf("\t     destination - file name and path\n")
	s.printf("\t[-p  port_number]\n")
	return 1
}

// opts parses -p as the C tool's server_opts and client_opts do; false after the usage.
func (s *state) opts(prog string, args []string) bool {
	p := getopt.New(prog, args, "p:", nil, s.stderr, false)
	for {
		o, ok := p.Next()
		if !ok {
			return true
		}
		if o.Val != 'p' {
			return false
		}
		s.port = o.Arg
	}
}

// Main runs rcopy: prog is argv[0], args the rest; the result is the exit
// status. As a server it returns only on a setup error.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	s := &state{stdout: stdout, stderr: stderr, port: DefaultPort}
	conf, err := rsocket.LoadConfig(rsocket.ConfigDir) // as librdmacm, which is silent about a bad file
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	}
	s.conf = conf
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if !s.opts(prog, args) {
			return s.usage(prog)
		}
		return s.serverRun() & 0xff
	}
	if len(args) < 2 {
		return s.usage(prog)
	}
	cl := &client{state: s, src: args[0], dstAddr: args[1], dstFile: args[0]}
	if host, file, ok := strings.Cut(args[1], ":"); ok {
		cl.dstAddr, cl.dstFile = host, file
	}
	if !s.opts(prog, args) {
		return s.usage(prog)
	}
	return cl.run() & 0xff
}
