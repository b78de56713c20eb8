// Package perftest is goverbs' clone of perftest 6.06 (Debian's perftest 4.5+0.17): ib_write_bw, ib_write_lat,
// ib_read_bw, ib_read_lat, ib_send_bw, ib_send_lat, ib_atomic_bw and ib_atomic_lat over RC, UC and UD, with the
// same options (those that make sense without rdma_cm), the same out-of-band TCP protocol (version, system data,
// MTU and per-QP key records, barriers, bandwidth reports, "done") and the same output lines, so a goverbs side
// pairs with a C side in either role.
//
// Time stamps come from the CPU's counter (RDTSC, CNTVCT_EL0) as perftest's get_cycles; its rate is measured
// against the monotonic clock over the whole run instead of sampled or read from /proc/cpuinfo. The measured
// loops allocate nothing and run on one P.
package perftest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goverbs/goverbs/uverbs"
)

// Tests maps the C tool names to the test they run.
var Tests = map[string]struct {
	Verb Verb
	Kind Kind
}{
	"ib_write_bw":   {VerbWrite, KindBW},
	"ib_write_lat":  {VerbWrite, KindLat},
	"ib_read_bw":    {VerbRead, KindBW},
	"ib_read_lat":   {VerbRead, KindLat},
	"ib_send_bw":    {VerbSend, KindBW},
	"ib_send_lat":   {VerbSend, KindLat},
	"ib_atomic_bw":  {VerbAtomic, KindBW},
	"ib_atomic_lat": {VerbAtomic, KindLat},
}

// ProfileEnv names an environment variable: when set, Run writes a CPU profile of the whole run to that file
// (used by the bench to see where the Go side spends its time).
const ProfileEnv = "GOVERBS_PERFTEST_CPUPROFILE"

// Main runs "goverbs perf TEST [options] [host]": args[0] is the perftest name without "ib_" (write_bw,
// read_lat, ...), which then runs as MainProg("ib_"+TEST). prog is unused.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if _, ok := Tests["ib_"+args[0]]; ok {
			return MainProg("ib_"+args[0], args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "usage: goverbs perf {write,read,send,atomic}_{bw,lat} [options] [host]\n")
	return 1
}

// MainProg runs the perftest program prog names ("ib_write_bw", ... or a path to a link of that name, as the
// C programs are found by argv[0]) with args (without the program name) and returns its exit status.
func MainProg(prog string, args []string, stdout, stderr io.Writer) int {
	name := prog
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	t, ok := Tests[name]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown perftest (want one of ib_{write,read,send,atomic}_{bw,lat})\n", prog)
		return 1
	}
	p := &Params{Verb: t.Verb, Kind: t.Kind}
	switch rc := parse(p, prog, args, stdout, stderr); rc {
	case -1:
	case versionExit, helpExit, exitFail:
		return 1
	case 1:
		fmt.Fprintf(stderr, " Parser function exited with Error\n")
		return 1
	default:
		return rc
	}
	if path := os.Getenv(ProfileEnv); path != "" {
		if f, err := os.Create(path); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer func() { pprof.StopCPUProfile(); f.Close() }()
			}
		}
	}
	// One P, like the single-threaded C tool: the runtime preempts a goroutine that runs for 10 ms even when
	// nothing else wants to run, and with a second idle P every such preemption wakes another thread and parks
	// one (9% of a write_bw client's time under QEMU TCG went to those futex calls).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	r := &runner{p: p, stdout: stdout, stderr: stderr}
	return r.run()
}

// runner is one invocation of a perftest program: its parameters and output, the verbs session, the
// out-of-band TCP connection to the peer, and what the report header prints.
type runner struct {
	p      *Params
	stdout io.Writer
	stderr io.Writer
	sess   *session
	conn   *Conn     // the out-of-band protocol over sock
	sock   io.Closer // TCP to the peer, or the -z rdma_cm channel
	info   testInfo
	port   *uverbs.PortAttr // the IB port under test

	progressStop context.CancelFunc
}

