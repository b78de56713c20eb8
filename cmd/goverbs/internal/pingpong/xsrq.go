package pingpong

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/uverbs"
)

// xrcDomainFile is the file xsrq_pingpong ties its XRC domain to.
const xrcDomainFile = "/tmp/xrc_domain"

// ErrXRCUnimplemented is what MainXSRQ reports, after the XRC domain opened, on a device that has XRC: goverbs
// has no XRC SRQs or XRC QPs, so the run cannot go on as rdma-core's would.
var ErrXRCUnimplemented = errors.New("XRC SRQs and XRC QPs are not implemented by goverbs")

var xsrqLongOpts = []getopt.LongOption{loPort, loIBDev, loIBPort, loSize, loMTU,
	{Name: "clients", HasArg: getopt.RequiredArgument, Val: 'c'},
	{Name: "num_tests", HasArg: getopt.RequiredArgument, Val: 'n'},
	loSL, loEvents, loODP, loGIDIdx}

func xsrqUsage(w io.Writer, prog string) {
	usageText(w, prog,
		useSize, useMTU,
		"  -c, --clients=<n>      number of clients (on server only, default 1)\n",
		"  -n, --num_tests=<n>    number of tests per client (default 5)\n",
		useSL, useEvents, useODP, useGIDIdx,
	)
}

// xsrqOptions are ibv_xsrq_pingpong's settings (its globals ctx.* and main's locals); all are C ints.
type xsrqOptions struct {
	devName    string
	server     string
	port       int32
	ibPort     int32
	size       int32
	mtu        uverbs.MTU
	numClients int32
	numTests   int32
	sl         int32
	gidx       int32
	events     bool
	odp        bool
}

func parseXSRQ(prog string, args []string, stdout, stderr io.Writer) (*xsrqOptions, bool) {
	o := &xsrqOptions{port: 18515, ibPort: 1, size: 4096, mtu: uverbs.MTU1024, numClients: 1, numTests: 5, gidx: -1}
	p := getopt.New(prog, args, "p:d:i:s:m:n:l:eog:c:", xsrqLongOpts, stderr, os.Getenv("POSIXLY_CORRECT") != "")
	for opt := range p.All() {
		switch opt.Val {
		case 'p':
			o.port = strtol32(opt.Arg)
			if o.port < 0 || o.port > 65535 {
				xsrqUsage(stdout, prog)
				return nil, false
			}
		case 'd':
			o.devName = opt.Arg
		case 'i':
			o.ibPort = strtol32(opt.Arg)
			if o.ibPort < 0 {
				xsrqUsage(stdout, prog)
				return nil, false
			}
		case 's':
			o.size = strtol32(opt.Arg)
		case 'm':
			o.mtu = uverbs.MTUFromBytes(int(strtol32(opt.Arg)))
			if o.mtu == 0 {
				xsrqUsage(stdout, prog)
				return nil, false
			}
		case 'c':
			o.numClients = strtol32(opt.Arg)
		case 'n':
			o.numTests = strtol32(opt.Arg)
		case 'l':
			o.sl = strtol32(opt.Arg)
		case 'g':
			o.gidx = strtol32(opt.Arg)
		case 'e':
			o.events = true
		case 'o':
			o.odp = true
		default:
			xsrqUsage(stdout, prog)
			return nil, false
		}
	}
	ops := p.Operands()
	if len(ops) == 1 {
		o.server, o.numClients = ops[0], 1
	} else if len(ops) > 1 {
		xsrqUsage(stdout, prog)
		return nil, false
	}
	return o, true
}

// MainXSRQ runs ibv_xsrq_pingpong with args (without the program name) and returns its exit status. It does
// what rdma-core's tool does up to and including opening the XRC domain, with the same messages and status:
// on a device without XRC (rxe) that is where the C tool stops too. On a device with XRC it stops there with
// ErrXRCUnimplemented's text and status 1.
func MainXSRQ(prog string, args []string, stdout, stderr io.Writer) int {
	o, ok := parseXSRQ(prog, args, stdout, stderr)
	if !ok {
		return 1
	}
	// rdma-core callocs its per-client arrays first and exits silently when that fails.
	if o.numClients < 0 {
		return 1
	}
	res := &xsrqResources{}
	defer res.close()
	if !res.open(o, stderr) {
		return 1
	}
	fmt.Fprintf(stderr, "%s: %v\n", prog, ErrXRCUnimplemented)
	return 1
}

