// Package rping is rdmacm-utils 44's rping on goverbs' pure-Go rdma_cm: the
// same options, defaults, wire messages (the 16-byte {addr, rkey, size}
// advertisement), output and exit codes, so that it pairs with the C tool in
// either role.
//
// The structure follows the C program's: a CM event goroutine and the CQ
// event handler drive a state variable and a semaphore that the main flow
// waits on, so that the error messages ("wait for RDMA_READ_ADV state 10")
// come out in the same situations. rping.c's CQ thread is the main goroutine
// itself: while it waits on the semaphore it reads the completion events and
// runs the handler (see wait), which saves a hand-off between goroutines per
// completion.
package rping

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cmcommon"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// States, numbered as rping.c's enum test_state (they appear in messages).
const (
	stIdle = iota + 1
	stConnectRequest
	stAddrResolved
	stRouteResolved
	stConnected
	stRDMAReadAdv
	stRDMAReadComplete
	stRDMAWriteAdv
	stRDMAWriteComplete
	stDisconnected
	stError
)

const (
	defaultPort = 7174
	sqDepth     = 16
	bufSize     = 64 * 1024
	minBufSize  = 23 // sizeof(stringify(INT_MAX)) + sizeof("rdma-ping-%d: "): INT_MAX is not defined in rping.c
	infoSize    = 16 // struct rping_rdma_info {__be64 buf; __be32 rkey; __be32 size;}
	resolveTime = 2000 * time.Millisecond
)

type cb struct {
	stdout, stderr io.Writer
	outMu          sync.Mutex

	server     bool
	verbose    int
	validate   int
	debug      int
	selfQP     bool
	count      int
	size       int
	port       uint16
	addr, src  netip.Addr
	persistent bool

	ch    *rdmacm.Channel
	cmID  *rdmacm.ID // client: the connection; server: the listener
	child *rdmacm.ID

	mu    sync.Mutex
	state int
	sem   chan struct{}
	// fatal: the CM thread would have called exit(-1). From then on nothing prints, as the C process is gone by
	// the time its main thread would have (the outcome rdma-core's rping shows in almost every run).
	fatal atomic.Bool

	pd     *uverbs.PD
	compCh *uverbs.CompChannel
	cq     *uverbs.CQ
	qp     *uverbs.QP

	recvBuf, sendBuf, rdmaBuf, startBuf *uverbs.Buffer
	recvMR, sendMR, rdmaMR, startMR     *uverbs.MR

	// Work requests built once (rping_setup_wr); the data path allocates nothing.
	rqWR    []uverbs.RecvWR
	sqWR    []uverbs.SendWR
	rdmaWR  []uverbs.SendWR
	rdmaSGL []uverbs.SGE

	remoteRKey uint32
	remoteAddr uint64
	remoteLen  uint32

	// rping.c's CQ thread: here the main goroutine drives the CQ while it waits (see wait). cqOn belongs to
	// the main goroutine; waitCh is the channel it may be waiting on, for postCM.
	cqOn   bool
	waitCh atomic.Pointer[uverbs.CompChannel]
	wc     [1]uverbs.WC
}

func (c *cb) errf(format string, args ...any) {
	if c.fatal.Load() {
		return
	}
	c.outMu.Lock()
	fmt.Fprintf(c.stderr, format, args...)
	c.outMu.Unlock()
}

func (c *cb) outf(format string, args ...any) {
	if c.fatal.Load() {
		return
	}
	c.outMu.Lock()
	fmt.Fprintf(c.stdout, format, args...)
	c.outMu.Unlock()
}

func (c *cb) debugf(format string, args ...any) {
	if c.debug > 0 {
		c.outf(format, args...)
	}
}

// perror prints like C's perror(3).
func (c *cb) perror(what string, err error) {
	c.errf("%s: %s\n", what, cstd.Strerror(cstd.ErrnoOf(err, unix.EIO)))
}

