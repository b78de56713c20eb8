// Package pingpong is goverbs' clone of rdma-core 44's ibv_rc_pingpong: the same options, the same 52-byte
// connection record and "done" handshake over TCP, and the same output lines, so a goverbs side pairs with a C
// side in either role.
package pingpong

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/internal/tools/cstd"
	"github.com/goverbs/goverbs/internal/tools/getopt"
	"github.com/goverbs/goverbs/uverbs"
)

const (
	recvWRID = 1
	sendWRID = 2
)

var rcLongOpts = []getopt.LongOption{
	{Name: "port", HasArg: getopt.RequiredArgument, Val: 'p'},
	{Name: "ib-dev", HasArg: getopt.RequiredArgument, Val: 'd'},
	{Name: "ib-port", HasArg: getopt.RequiredArgument, Val: 'i'},
	{Name: "size", HasArg: getopt.RequiredArgument, Val: 's'},
	{Name: "mtu", HasArg: getopt.RequiredArgument, Val: 'm'},
	{Name: "rx-depth", HasArg: getopt.RequiredArgument, Val: 'r'},
	{Name: "iters", HasArg: getopt.RequiredArgument, Val: 'n'},
	{Name: "sl", HasArg: getopt.RequiredArgument, Val: 'l'},
	{Name: "events", HasArg: getopt.NoArgument, Val: 'e'},
	{Name: "gid-idx", HasArg: getopt.RequiredArgument, Val: 'g'},
	{Name: "odp", HasArg: getopt.NoArgument, Val: 'o'},
	{Name: "iodp", HasArg: getopt.NoArgument, Val: 'O'},
	{Name: "prefetch", HasArg: getopt.NoArgument, Val: 'P'},
	{Name: "ts", HasArg: getopt.NoArgument, Val: 't'},
	{Name: "chk", HasArg: getopt.NoArgument, Val: 'c'},
	{Name: "dm", HasArg: getopt.NoArgument, Val: 'j'},
	{Name: "new_send", HasArg: getopt.NoArgument, Val: 'N'},
}

func rcUsage(w io.Writer, prog string) {
	fmt.Fprintf(w, "Usage:\n")
	fmt.Fprintf(w, "  %s            start a server and wait for connection\n", prog)
	fmt.Fprintf(w, "  %s <host>     connect to server at <host>\n", prog)
	fmt.Fprintf(w, "\n")
	fmt.Fprintf(w, "Options:\n")
	fmt.Fprintf(w, "  -p, --port=<port>      listen on/connect to port <port> (default 18515)\n")
	fmt.Fprintf(w, "  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n")
	fmt.Fprintf(w, "  -i, --ib-port=<port>   use port <port> of IB device (default 1)\n")
	fmt.Fprintf(w, "  -s, --size=<size>      size of message to exchange (default 4096)\n")
	fmt.Fprintf(w, "  -m, --mtu=<size>       path MTU (default 1024)\n")
	fmt.Fprintf(w, "  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n")
	fmt.Fprintf(w, "  -n, --iters=<iters>    number of exchanges (default 1000)\n")
	fmt.Fprintf(w, "  -l, --sl=<sl>          service level value\n")
	fmt.Fprintf(w, "  -e, --events           sleep on CQ events (default poll)\n")
	fmt.Fprintf(w, "  -g, --gid-idx=<gid index> local port gid index\n")
	fmt.Fprintf(w, "  -o, --odp\t\t    use on demand paging\n")
	fmt.Fprintf(w, "  -O, --iodp\t\t    use implicit on demand paging\n")
	fmt.Fprintf(w, "  -P, --prefetch\t    prefetch an ODP MR\n")
	fmt.Fprintf(w, "  -t, --ts\t            get CQE with timestamp\n")
	fmt.Fprintf(w, "  -c, --chk\t            validate received buffer\n")
	fmt.Fprintf(w, "  -j, --dm\t            use device memory\n")
	fmt.Fprintf(w, "  -N, --new_send            use new post send WR API\n")
}