// xsrqResources are what xsrq_pingpong's pp_init_ctx has set up before it needs XRC QPs.
type xsrqResources struct {
	ctx     *uverbs.Context
	buf     *uverbs.Buffer
	channel *uverbs.CompChannel
	pd      *uverbs.PD
	mr      *uverbs.MR
	fd      int
	xrcd    *uverbs.XRCD
}

// open is xsrq_pingpong's pp_init_ctx up to ibv_open_xrcd, printing its messages; false when the tool must exit
// with status 1.
func (r *xsrqResources) open(o *xsrqOptions, stderr io.Writer) bool {
	r.fd = -1
	if !r.openDevice(o.devName, stderr) {
		fmt.Fprintf(stderr, "Failed to open device\n")
		return false
	}
	if o.odp {
		da, err := r.ctx.QueryDevice()
		if err != nil {
			fmt.Fprintf(stderr, "Couldn't query device for its features\n")
			return false
		}
		const need = uverbs.ODPSend | uverbs.ODPSRQRecv
		if da.ODPGeneralCaps&uverbs.ODPSupport == 0 || da.XRCODPCaps&need != need {
			fmt.Fprintf(stderr, "The device isn't ODP capable or does not support XRC send, receive and srq with ODP\n")
			return false
		}
	}
	pa, err := r.ctx.QueryPort(int(o.ibPort))
	if err != nil {
		fmt.Fprintf(stderr, "Failed to get port info\n")
		return false
	}
	if pa.LinkLayer != uverbs.LinkLayerEthernet && pa.LID == 0 {
		fmt.Fprintf(stderr, "Couldn't get local LID\n")
		return false
	}
	n := int(o.size)
	if n == 0 {
		n = 1 // memalign(page, 0) still returns a buffer
	}
	if r.buf, err = uverbs.AllocBuffer(n); err != nil {
		fmt.Fprintf(stderr, "Couldn't allocate work buf.\n")
		return false
	}
	if o.events {
		if r.channel, err = r.ctx.CreateCompChannel(&uverbs.CompChannelOptions{Wait: uverbs.WaitRead}); err != nil {
			fmt.Fprintf(stderr, "Couldn't create completion channel\n")
			return false
		}
	}
	if r.pd, err = r.ctx.AllocPD(); err != nil {
		fmt.Fprintf(stderr, "Couldn't allocate PD\n")
		return false
	}
	access := uverbs.AccessLocalWrite
	if o.odp {
		access |= uverbs.AccessOnDemand
	}
	if r.mr, err = r.pd.RegMR(r.buf.Bytes()[:o.size], access); err != nil {
		fmt.Fprintf(stderr, "Couldn't register MR\n")
		return false
	}
	fd, err := unix.Open(xrcDomainFile, unix.O_RDONLY|unix.O_CREAT|unix.O_CLOEXEC, unix.S_IRUSR|unix.S_IRGRP)
	if err != nil {
		fmt.Fprintf(stderr, "Couldn't create the file for the XRC Domain but not stopping %d\n", cstd.ErrnoOf(err, unix.EIO))
		fd = -1
	}
	r.fd = fd
	if r.xrcd, err = r.ctx.OpenXRCD(r.fd, uverbs.XRCDCreate); err != nil {
		fmt.Fprintf(stderr, "Couldn't Open the XRC Domain %d\n", cstd.ErrnoOf(err, unix.EOPNOTSUPP))
		return false
	}
	return true
}

// openDevice is xsrq_pingpong's open_device: the named device, or the first when no name is given.
func (r *xsrqResources) openDevice(name string, stderr io.Writer) bool {
	devs, err := deviceList()
	if err != nil {
		fmt.Fprintf(stderr, "Failed to get IB devices list")
		return false
	}
	i := 0
	if name != "" {
		for i < len(devs) && devs[i].Name != name {
			i++
		}
	}
	if i >= len(devs) {
		fmt.Fprintf(stderr, "IB device %s not found\n", name)
		return false
	}
	if r.ctx, err = devs[i].Open(); err != nil {
		fmt.Fprintf(stderr, "Couldn't get context for %s\n", devs[i].Name)
		return false
	}
	return true
}

// close releases what open set up (the C tool leaves that to its exit).
func (r *xsrqResources) close() {
	r.xrcd.Close()
	if r.fd >= 0 {
		unix.Close(r.fd)
	}
	r.mr.Close()
	r.pd.Close()
	r.channel.Close()
	r.ctx.Close()
	r.buf.Close()
}