func (r *runner) errf(format string, a ...any) int {
	fmt.Fprintf(r.stderr, format, a...)
	return 1
}

func (r *runner) run() int {
	p, stdout, stderr := r.p, r.stdout, r.stderr
	dev, ok := findDevice(p.IBDev, stderr)
	if !ok {
		return r.errf(" Unable to find the Infiniband/RoCE device\n")
	}
	vc, err := dev.Open()
	if err != nil {
		return r.errf(" Couldn't get context for the device\n")
	}
	r.sess = &session{p: p, dev: dev, vc: vc}
	defer func() {
		if p.WaitDestroy > 0 {
			time.Sleep(time.Duration(p.WaitDestroy) * time.Second)
		}
		r.sess.close()
	}()
	da, err := vc.QueryDevice()
	if err != nil {
		return r.errf(" Couldn't get context for the device\n")
	}
	known, newPost := devRecognized(da.VendorID, da.VendorPartID)
	if p.UseEvent && p.EQNum > vc.NumCompVectors() {
		fmt.Fprintf(stderr, " Completion vector specified is invalid\n")
		fmt.Fprintf(stderr, " Max completion vector = %d\n", vc.NumCompVectors()-1)
		return r.errf(" Couldn't get context for the device\n")
	}
	// check_link
	pa, err := vc.QueryPort(p.IBPort)
	if err != nil {
		fmt.Fprintf(stderr, " Unable to query port %d attributes\n", p.IBPort)
		fmt.Fprintf(stderr, " Couldn't set the link layer\n")
		return r.errf(" Couldn't get context for the device\n")
	}
	r.port = pa
	if pa.State != uverbs.PortActive {
		states := []string{"Nop", "Down", "Init", "Armed", "", "Active Defer"}
		st := ""
		if int(pa.State) < len(states) {
			st = states[pa.State]
		}
		fmt.Fprintf(stderr, " Port number %d state is %s\n", p.IBPort, st)
		fmt.Fprintf(stderr, " Couldn't set the link layer\n")
		return r.errf(" Couldn't get context for the device\n")
	}
	p.LinkLayer = uint8(pa.LinkLayer)
	ll := "IB"
	switch pa.LinkLayer {
	case uverbs.LinkLayerEthernet:
		ll = "Ethernet"
		if p.GIDIndex == -1 {
			p.GIDIndex = 0
		}
	case 0, 1:
	default:
		ll = "Unknown"
	}
	if !known {
		if p.InlineSize != defInline {
			io.WriteString(stdout, resultLine)
			fmt.Fprintf(stderr, "Device not recognized to implement inline feature. Disabling it\n")
		}
		p.InlineSize = 0
	} else if p.InlineSize == defInline {
		p.InlineSize = 0
		if p.Kind == KindLat {
			switch p.Verb {
			case VerbWrite:
				p.InlineSize = 220
			case VerbSend:
				p.InlineSize = 236
				if p.Conn == ConnUD {
					p.InlineSize = 188
				}
			}
		}
	}
	if p.Verb == VerbRead || p.Verb == VerbAtomic {
		max := int(da.MaxQPRdAtom)
		if p.OutReads > max {
			io.WriteString(stdout, resultLine)
			fmt.Fprintf(stderr, " Number of outstanding reads is above max = %d\n", max)
			fmt.Fprintf(stderr, " Changing to that max value\n")
			p.OutReads = max
		} else if p.OutReads <= 0 {
			p.OutReads = max
		}
	} else {
		p.OutReads = 1
	}
	r.info = testInfo{DevName: dev.Name, Transport: transportName(dev.NodeType), LinkLayer: ll, OldPost: !newPost,
		RelaxOrder: !(p.Verb == VerbWrite && p.Kind == KindLat) && !p.DisablePCIR}
	if r.info.RelaxOrder {
		r.info.ROWarning = roNonCompliant()
	}
	if p.Output == outFull && p.Server {
		fmt.Fprintf(stdout, "\n************************************\n")
		fmt.Fprintf(stdout, "* Waiting for client to connect... *\n")
		fmt.Fprintf(stdout, "************************************\n")
	}
	if flusher, ok := stdout.(interface{ Sync() error }); ok {
		flusher.Sync()
	}
	if err := r.establish(); err != nil {
		return r.errf(" Unable to init the socket connection\n")
	}
	defer r.sock.Close()
	if p.Verb == VerbWrite && p.Kind == KindBW {
		time.Sleep(time.Second)
	}
	if rc := r.exchangeSetup(); rc >= 0 {
		return rc
	}
	if err := r.sess.initResources(stderr); err != nil {
		return r.errf(" Couldn't create IB resources\n")
	}
	if p.WorkRDMACM {
		if err := r.cmConnectQPs(); err != nil {
			fmt.Fprintf(stderr, "%v\n", err)
			return r.errf("Failed to create RDMA CM connection with resources.\n")
		}
	}
	if err := r.sess.setUpConnection(pa); err != nil {
		return r.errf(" Unable to set up socket connection\n")
	}
	printTestInfo(stdout, p, &r.info)
	switch {
	case p.Verb == VerbSend && p.Kind == KindBW:
		return r.sendBW()
	case p.Verb == VerbSend:
		return r.sendLat()
	case p.Kind == KindBW:
		return r.rdmaBW()
	default:
		return r.rdmaLat()
	}
}