func (c *cb) setState(s int) { c.mu.Lock(); c.state = s; c.mu.Unlock() }
func (c *cb) getState() int  { c.mu.Lock(); defer c.mu.Unlock(); return c.state }

// post wakes the main flow (sem_post) from the CQ handler, which runs in the main goroutine (see wait).
func (c *cb) post() { c.sem <- struct{}{} }

// postCM is post from the CM goroutine: it also wakes the main goroutine if it is waiting for a CQ event
// (CompChannel.Wake). The post comes first, so the woken wait finds it; a Wake that comes after the main
// goroutine stopped waiting costs its next wait one turn, never a lost post.
func (c *cb) postCM() {
	c.sem <- struct{}{}
	if ch := c.waitCh.Load(); ch != nil {
		ch.Wake() // fails only once the channel is closed: nobody waits there
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "%s -s [-vVd] [-S size] [-C count] [-a addr] [-p port]\n", "rping")
	fmt.Fprintf(w, "%s -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]\n", "rping")
	fmt.Fprintf(w, "\t-c\t\tclient side\n")
	fmt.Fprintf(w, "\t-I\t\tSource address to bind to for client.\n")
	fmt.Fprintf(w, "\t-s\t\tserver side.  To bind to any address with IPv6 use -a ::0\n")
	fmt.Fprintf(w, "\t-v\t\tdisplay ping data to stdout\n")
	fmt.Fprintf(w, "\t-V\t\tvalidate ping data\n")
	fmt.Fprintf(w, "\t-d\t\tdebug printfs\n")
	fmt.Fprintf(w, "\t-S size \tping data size\n")
	fmt.Fprintf(w, "\t-C count\tping count times\n")
	fmt.Fprintf(w, "\t-a addr\t\taddress\n")
	fmt.Fprintf(w, "\t-p port\t\tport\n")
	fmt.Fprintf(w, "\t-P\t\tpersistent server mode allowing multiple connections\n")
	fmt.Fprintf(w, "\t-q\t\tuse self-created, self-modified QP\n")
}

// getAddr resolves like getaddrinfo(dst, NULL, NULL): a numeric address or a
// host name; failures print rping's message and give EAI_NONAME (-2).
func getAddr(c *cb, s string) (netip.Addr, int) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a, 0
	}
	ips, err := net.LookupIP(s)
	if err != nil || len(ips) == 0 {
		c.outf("getaddrinfo failed (%s) - invalid hostname or IP address\n", "Name or service not known")
		return netip.Addr{}, -2
	}
	a, _ := netip.AddrFromSlice(ips[0])
	return a.Unmap(), 0
}