// rcOptions are ibv_rc_pingpong's settings.
type rcOptions struct {
	devName  string
	server   string
	port     uint64
	ibPort   int
	size     int
	mtu      uverbs.MTU
	rxDepth  int
	iters    int
	sl       int
	events   bool
	gidx     int
	odp      bool
	implicit bool
	prefetch bool
	ts       bool
	validate bool
	dm       bool
	newSend  bool
}

// RunRC runs ibv_rc_pingpong with args (without the program name) and returns its exit status.
func RunRC(prog string, args []string, stdout, stderr io.Writer) int {
	o := rcOptions{port: 18515, ibPort: 1, size: 4096, mtu: uverbs.MTU1024, rxDepth: 500, iters: 1000, gidx: -1}
	p := getopt.New(prog, args, "p:d:i:s:m:r:n:l:eg:oOPtcjN", rcLongOpts, stderr, os.Getenv("POSIXLY_CORRECT") != "")
	for {
		opt, ok := p.Next()
		if !ok {
			break
		}
		switch opt.Val {
		case 'p':
			v, _, _ := cstd.Strtoul(opt.Arg, 0)
			o.port = uint64(uint32(v))
			if o.port > 65535 {
				rcUsage(stdout, prog)
				return 1
			}
		case 'd':
			o.devName = opt.Arg
		case 'i':
			v, _, _ := cstd.Strtol(opt.Arg, 0)
			o.ibPort = int(int32(v))
			if o.ibPort < 1 {
				rcUsage(stdout, prog)
				return 1
			}
		case 's':
			v, _, _ := cstd.Strtoul(opt.Arg, 0)
			o.size = int(uint32(v))
		case 'm':
			v, _, _ := cstd.Strtol(opt.Arg, 0)
			o.mtu = uverbs.MTUFromBytes(int(int32(v)))
			if o.mtu == 0 {
				rcUsage(stdout, prog)
				return 1
			}
		case 'r':
			v, _, _ := cstd.Strtoul(opt.Arg, 0)
			o.rxDepth = int(uint32(v))
		case 'n':
			v, _, _ := cstd.Strtoul(opt.Arg, 0)
			o.iters = int(uint32(v))
		case 'l':
			v, _, _ := cstd.Strtol(opt.Arg, 0)
			o.sl = int(int32(v))
		case 'e':
			o.events = true
		case 'g':
			v, _, _ := cstd.Strtol(opt.Arg, 0)
			o.gidx = int(int32(v))
		case 'o':
			o.odp = true
		case 'P':
			o.prefetch = true
		case 'O':
			o.odp, o.implicit = true, true
		case 't':
			o.ts = true
		case 'c':
			o.validate = true
		case 'j':
			o.dm = true
		case 'N':
			o.newSend = true
		default:
			rcUsage(stdout, prog)
			return 1
		}
	}
	ops := p.Operands()
	if len(ops) == 1 {
		o.server = ops[0]
	} else if len(ops) > 1 {
		rcUsage(stdout, prog)
		return 1
	}
	if o.odp && o.dm {
		fmt.Fprintf(stderr, "DM memory region can't be on demand\n")
		return 1
	}
	if !o.odp && o.prefetch {
		fmt.Fprintf(stderr, "prefetch is valid only with on-demand memory region\n")
		return 1
	}
	return runRC(&o, stdout, stderr)
}

// pp is the state of one pingpong run (struct pingpong_context).
type pp struct {
	ctx       *uverbs.Context
	channel   *uverbs.CompChannel
	pd        *uverbs.PD
	buf       *uverbs.Buffer
	mr        *uverbs.MR
	cq        *uverbs.CQ
	qp        *uverbs.QP
	size      int
	rxDepth   int
	sendFlags uverbs.SendFlags
	pending   int

	sendWR [1]uverbs.SendWR
	recvWR [1]uverbs.RecvWR
	sge    [1]uverbs.SGE
}

func (c *pp) close() {
	c.qp.Close()
	c.cq.Close()
	c.mr.Close()
	c.pd.Close()
	c.channel.Close()
	c.ctx.Close()
	c.buf.Close()
}