// establish opens the out-of-band TCP connection (the server accepts one client on the port).
func (r *runner) establish() error {
	p := r.p
	if p.UseRDMACM {
		var c *cmComm
		var err error
		if p.Server {
			c, err = listenCM(context.Background(), p)
		} else {
			c, err = dialCM(context.Background(), p)
		}
		if err != nil {
			if p.Server {
				fmt.Fprintf(r.stderr, " Unable to perform rdma_server function\n")
			} else {
				fmt.Fprintf(r.stderr, " Unable to perform rdma_client function\n")
			}
			return err
		}
		r.sock = c
		r.conn = &Conn{RW: c, Client: !p.Server, RDMACM: true, GIDIndex: p.GIDIndex}
		return nil
	}
	if err := r.establishTCP(); err != nil {
		fmt.Fprintf(r.stderr, "Unable to open file descriptor for socket connection\n")
		return err
	}
	return nil
}

// tcpNetwork is the out-of-band channel's address family: perftest 6.24's ai_family, AF_INET6 with --ipv6-addr.
func tcpNetwork(p *Params) string {
	if p.IPv6Addr {
		return "tcp6"
	}
	return "tcp4"
}

// resolveError is check_add_port's complaint when getaddrinfo cannot resolve host in the channel's family
// (gai_strerror's text, the family in hex), or "" when it can.
func resolveError(p *Params, host string) string {
	family, network := 2, "ip4" // AF_INET
	if p.IPv6Addr {
		family, network = 10, "ip6"
	}
	msg := ""
	if ip := net.ParseIP(host); ip != nil {
		if (ip.To4() != nil && !strings.Contains(host, ":")) == p.IPv6Addr {
			msg = "Address family for hostname not supported"
		}
	} else if _, err := net.DefaultResolver.LookupIP(context.Background(), network, host); err != nil {
		msg = "Name or service not known"
		if de, ok := err.(*net.DNSError); ok && (de.IsTemporary || de.IsTimeout) {
			msg = "Temporary failure in name resolution"
		}
	}
	if msg == "" {
		return ""
	}
	return fmt.Sprintf("%s for ai_family: %x service: %s port: %d\n", msg, family, host, p.Port)
}