// Main is rping's main: prog is ignored (usage always says "rping", as rping.c
// passes that literal); the result is the exit status.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	c := &cb{stdout: stdout, stderr: stderr, state: stIdle, size: 64, port: defaultPort,
		addr: netip.IPv4Unspecified(), sem: make(chan struct{}, 1024)}
	server := -1
	ret := 0
	// opterr = 0: getopt prints nothing; every problem ends in usage().
	p := getopt.New("rping", args, "a:I:Pp:C:S:t:scvVdq", nil, io.Discard, false)
	for o := range p.All() {
		fallToC, fallToV := false, false
		switch o.Val {
		case 'a':
			c.addr, ret = getAddr(c, o.Arg)
		case 'I':
			c.src, ret = getAddr(c, o.Arg)
		case 'P':
			c.persistent = true
		case 'p':
			c.port = uint16(cstd.Atoi(o.Arg))
		case 's':
			server = 1
		case 'c':
			server = 0
		case 'S':
			c.size = int(cstd.Atoi(o.Arg))
			if c.size < minBufSize || c.size > bufSize-1 {
				c.errf("Invalid size %d (valid range is %d to %d)\n", c.size, minBufSize, bufSize)
				ret = int(unix.EINVAL)
				fallToC = true // rping.c's "else break;" falls through into case 'C'
			}
		case 'C':
			fallToC = true
		case 'v':
			c.verbose++
		case 'V':
			c.validate++
		case 'd':
			c.debug++
		case 'q':
			c.selfQP = true
		default:
			usage(stdout)
			return int(unix.EINVAL)
		}
		if fallToC {
			c.count = int(cstd.Atoi(o.Arg))
			if c.count < 0 {
				c.errf("Invalid count %d\n", c.count)
				ret = int(unix.EINVAL)
				fallToV = true
			}
		}
		if fallToV {
			c.verbose++
		}
	}
	if ret != 0 {
		return ret & 0xff
	}
	if server == -1 {
		usage(stdout)
		return int(unix.EINVAL)
	}
	c.server = server == 1

	ch, err := cmcommon.CreateFirstEventChannel(c.stderr) // no other goroutine writes yet
	if err != nil {
		return int(cstd.ErrnoOf(err, unix.EIO))
	}
	c.ch = ch
	c.cmID, err = ch.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	if err != nil {
		c.perror("rdma_create_id", err)
		ch.Close()
		return 255
	}
	cmCtx, stopCM := context.WithCancel(context.Background())
	cmDone := make(chan struct{})
	go c.cmThread(cmCtx, cmDone)

	switch {
	case c.server && c.persistent:
		ret = c.runPersistentServer()
	case c.server:
		ret = c.runServer()
	default:
		ret = c.runClient()
	}
	stopCM()
	<-cmDone
	c.cmID.Close()
	ch.Close()
	if c.fatal.Load() {
		return 255 // the C CM thread's exit(-1)
	}
	return ret & 0xff
}

func (c *cb) cmThread(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		ev, err := c.ch.GetEvent(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.perror("rdma_get_cm_event", err)
				c.exitFromCM()
			}
			return
		}
		if c.eventHandler(ev) != 0 {
			return
		}
	}
}

func (c *cb) eventHandler(ev *rdmacm.Event) int {
	c.debugf("cma_event type %s\n", ev.Type)
	switch ev.Type {
	case rdmacm.EventAddrResolved:
		c.setState(stAddrResolved)
		if err := ev.ID.ResolveRoute(resolveTime); err != nil {
			c.setState(stError)
			c.perror("rdma_resolve_route", err)
			return c.exitFromCM()
		}
	case rdmacm.EventRouteResolved:
		c.setState(stRouteResolved)
		c.postCM()
	case rdmacm.EventConnectRequest:
		c.setState(stConnectRequest)
		c.mu.Lock()
		c.child = ev.ID
		c.mu.Unlock()
		c.postCM()
	case rdmacm.EventConnectResponse:
		c.setState(stConnected)
		c.postCM()
	case rdmacm.EventEstablished:
		if !c.server {
			c.setState(stConnected)
		}
		c.postCM()
	case rdmacm.EventAddrError, rdmacm.EventRouteError, rdmacm.EventConnectError, rdmacm.EventUnreachable,
		rdmacm.EventRejected:
		c.errf("cma event %s, error %d\n", ev.Type, ev.Status)
		return c.exitFromCM()
	case rdmacm.EventDisconnected:
		side := "client"
		if c.server {
			side = "server"
		}
		c.errf("%s DISCONNECT EVENT...\n", side)
		c.setState(stDisconnected)
		c.postCM()
	case rdmacm.EventDeviceRemoval:
		c.errf("cma detected device removal!!!!\n")
		c.setState(stError)
		return c.exitFromCM()
	default:
		c.errf("unhandled event: %s, ignoring\n", ev.Type)
	}
	return 0
}

// exitFromCM is the C CM thread's exit(-1): the main thread is woken to tear down, silently, and the run ends
// with status 255.
func (c *cb) exitFromCM() int {
	c.fatal.Store(true)
	c.postCM()
	return -1
}

func cstdErrno(err error) unix.Errno { return cstd.ErrnoOf(err, unix.EIO) }