func findDevice(name string, stderr io.Writer) (uverbs.Device, bool) {
	devs, err := uverbs.Devices()
	if err != nil {
		fmt.Fprintf(stderr, "Failed to get IB devices list: %s\n", cstd.Strerror(cstd.ErrnoOf(err, unix.ENOSYS)))
		return uverbs.Device{}, false
	}
	if name == "" {
		if len(devs) == 0 {
			fmt.Fprintf(stderr, "No IB devices found\n")
			return uverbs.Device{}, false
		}
		return devs[0], true
	}
	for _, d := range devs {
		if d.Name == name {
			return d, true
		}
	}
	fmt.Fprintf(stderr, "IB device %s not found\n", name)
	return uverbs.Device{}, false
}

func initRC(dev uverbs.Device, o *rcOptions, stderr io.Writer) *pp {
	c := &pp{size: o.size, rxDepth: o.rxDepth, sendFlags: uverbs.SendSignaled}
	var err error
	n := o.size
	if n == 0 {
		n = 1
	}
	if c.buf, err = uverbs.AllocBuffer(n); err != nil {
		fmt.Fprintf(stderr, "Couldn't allocate work buf.\n")
		return nil
	}
	mem := c.buf.Bytes()
	for i := range mem {
		mem[i] = 0x7b
	}
	fail := func(msg string) *pp {
		fmt.Fprintf(stderr, "%s\n", msg)
		c.close()
		return nil
	}
	if c.ctx, err = dev.Open(); err != nil {
		return fail("Couldn't get context for " + dev.Name)
	}
	if o.events {
		if c.channel, err = c.ctx.CreateCompChannel(); err != nil {
			return fail("Couldn't create completion channel")
		}
	}
	if c.pd, err = c.ctx.AllocPD(); err != nil {
		return fail("Couldn't allocate PD")
	}
	if o.odp || o.ts || o.dm {
		da, err := c.ctx.QueryDevice()
		if err != nil {
			return fail("Couldn't query device for its features")
		}
		const odpSupport, odpSend, odpRecv = 1, 1, 2
		if o.odp && (da.ODPGeneralCaps&odpSupport == 0 || da.ODPRCCaps&(odpSend|odpRecv) != odpSend|odpRecv) {
			return fail("The device isn't ODP capable or does not support RC send and receive with ODP")
		}
		if o.implicit && da.ODPGeneralCaps&2 == 0 {
			return fail("The device doesn't support implicit ODP")
		}
		if o.ts && da.TimestampMask == 0 {
			return fail("The device isn't completion timestamp capable")
		}
		if o.dm && da.MaxDMSize == 0 {
			return fail("Device doesn't support dm allocation")
		}
	}
	access := uverbs.AccessLocalWrite
	if o.odp {
		access |= uverbs.AccessOnDemand
	}
	if c.mr, err = c.pd.RegMR(c.buf.Bytes(), access); err != nil {
		return fail("Couldn't register MR")
	}
	if c.cq, err = c.ctx.CreateCQ(uverbs.CQAttr{CQE: o.rxDepth + 1, Channel: c.channel}); err != nil {
		return fail("Couldn't create CQ")
	}
	c.qp, err = c.pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: c.cq, RecvCQ: c.cq,
		Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: uint32(o.rxDepth), MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return fail("Couldn't create QP")
	}
	if qa, err := c.qp.Query(uverbs.QPAttrCap); err == nil && int(qa.Cap.MaxInlineData) >= o.size {
		c.sendFlags |= uverbs.SendInline
	}
	init := &uverbs.QPAttr{State: uverbs.QPStateInit, PKeyIndex: 0, PortNum: uint8(o.ibPort)}
	if err := c.qp.Modify(init, uverbs.QPAttrState|uverbs.QPAttrPKeyIndex|uverbs.QPAttrPort|uverbs.QPAttrAccessFlags); err != nil {
		return fail("Failed to modify QP to INIT")
	}
	c.sge[0] = c.mr.SGE(0, o.size)
	c.recvWR[0] = uverbs.RecvWR{WRID: recvWRID, SGL: c.sge[:]}
	return c
}