// establishTCP opens the out-of-band TCP connection.
func (r *runner) establishTCP() error {
	p := r.p
	addr := net.JoinHostPort(p.Servername, strconv.Itoa(p.Port))
	if !p.Server {
		if msg := resolveError(p, p.Servername); msg != "" {
			io.WriteString(r.stderr, msg)
			fmt.Fprintf(r.stderr, "Problem in resolving basic address and port\n")
			return errors.New("cannot resolve " + p.Servername)
		}
		d := net.Dialer{}
		if p.SourceIP != "" {
			d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(p.SourceIP)}
		}
		nc, err := d.Dial(tcpNetwork(p), addr)
		if err != nil {
			fmt.Fprintf(r.stderr, "Couldn't connect to %s:%d\n", p.Servername, p.Port)
			return err
		}
		r.sock = nc
	} else {
		host := ""
		if p.SourceIP != "" {
			host = p.SourceIP
		}
		l, err := net.Listen(tcpNetwork(p), net.JoinHostPort(host, strconv.Itoa(p.Port)))
		if err != nil {
			fmt.Fprintf(r.stderr, "Couldn't listen to port %d\n", p.Port)
			return err
		}
		nc, err := l.Accept()
		l.Close()
		if err != nil {
			fmt.Fprintf(r.stderr, "accept() failed\n")
			return err
		}
		r.sock = nc
	}
	if tc, ok := r.sock.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	r.conn = &Conn{RW: r.sock.(net.Conn), Client: !p.Server, Stderr: r.stderr}
	return nil
}

// exchangeSetup is exchange_versions, check_version_compatibility, check_sys_data and check_mtu.
func (r *runner) exchangeSetup() int {
	p := r.p
	if !p.DontXchgVersions {
		v, err := r.conn.Versions(Version)
		if err != nil {
			fmt.Fprintf(r.stderr, " Failed to exchange data between server and clients\n")
			return 1
		}
		p.RemVersion = v
	}
	rv := Atof(p.RemVersion)
	r.conn.WideDest = r.conn.RDMACM && rv >= wideDestVersion
	if rv < 5.70 {
		fmt.Fprintf(r.stderr, "Current implementation is not compatible with versions older than 5.70\n")
		return 1
	}
	if rv >= 5.32 && !p.DontXchgVersions {
		rcb, rcl, err := r.conn.SysData(p.CycleBuffer, p.CacheLine)
		if err != nil {
			fmt.Fprintf(r.stderr, " Failed to exchange Page Size data between server and client\n")
			return 1
		}
		p.CycleBuffer = max(p.CycleBuffer, rcb)
		p.CacheLine = max(p.CacheLine, rcl)
	}
	cur := setMTU(p, r.port, r.stdout, r.stderr)
	p.CurrMTU = cur
	if !p.DontXchgVersions && rv >= 5.1 {
		rem, err := r.conn.MTU(cur)
		if err != nil {
			fmt.Fprintf(r.stderr, " Failed to exchange data between server and clients\n")
			return 1
		}
		if rem >= 1 && rem <= 5 && cur > rem {
			p.CurrMTU = rem
		}
	}
	if p.Conn == ConnUD && p.Size > mtuBytes(p.CurrMTU) {
		if p.TestMethod == runAll || !p.ReqSize {
			fmt.Fprintf(r.stderr, " Max msg size in UD is MTU %d\n", mtuBytes(p.CurrMTU))
			fmt.Fprintf(r.stderr, " Changing to this MTU\n")
			p.Size = mtuBytes(p.CurrMTU)
		} else {
			fmt.Fprintf(r.stderr, " Max message size in UD cannot be greater than MTU \n")
			fmt.Fprintf(r.stderr, " Couldn't get context for the device\n")
			return 1
		}
	}
	return -1
}

// handshake is ctx_hand_shake on QP i's keys.
func (r *runner) handshake(i int) bool {
	d, err := r.conn.Keys(&r.sess.my[i], r.p.GIDIndex != -1)
	if err != nil {
		fmt.Fprintf(r.stderr, " Failed to exchange data between server and clients\n")
		return false
	}
	r.sess.rem[i] = d
	return true
}