func (c *pp) postRecv(n int) int {
	i := 0
	for ; i < n; i++ {
		if _, err := c.qp.PostRecv(c.recvWR[:]); err != nil {
			break
		}
	}
	return i
}

func (c *pp) postSend() error {
	c.sendWR[0] = uverbs.SendWR{WRID: sendWRID, SGL: c.sge[:], Opcode: uverbs.WRSend, Flags: c.sendFlags}
	_, err := c.qp.PostSend(c.sendWR[:])
	return err
}

func (c *pp) connect(o *rcOptions, myPSN int, rem *dest) error {
	rtr := &uverbs.QPAttr{State: uverbs.QPStateRTR, PathMTU: o.mtu, DestQPN: uint32(rem.qpn), RQPSN: uint32(rem.psn),
		MaxDestRdAtomic: 1, MinRNRTimer: 12,
		AHAttr: uverbs.AHAttr{DLID: uint16(rem.lid), SL: uint8(o.sl), PortNum: uint8(o.ibPort)}}
	// The record's GID is used only when its interface id (the low 8 bytes) is set, as in rdma-core.
	var zero [8]byte
	if [8]byte(rem.gid[8:]) != zero {
		rtr.AHAttr.IsGlobal = true
		rtr.AHAttr.GRH.HopLimit = 1
		rtr.AHAttr.GRH.DGID = rem.gid
		rtr.AHAttr.GRH.SGIDIndex = uint8(o.gidx)
	}
	if err := c.qp.Modify(rtr, uverbs.QPAttrState|uverbs.QPAttrAV|uverbs.QPAttrPathMTU|uverbs.QPAttrDestQPN|
		uverbs.QPAttrRQPSN|uverbs.QPAttrMaxDestRdAtomic|uverbs.QPAttrMinRNRTimer); err != nil {
		return errors.New("Failed to modify QP to RTR")
	}
	rts := *rtr
	rts.State, rts.Timeout, rts.RetryCnt, rts.RNRRetry, rts.SQPSN, rts.MaxRdAtomic = uverbs.QPStateRTS, 14, 7, 7, uint32(myPSN), 1
	if err := c.qp.Modify(&rts, uverbs.QPAttrState|uverbs.QPAttrTimeout|uverbs.QPAttrRetryCnt|uverbs.QPAttrRNRRetry|
		uverbs.QPAttrSQPSN|uverbs.QPAttrMaxQPRdAtomic); err != nil {
		return errors.New("Failed to modify QP to RTS")
	}
	return nil
}

// clientExchange connects to the server and swaps records (pp_client_exch_dest).
func clientExchange(server string, port int, my dest, stderr io.Writer) (*dest, bool) {
	conn, err := net.Dial("tcp", net.JoinHostPort(server, strconv.Itoa(port)))
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			fmt.Fprintf(stderr, "Name or service not known for %s:%d\n", server, port)
			return nil, false
		}
		fmt.Fprintf(stderr, "Couldn't connect to %s:%d\n", server, port)
		return nil, false
	}
	defer conn.Close()
	if _, err := conn.Write(my.encode()); err != nil {
		fmt.Fprintf(stderr, "Couldn't send local address\n")
		return nil, false
	}
	msg := make([]byte, msgSize)
	if _, err := io.ReadFull(conn, msg); err != nil {
		fmt.Fprintf(stderr, "client read/write: %s\n", cstd.Strerror(cstd.ErrnoOf(err, unix.ECONNRESET)))
		fmt.Fprintf(stderr, "Couldn't read/write remote address\n")
		return nil, false
	}
	if _, err := conn.Write([]byte("done\x00")); err != nil {
		fmt.Fprintf(stderr, "client read/write: %s\n", cstd.Strerror(cstd.ErrnoOf(err, unix.EPIPE)))
		fmt.Fprintf(stderr, "Couldn't read/write remote address\n")
		return nil, false
	}
	rem := decodeDest(msg)
	return &rem, true
}

// serverExchange waits for one client, connects the QP to it, and swaps records (pp_server_exch_dest).
func serverExchange(c *pp, o *rcOptions, my dest, stderr io.Writer) (*dest, bool) {
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(int(o.port)))
	if err != nil {
		fmt.Fprintf(stderr, "Couldn't listen to port %d\n", o.port)
		return nil, false
	}
	conn, err := ln.Accept()
	ln.Close()
	if err != nil {
		fmt.Fprintf(stderr, "accept() failed\n")
		return nil, false
	}
	defer conn.Close()
	msg := make([]byte, msgSize)
	if n, err := io.ReadFull(conn, msg); err != nil {
		fmt.Fprintf(stderr, "server read: %s\n", cstd.Strerror(cstd.ErrnoOf(err, unix.ECONNRESET)))
		fmt.Fprintf(stderr, "%d/%d: Couldn't read remote address\n", n, msgSize)
		return nil, false
	}
	rem := decodeDest(msg)
	if err := c.connect(o, my.psn, &rem); err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		fmt.Fprintf(stderr, "Couldn't connect to remote QP\n")
		return nil, false
	}
	if _, err := conn.Write(my.encode()); err != nil {
		fmt.Fprintf(stderr, "Couldn't send/recv local address\n")
		return nil, false
	}
	// The client answers with "done" and its NUL: exactly 5 bytes in one read.
	if n, err := conn.Read(msg); err != nil || n != len("done\x00") {
		fmt.Fprintf(stderr, "Couldn't send/recv local address\n")
		return nil, false
	}
	return &rem, true
}