// closeConn is ctx_close_connection: a last handshake, then "done".
func (r *runner) closeConn() bool {
	if !r.handshake(0) {
		return false
	}
	if err := r.conn.Done(); err != nil {
		fmt.Fprintf(r.stderr, "Couldn't write to socket\n")
		return false
	}
	return true
}

// closeAndEnd is the end of a test: closeConn, then the closing RESULT_LINE. It returns the exit status.
func (r *runner) closeAndEnd() int {
	if !r.closeConn() {
		return r.errf("Failed to close connection between server and client\n")
	}
	r.endLine()
	return 0
}

// endLine writes the RESULT_LINE that closes the report (only in the full output).
func (r *runner) endLine() {
	if r.p.Output == outFull {
		io.WriteString(r.stdout, resultLine)
	}
}

// exchangeAndConnect runs the common middle of every test: key exchange, connect, the printed addresses.
// extraFirst adds the lat tests' leading handshake; afterConnect the send tests' barrier after connect.
func (r *runner) exchangeAndConnect(extraFirst, afterConnect bool) bool {
	p, s := r.p, r.sess
	if extraFirst && !r.handshake(0) {
		return false
	}
	for i := 0; i < p.NumQPs; i++ {
		if !r.handshake(i) {
			return false
		}
	}
	if err := s.connect(r.stderr); err != nil {
		fmt.Fprintf(r.stderr, " Unable to Connect the HCA's through the link\n")
		return false
	}
	if afterConnect && !r.handshake(0) {
		return false
	}
	for i := range s.my {
		printDest(r.stdout, p, &s.my[i], "local")
	}
	for i := range s.my {
		if !r.handshake(i) {
			return false
		}
		printDest(r.stdout, p, &s.rem[i], "remote")
	}
	return true
}

func (r *runner) allocTimes() {
	p, s := r.p, r.sess
	n := uint64(1)
	if !p.NoPeak {
		n = p.Iters * uint64(p.NumQPs)
	}
	if p.Kind == KindLat && p.TestType == byIterations {
		n = p.Iters
	}
	s.tposted = make([]int64, max(n, 1))
	s.tcompleted = make([]int64, max(n, 1))
}

func (r *runner) armEvents() bool {
	if !r.p.UseEvent {
		return true
	}
	if err := r.sess.sendCQ.ReqNotify(false); err != nil {
		fmt.Fprintf(r.stderr, " Couldn't request CQ notification\n")
		return false
	}
	if r.sess.recvCQ != r.sess.sendCQ {
		if err := r.sess.recvCQ.ReqNotify(false); err != nil {
			fmt.Fprintf(r.stderr, " Couldn't request CQ notification\n")
			return false
		}
	}
	return true
}

// reportBW is print_report_bw and, in bidirectional runs, the report exchange and the summed line. It returns
// this side's report and the peer's (zero unless bidirectional).
func (r *runner) reportBW(iters uint64) (BWReport, BWReport, bool) {
	p := r.p
	rep := bwReport(p, r.sess.tposted, r.sess.tcompleted, iters, ticksPerUsec())
	var rem BWReport
	if !p.Duplex || (p.Verb == VerbSend && p.TestType == byDuration) {
		r.printFullBW(&rep)
	}
	if p.Duplex && !(p.Verb == VerbSend && p.TestType == byDuration) {
		var err error
		if rem, err = r.conn.BWReports(&rep, false); err != nil {
			fmt.Fprintf(r.stderr, " Failed to exchange data between server and clients\n")
			return rep, rem, false
		}
		sum := rep
		sum.BWPeak += rem.BWPeak
		sum.BWAvg += rem.BWAvg
		sum.MsgRateAvg += rem.MsgRateAvg
		r.printFullBW(&sum)
	}
	return rep, rem, true
}