func runRC(o *rcOptions, stdout, stderr io.Writer) int {
	pageSize := os.Getpagesize()
	dev, ok := findDevice(o.devName, stderr)
	if !ok {
		return 1
	}
	c := initRC(dev, o, stderr)
	if c == nil {
		return 1
	}
	routs := c.postRecv(c.rxDepth)
	if routs < c.rxDepth {
		fmt.Fprintf(stderr, "Couldn't post receive (%d)\n", routs)
		return 1
	}
	if o.events {
		if err := c.cq.ReqNotify(false); err != nil {
			fmt.Fprintf(stderr, "Couldn't request CQ notification\n")
			return 1
		}
	}
	pa, err := c.ctx.QueryPort(o.ibPort)
	if err != nil {
		fmt.Fprintf(stderr, "Couldn't get port info\n")
		return 1
	}
	my := dest{lid: int(pa.LID)}
	if pa.LinkLayer != uverbs.LinkLayerEthernet && my.lid == 0 {
		fmt.Fprintf(stderr, "Couldn't get local LID\n")
		return 1
	}
	if o.gidx >= 0 {
		g, err := c.ctx.QueryGID(o.ibPort, o.gidx)
		if err != nil && !errors.Is(err, unix.ENODATA) {
			fmt.Fprintf(stderr, "can't read sgid of index %d\n", o.gidx)
			return 1
		}
		my.gid = g.GID
	}
	my.qpn = int(c.qp.QPN())
	my.psn = int(rand.Int31() & 0xffffff)
	fmt.Fprintf(stdout, "  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", my.lid, my.qpn, my.psn, cstd.InetNtop6(my.gid))

	var rem *dest
	if o.server != "" {
		rem, ok = clientExchange(o.server, int(o.port), my, stderr)
	} else {
		rem, ok = serverExchange(c, o, my, stderr)
	}
	if !ok {
		return 1
	}
	fmt.Fprintf(stdout, "  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", rem.lid, rem.qpn, rem.psn, cstd.InetNtop6(rem.gid))
	if o.server != "" {
		if err := c.connect(o, my.psn, rem); err != nil {
			fmt.Fprintf(stderr, "%v\n", err)
			return 1
		}
	}

	c.pending = recvWRID
	if o.server != "" {
		if o.validate {
			mem := c.buf.Bytes()
			for i := 0; i < o.size; i += pageSize {
				// rdma-core stores i / page_size % sizeof(char), which is always 0.
				mem[i] = 0
			}
		}
		if err := c.postSend(); err != nil {
			fmt.Fprintf(stderr, "Couldn't post send\n")
			return 1
		}
		c.pending |= sendWRID
	}

	start := time.Now()
	rcnt, scnt, numEvents := 0, 0, 0
	var wc [2]uverbs.WC
	for rcnt < o.iters || scnt < o.iters {
		if o.events {
			evcq, err := c.channel.GetEvent(context.Background())
			if err != nil {
				fmt.Fprintf(stderr, "Failed to get cq_event\n")
				return 1
			}
			numEvents++
			if evcq != c.cq {
				fmt.Fprintf(stderr, "CQ event for unknown CQ %p\n", evcq)
				return 1
			}
			if err := c.cq.ReqNotify(false); err != nil {
				fmt.Fprintf(stderr, "Couldn't request CQ notification\n")
				return 1
			}
		}
		ne := 0
		for {
			ne = c.cq.Poll(wc[:])
			if o.events || ne >= 1 {
				break
			}
		}
		for i := 0; i < ne; i++ {
			if !c.parseWC(&wc[i], &scnt, &rcnt, &routs, o.iters, stderr) {
				fmt.Fprintf(stderr, "parse WC failed %d\n", ne)
				return 1
			}
		}
	}
	elapsed := time.Since(start)
	// rdma-core computes in float microseconds from gettimeofday.
	usec := float32(elapsed.Microseconds())
	bytes := int64(o.size) * int64(o.iters) * 2
	fmt.Fprintf(stdout, "%d bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, float64(usec)/1000000., float64(bytes)*8./float64(usec))
	fmt.Fprintf(stdout, "%d iters in %.2f seconds = %.2f usec/iter\n", o.iters, float64(usec)/1000000., float64(usec)/float64(o.iters))
	if o.server == "" && o.validate {
		mem := c.buf.Bytes()
		for i := 0; i < o.size; i += pageSize {
			if mem[i] != 0 {
				fmt.Fprintf(stdout, "invalid data in page %d\n", i/pageSize)
			}
		}
	}
	c.cq.AckEvents(numEvents)
	for _, step := range []struct {
		close func() error
		msg   string
	}{{c.qp.Close, "Couldn't destroy QP"}, {c.cq.Close, "Couldn't destroy CQ"}, {c.mr.Close, "Couldn't deregister MR"},
		{c.pd.Close, "Couldn't deallocate PD"}, {c.channel.Close, "Couldn't destroy completion channel"},
		{c.ctx.Close, "Couldn't release context"}} {
		if err := step.close(); err != nil {
			fmt.Fprintf(stderr, "%s\n", step.msg)
			return 1
		}
	}
	c.buf.Close()
	return 0
}

// parseWC handles one completion (parse_single_wc): count it, replenish receives, and post the next send once
// both the previous send and receive have completed.
func (c *pp) parseWC(wc *uverbs.WC, scnt, rcnt, routs *int, iters int, stderr io.Writer) bool {
	if wc.Status != uverbs.WCSuccess {
		fmt.Fprintf(stderr, "Failed status %s (%d) for wr_id %d\n", uverbs.WCStatusString(wc.Status), wc.Status, int(wc.WRID))
		return false
	}
	switch int(wc.WRID) {
	case sendWRID:
		*scnt++
	case recvWRID:
		*routs--
		if *routs <= 1 {
			*routs += c.postRecv(c.rxDepth - *routs)
			if *routs < c.rxDepth {
				fmt.Fprintf(stderr, "Couldn't post receive (%d)\n", *routs)
				return false
			}
		}
		*rcnt++
	default:
		fmt.Fprintf(stderr, "Completion for unknown wr_id %d\n", int(wc.WRID))
		return false
	}
	c.pending &^= int(wc.WRID)
	if *scnt < iters && c.pending == 0 {
		if err := c.postSend(); err != nil {
			fmt.Fprintf(stderr, "Couldn't post send\n")
			return false
		}
		c.pending = recvWRID | sendWRID
	}
	return true
}