// printBoth is --report-both: this side's and the peer's results after the summed line.
func (r *runner) printBoth(mine, rem *BWReport) {
	p, out := r.p, r.stdout
	head := func(title string) {
		io.WriteString(out, resultLine)
		io.WriteString(out, title)
		writeBWHeader(out, p)
	}
	local, remote := "\n Local results: \n", "\n Remote results: \n"
	if p.Verb == VerbAtomic {
		local, remote = "\n Local results:\n", "\n Remote results:\n"
	}
	head(local)
	r.printFullBW(mine)
	io.WriteString(out, resultLine)
	head(remote)
	r.printFullBW(rem)
}

// writeJSON writes the --out_json file as open_file_write opens it (O_TRUNC, mode 0600).
func (r *runner) writeJSON(s string) {
	if err := os.WriteFile(r.p.OutJSONFile, []byte(s), 0o600); err != nil {
		fmt.Fprintf(r.stderr, "failed to open %s\n", r.p.OutJSONFile)
	}
}

func (r *runner) printFullBW(rep *BWReport) {
	p := r.p
	if p.OutJSON {
		r.writeJSON(bwJSON(p, &r.info, rep))
	}
	io.WriteString(r.stdout, formatBWLine(p, rep))
}

func (r *runner) limitsFailed(rep *BWReport) int {
	p := r.p
	if p.IsLimitBW && p.LimitBW > rep.BWAvg {
		fmt.Fprintf(r.stderr, "Error: BW result is below bw limit\n")
		return 1
	}
	if p.IsLimitBW && p.IsLimitMsgRate && p.LimitMsgRate > rep.MsgRateAvg {
		fmt.Fprintf(r.stderr, "Error: Msg rate  is below msg_rate limit\n")
		return 1
	}
	return 0
}

// sizes are the message sizes of this run: 2..2^23 (UD: up to the MTU) with -a, else -s.
func (r *runner) sizes(sendTest bool) []uint64 {
	p := r.p
	if p.TestMethod != runAll {
		return []uint64{p.Size}
	}
	top := 24
	if sendTest && p.Conn == ConnUD {
		top = int(math.Log2(float64(mtuBytes(p.CurrMTU)))) + 1
	}
	var s []uint64
	for i := 1; i < top; i++ {
		s = append(s, uint64(1)<<i)
	}
	return s
}

// rdmaBW is write_bw.c / read_bw.c / atomic_bw.c.
func (r *runner) rdmaBW() int {
	p, s, out := r.p, r.sess, r.stdout
	if !r.exchangeAndConnect(false, false) || !r.handshake(0) {
		return 1
	}
	if p.Server && !p.Duplex {
		printBWHeader(out, p)
		if !r.handshake(0) {
			return 1
		}
		rem, err := r.conn.BWReports(&BWReport{}, false)
		if err != nil {
			fmt.Fprintf(r.stderr, " Failed to exchange data between server and clients\n")
			return 1
		}
		r.printFullBW(&rem)
		if p.Verb == VerbAtomic {
			r.endLine()
			if !r.closeConn() {
				return r.errf("Failed to close connection between server and client\n")
			}
			return 0
		}
		return r.closeAndEnd()
	}
	if !r.armEvents() {
		return 1
	}
	printBWHeader(out, p)
	var rep, rem BWReport
	switch p.TestMethod {
	case runInfinitely:
		s.setSendWQEs()
		r.allocTimes()
		return r.runInfinitely()
	default:
		all := p.TestMethod == runAll
		for _, sz := range r.sizes(false) {
			p.Size = sz
			s.setSendWQEs()
			r.allocTimes()
			if p.PerformWarmUp && p.Verb != VerbSend {
				if err := s.warmUp(r.stderr); err != nil {
					return r.errf("Problems with warm up\n")
				}
			}
			if p.Duplex && !r.handshake(0) {
				return r.errf("Failed to sync between server and client between different msg sizes\n")
			}
			n, err := s.runBW(r.stderr, r.progressCounter())
			r.stopProgress()
			if err != nil {
				return r.errf(" Failed to complete run_iter_bw function successfully\n")
			}
			if all && p.Duplex && !r.handshake(0) {
				return r.errf("Failed to sync between server and client between different msg sizes\n")
			}
			var ok bool
			if rep, rem, ok = r.reportBW(n); !ok {
				return 1
			}
		}
		if p.ReportBoth && p.Duplex && !all {
			r.printBoth(&rep, &rem)
		}
	}
	r.endLine()
	if !p.Duplex {
		if !r.handshake(0) {
			return 1
		}
		if _, err := r.conn.BWReports(&rep, false); err != nil {
			fmt.Fprintf(r.stderr, " Failed to exchange data between server and clients\n")
			return 1
		}
	}
	if !r.closeConn() {
		return r.errf("Failed to close connection between server and client\n")
	}
	return r.limitsFailed(&rep)
}

// sendBW is send_bw.c.
func (r *runner) sendBW() int {
	p, s, out := r.p, r.sess, r.stdout
	if !r.exchangeAndConnect(false, true) || !r.armEvents() {
		return 1
	}
	printBWHeader(out, p)
	var rep BWReport
	if p.TestMethod == runInfinitely {
		if !p.Server {
			s.setSendWQEs()
		} else if err := s.setRecvWQEs(r.stderr); err != nil {
			return r.errf(" Failed to post receive recv_wqes\n")
		}
		if !r.handshake(0) {
			return 1
		}
		r.allocTimes()
		if p.Server {
			return r.runInfinitelyServer()
		}
		return r.runInfinitely()
	}
	all := p.TestMethod == runAll
	var rem BWReport
	for _, sz := range r.sizes(true) {
		p.Size = sz
		if !p.Server || p.Duplex {
			s.setSendWQEs()
		}
		if p.Server || p.Duplex {
			if err := s.setRecvWQEs(r.stderr); err != nil {
				return r.errf(" Failed to post receive recv_wqes\n")
			}
		}
		if !r.handshake(0) {
			return 1
		}
		r.allocTimes()
		var n uint64
		var err error
		switch {
		case p.Duplex:
			n, err = s.runBi(r.stderr, r.progressCounter())
		case p.Server:
			n, err = s.runBWServer(r.stderr, r.progressCounter())
		default:
			n, err = s.runBW(r.stderr, r.progressCounter())
		}
		r.stopProgress()
		if err != nil {
			return 17
		}
		var ok bool
		if rep, rem, ok = r.reportBW(n); !ok {
			return 1
		}
		if all && !r.handshake(0) {
			return 1
		}
	}
	if p.ReportBoth && p.Duplex && !all {
		r.printBoth(&rep, &rem)
	}
	r.endLine()
	if !r.closeConn() {
		fmt.Fprintf(r.stderr, " Failed to close connection between server and client\n")
		fmt.Fprintf(r.stderr, " Trying to close this side resources\n")
	}
	return r.limitsFailed(&rep)
}

// printLat prints one latency result (print_report_lat or print_report_lat_duration).
func (r *runner) printLat(iters uint64) {
	p, out := r.p, r.stdout
	if p.TestType == byDuration {
		t := r.sess.tcompleted[0] - r.sess.tposted[0]
		lat, tps := latDuration(p, t, iters, ticksPerUsec())
		if p.OutJSON {
			r.writeJSON(latDurJSON(p, &r.info, p.Size, iters, lat, tps))
		}
		io.WriteString(out, formatLatDurLine(p, p.Size, iters, lat, tps))
		return
	}
	res := latReport(p, r.sess.tposted[:p.Iters], ticksPerUsec())
	if p.Unsorted {
		fmt.Fprintf(out, "#, %s\n", res.Units)
		for i, v := range res.Unsorted {
			fmt.Fprintf(out, "%d, %s\n", i+1, cG(v))
		}
	}
	if p.Histogram {
		fmt.Fprintf(out, "#, %s\n", res.Units)
		for i, v := range res.Samples {
			fmt.Fprintf(out, "%d, %s\n", i+1, cG(v))
		}
	}
	if (p.Unsorted || p.Histogram) && p.Output == outFull {
		io.WriteString(out, resultLine)
		io.WriteString(out, resultFmtLat)
		io.WriteString(out, "\n")
	}
	if p.OutJSON {
		r.writeJSON(latJSON(p, &r.info, &res))
	}
	io.WriteString(out, formatLatLine(p, &res))
}

// rdmaLat is write_lat.c, read_lat.c and atomic_lat.c.
func (r *runner) rdmaLat() int {
	p, s, out := r.p, r.sess, r.stdout
	if !r.exchangeAndConnect(true, false) || !r.handshake(0) {
		return 1
	}
	passive := p.Verb != VerbWrite && p.Server
	if passive {
		return r.closeAndEnd()
	}
	if !r.armEvents() {
		return 1
	}
	printLatHeader(out, p)
	s.setSendWQEs()
	sizes := r.sizes(false)
	if p.Verb == VerbAtomic {
		sizes = []uint64{p.Size}
	}
	for _, sz := range sizes {
		p.Size = sz
		r.allocTimes()
		var n uint64
		var err error
		if p.Verb == VerbWrite {
			n, err = s.runLatWrite(r.stderr)
		} else {
			n, err = s.runLat(r.stderr)
		}
		if err != nil {
			return 17
		}
		r.printLat(n)
	}
	if p.Verb == VerbWrite {
		r.endLine()
		return 0
	}
	return r.closeAndEnd()
}

// sendLat is send_lat.c.
func (r *runner) sendLat() int {
	p, s, out := r.p, r.sess, r.stdout
	if !r.exchangeAndConnect(false, true) || !r.armEvents() {
		return 1
	}
	printLatHeader(out, p)
	s.setSendWQEs()
	for _, sz := range r.sizes(true) {
		p.Size = sz
		if err := s.setRecvWQEs(r.stderr); err != nil {
			return r.errf(" Failed to post receive recv_wqes\n")
		}
		if !r.handshake(0) {
			return 1
		}
		r.allocTimes()
		n, err := s.runLatSend(r.stderr)
		if err != nil {
			return 17
		}
		r.printLat(n)
	}
	r.endLine()
	if !r.closeConn() {
		return r.errf(" Failed to close connection between server and client\n")
	}
	return 0
}

// Progress lines for bandwidth -D runs (off with --no_progress) and the periodic reports of --run_infinitely.

func (r *runner) progressCounter() *atomic.Uint64 {
	if r.p.NoProgress || r.p.TestType != byDuration || r.p.TestMethod == runInfinitely {
		return nil
	}
	var n atomic.Uint64
	ctx, cancel := context.WithCancel(context.Background())
	r.progressStop = cancel
	go progress(ctx, r.stderr, &n)
	return &n
}

func (r *runner) stopProgress() {
	if r.progressStop != nil {
		r.progressStop()
		r.progressStop = nil
	}
}

// runInfinitely is run_iter_bw_infinitely: post forever and print a report line every -D seconds.
func (r *runner) runInfinitely() int {
	var count atomic.Uint64
	go r.reportEvery(&count)
	if err := r.sess.runForever(r.stderr, &count, false); err != nil {
		return r.errf(" Error occurred while running infinitely! aborting ...\n")
	}
	return 0
}

func (r *runner) runInfinitelyServer() int {
	var count atomic.Uint64
	go r.reportEvery(&count)
	if err := r.sess.runForever(r.stderr, &count, true); err != nil {
		return r.errf(" Error occurred while running infinitely on server! aborting ...\n")
	}
	return 0
}

// reportEvery prints a bandwidth line for the iterations of each -D second period (print_bw_infinite_mode).
func (r *runner) reportEvery(count *atomic.Uint64) {
	p := r.p
	last := uint64(0)
	start := now()
	for {
		time.Sleep(time.Duration(p.Duration) * time.Second)
		n := count.Load()
		end := now()
		rep := bwReport(p, []int64{start}, []int64{end}, n-last, ticksPerUsec())
		r.printFullBW(&rep)
		last, start = n, end
	}
}
