package cmtime

import (
	"context"
	"errors"
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

// optstring65 is rdma-core 65's cmtime options (-S takes an argument there, which it ignores).
const optstring65 = "B:b:C:c:Lm:n:P:p:q:r:S:t:"

// srvMaxDisconnect is how long the 65 server waits for its clients' disconnects before disconnecting the rest.
const srvMaxDisconnect = 60 * time.Second

// maxConns is the most connections a run takes (far beyond what one host's rdma_cm can hold).
const maxConns = 1 << 24

// maxPeers and maxThreads bound -P and -n likewise.
const (
	maxPeers   = 1 << 16
	maxThreads = 1 << 16
)

const (
	s65FullConnect = iota
	s65CreateID
	s65Bind
	s65ResolveAddr
	s65ResolveRoute
	s65CreateQP
	s65InitQPAttr
	s65InitQP
	s65RTRQPAttr
	s65RTRQP
	s65RTSQPAttr
	s65RTSQP
	s65Connect
	s65Establish
	s65Disconnect
	s65DestroyID
	s65DestroyQP
	s65Cnt
)

var step65Str = [s65Cnt]string{"full connect", "create id", "bind addr", "resolve addr", "resolve route",
	"create qp", "init qp attr", "init qp", "rtr qp attr", "rtr qp", "rts qp attr", "rts qp", "cm connect",
	"establish", "disconnect", "destroy id", "destroy qp"}

var usage65 = []string{
	"-B bind_interface (only one of -B or -b accepted)",
	"-b bind_address (only one of -B or -b accepted)",
	"-C controller_address",
	"[-c num_conns] connections per listener",
	"[-L] run as listening server",
	"[-m mimic_qp_delay_us]",
	"[-n num_threads]",
	"[-P num_peers] total number of peers",
	"[-p oob_port]",
	"[-q base_qpn]",
	"[-r retries]",
	"[-S] run socket baseline test, 2 peers only",
	"[-t timeout_ms]",
}

// wants65 says whether args, parsed as 65's getopt would, name a controller (-C) or any other option that only
// 65's cmtime has (-B -L -m -n -P -q -S): then cmtime is rdma-core 65's (which insists on -C and -b/-B).
func wants65(prog string, args []string) bool {
	p := getopt.New(prog, args, optstring65, nil, io.Discard, false)
	for o := range p.All() {
		switch o.Val {
		case 'C', 'B', 'L', 'm', 'n', 'P', 'q', 'S':
			return true
		}
	}
	return false
}

// gettimeUS is common.h's gettime_us: CLOCK_MONOTONIC in microseconds.
func gettimeUS() uint64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Sec)*1000000 + uint64(ts.Nsec)/1000
}

// sleepUS is common.h's sleep_us: nanosleep of us*1000 ns computed in 32 bits; a value of a second or more
// is refused by nanosleep (EINVAL), so it does not sleep at all.
func sleepUS(ctx context.Context, us uint32) {
	ns := us * 1000
	if us == 0 || ns >= 1000000000 {
		return
	}
	tm := time.NewTimer(time.Duration(ns))
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

type conn65 struct {
	id                 *rdmacm.ID
	peerID             uint32
	qp                 *uverbs.QP
	sock               int
	times              [s65Cnt][2]uint64
	retries            int
	serverDisconnected bool
}

// workQueue is common.c's work queue: items run in insertion order on n goroutines.
type workQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	items   []func()
	running bool
	wg      sync.WaitGroup
}

func newWorkQueue(n int) *workQueue {
	q := &workQueue{running: true}
	q.cond = sync.NewCond(&q.mu)
	for range n {
		q.wg.Add(1)
		go q.worker()
	}
	return q
}

func (q *workQueue) worker() {
	defer q.wg.Done()
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		for q.running && len(q.items) == 0 {
			q.cond.Wait()
		}
		if !q.running {
			return
		}
		f := q.items[0]
		q.items = q.items[1:]
		q.mu.Unlock()
		f()
		q.mu.Lock()
	}
}

func (q *workQueue) insert(f func()) {
	q.mu.Lock()
	q.items = append(q.items, f)
	q.mu.Unlock()
	q.cond.Signal()
}

// stop ends the workers once their current items return (wq_cleanup).
func (q *workQueue) stop() {
	q.mu.Lock()
	q.running = false
	q.items = nil
	q.mu.Unlock()
	q.cond.Broadcast()
	q.wg.Wait()
}

type t65 struct {
	stdout, stderr io.Writer
	outMu          sync.Mutex

	oobPort    string
	ctrlAddr   string
	srcAddr    string
	haveSrc    bool
	timeout    int
	retries    int
	baseQPN    uint32
	curQPN     atomic.Uint32
	mimicDelay uint32
	mimic      bool
	listen     bool
	numPeers   uint32
	numConns   uint32
	numThreads int
	socktest   bool

	numListeners uint32
	peers        []peerInfo

	ctx    context.Context
	cancel context.CancelFunc
	dead   atomic.Bool

	ch    *rdmacm.Channel
	srcAP netip.AddrPort
	wq    *workQueue

	mu        sync.Mutex
	conns     []conn65
	byID      map[*rdmacm.ID]*conn65
	connIndex int

	times      [s65Cnt][2]uint64
	completed  [s65Cnt]atomic.Int32
	discEvents atomic.Int32
	kick       chan struct{}

	qpMu sync.Mutex
	pd   *uverbs.PD
	cq   *uverbs.CQ

	isRoot bool
	root   []net.Conn
	up     net.Conn
}

func (t *t65) printf(format string, args ...any) {
	t.outMu.Lock()
	fmt.Fprintf(t.stdout, format, args...)
	t.outMu.Unlock()
}

func (t *t65) eprintf(format string, args ...any) {
	t.outMu.Lock()
	fmt.Fprintf(t.stderr, format, args...)
	t.outMu.Unlock()
}

func (t *t65) perror(what string, err error) {
	t.outMu.Lock()
	cstd.Perror(t.stderr, what, err)
	t.outMu.Unlock()
}

// die is the C tool's exit(EXIT_FAILURE) from any thread: everything waiting stops, main returns 1.
func (t *t65) die() {
	t.dead.Store(true)
	t.cancel()
}

func (t *t65) startTime(s int) { t.times[s][0] = gettimeUS() }
func (t *t65) endTime(s int)   { t.times[s][1] = gettimeUS() }

func (t *t65) complete(s int) int32 {
	n := t.completed[s].Add(1)
	select {
	case t.kick <- struct{}{}:
	default:
	}
	return n - 1
}

// waitFor waits until n of step s completed (the C tool's sched_yield loops); false when the run ends.
// tick, when not nil, runs every period while waiting.
func (t *t65) waitFor(s int, n uint32, period time.Duration, tick func()) bool {
	var tc <-chan time.Time
	if tick != nil {
		tm := time.NewTicker(period)
		defer tm.Stop()
		tc = tm.C
	}
	for uint32(t.completed[s].Load()) < n {
		select {
		case <-t.ctx.Done():
			return false
		case <-t.kick:
		case <-tc:
			tick()
		}
	}
	return t.ctx.Err() == nil
}

// main65 is rdma-core 65's cmtime (see the package doc).
func main65(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	t := &t65{stdout: stdout, stderr: stderr, oobPort: "7471", timeout: 2000, retries: 2, baseQPN: 1000,
		numPeers: 2, numConns: 100, numThreads: 1, kick: make(chan struct{}, 1), byID: map[*rdmacm.ID]*conn65{}}
	usage := func() int {
		t.printf("usage: %s\n", prog)
		for _, l := range usage65 {
			t.printf("\t%s\n", l)
		}
		return 1
	}
	var ctrl bool
	p := getopt.New(prog, args, optstring65, nil, stderr, false)
	for o := range p.All() {
		switch o.Val {
		case 'B':
			if t.haveSrc {
				return usage()
			}
			a, ok := t.ifaceAddr(o.Arg)
			if !ok {
				return 1
			}
			t.srcAddr, t.haveSrc = a, true
		case 'b':
			if t.haveSrc {
				return usage()
			}
			t.srcAddr, t.haveSrc = o.Arg, true
		case 'C':
			t.ctrlAddr, ctrl = o.Arg, true
		case 'c':
			t.numConns = uint32(cstd.Atoi(o.Arg))
		case 'L':
			t.listen = true
		case 'm':
			t.mimicDelay, t.mimic = uint32(cstd.Atoi(o.Arg)), true
		case 'n':
			t.numThreads = int(cstd.Atoi(o.Arg))
		case 'P':
			t.numPeers = uint32(cstd.Atoi(o.Arg))
			if t.numPeers < 2 {
				return usage()
			}
		case 'p':
			t.oobPort = o.Arg
		case 'q':
			t.baseQPN = uint32(cstd.Atoi(o.Arg))
		case 'r':
			t.retries = int(cstd.Atoi(o.Arg))
		case 'S':
			t.socktest = true
			t.curQPN.Store(1)
		case 't':
			t.timeout = int(cstd.Atoi(o.Arg))
		default:
			return usage()
		}
	}
	if !t.haveSrc || !ctrl || (t.socktest && t.numPeers > 2) {
		return usage()
	}
	t.ctx, t.cancel = context.WithCancel(ctx)
	defer t.cancel()

	// librdmacm's rdma_getaddrinfo first looks for RDMA devices (ucma_init).
	if devs, err := uverbs.Devices(); err != nil || len(devs) == 0 {
		t.perror("rdma_getaddrinfo", unix.ENODEV)
		return 1
	}
	src, msg, _ := cmcommon.RdmaGetaddrinfo(t.srcAddr, "", true)
	if msg != "" {
		t.eprintf("rdma_getaddrinfo: %s\n", msg)
		return 1
	}
	t.srcAP = netip.AddrPortFrom(src.Addr(), 0)

	ch, err := cmcommon.CreateFirstEventChannel(stderr)
	if err != nil {
		t.perror("create_event_channel", err)
		return 1
	}
	t.ch = ch
	evDone := make(chan struct{})
	go t.processEvents(evDone)
	defer func() {
		t.cancel()
		<-evDone
		t.releaseVerbs()
		ch.Close()
	}()

	// C's callocs fail for these (a silent exit), and pthread_create for too many threads.
	if t.numThreads < 0 || t.numPeers > maxPeers {
		return 1
	}
	if t.numThreads > maxThreads {
		t.perror("pthread_create", unix.EAGAIN)
		return 1
	}
	t.wq = newWorkQueue(t.numThreads)
	defer t.wq.stop()
	t.peers = make([]peerInfo, t.numPeers)

	if !t.setupOOB() {
		return 1
	}
	defer t.cleanupOOB()
	stop := context.AfterFunc(t.ctx, t.cleanupOOB)
	defer stop()

	var ok bool
	switch {
	case !t.listen && t.socktest:
		ok = t.sockClient()
	case !t.listen:
		ok = t.runClient()
	case t.socktest:
		ok = t.sockServer()
	default:
		ok = t.runServer()
	}
	if !ok || t.dead.Load() || ctx.Err() != nil {
		return 1
	}
	return 0
}

// ifaceAddr is get_src_addr: the interface's first IPv4 or IPv6 address, as text.
func (t *t65) ifaceAddr(name string) (string, bool) {
	var ip string
	if ifi, err := net.InterfaceByName(name); err == nil {
		addrs, _ := ifi.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if v4 := n.IP.To4(); v4 != nil {
					ip = v4.String()
				} else {
					ip = n.IP.String()
				}
				break
			}
		}
	}
	if ip == "" {
		t.eprintf("Failed to find IP address for interface: %s\n", name)
		return "", false
	}
	t.printf("Picking source address %s for interface %s\n", ip, name)
	return ip, true
}

func (t *t65) processEvents(done chan struct{}) {
	defer close(done)
	for {
		ev, err := t.ch.GetEvent(t.ctx)
		if err != nil {
			if t.ctx.Err() == nil {
				t.perror("rdma_get_cm_event", err)
				t.die()
			}
			return
		}
		t.cmaHandler(ev)
	}
}

func (t *t65) connOf(id *rdmacm.ID) *conn65 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

func (t *t65) cmaHandler(ev *rdmacm.Event) {
	c := t.connOf(ev.ID)
	timeout := time.Duration(t.timeout) * time.Millisecond
	if c == nil && ev.Type != rdmacm.EventConnectRequest && ev.Type != rdmacm.EventTimewaitExit {
		if ev.Type == rdmacm.EventDisconnected && !t.listen {
			return
		}
		// An event of an id this run no longer tracks (destroyed since): nothing of C's tool is left to see it.
		return
	}
	switch ev.Type {
	case rdmacm.EventAddrResolved:
		c.times[s65ResolveAddr][1] = gettimeUS()
		t.complete(s65ResolveAddr)
	case rdmacm.EventRouteResolved:
		c.times[s65ResolveRoute][1] = gettimeUS()
		t.complete(s65ResolveRoute)
	case rdmacm.EventConnectRequest:
		t.mu.Lock()
		if t.connIndex == 0 {
			t.printf("\tAccepting\n")
			t.startTime(s65Connect)
		}
		if t.connIndex >= len(t.conns) {
			t.mu.Unlock()
			t.printf("Unexpected connect request %d\n", t.connIndex+1)
			ev.ID.Reject(nil)
			ev.ID.Close()
			t.die()
			return
		}
		c = &t.conns[t.connIndex]
		t.connIndex++
		c.id = ev.ID
		c.serverDisconnected = false
		t.byID[ev.ID] = c
		t.mu.Unlock()
		t.wq.insert(func() { t.reqHandler(c) })
	case rdmacm.EventConnectResponse:
		t.wq.insert(func() { t.connectResponse(c) })
	case rdmacm.EventEstablished:
		// Only this goroutine counts ESTABLISHED: the last one's end time is taken before it is counted, so
		// that the waiting main goroutine sees it (C takes it just after).
		if uint32(t.completed[s65Connect].Load()) >= t.numConns-1 {
			t.endTime(s65Connect)
		}
		t.complete(s65Connect)
	case rdmacm.EventAddrError:
		if c.retries != 0 {
			c.retries--
			// The C tool retries towards rai->ai_dst_addr, which its passive lookup leaves NULL.
			if c.id.ResolveAddr(t.srcAP, netip.AddrPort{}, timeout) == nil {
				return
			}
		}
		t.printf("RDMA_CM_EVENT_ADDR_ERROR, error: %d\n", ev.Status)
		t.die()
	case rdmacm.EventRouteError:
		if c.retries != 0 {
			c.retries--
			if c.id.ResolveRoute(timeout) == nil {
				return
			}
		}
		t.printf("RDMA_CM_EVENT_ROUTE_ERROR, error: %d\n", ev.Status)
		t.die()
	case rdmacm.EventConnectError, rdmacm.EventUnreachable, rdmacm.EventRejected:
		t.printf("event: %s, error: %d\n", ev.Type, ev.Status)
		t.die()
	case rdmacm.EventDisconnected:
		if t.listen {
			if t.discEvents.Add(1) == 1 {
				t.printf("\tDisconnecting\n")
				t.startTime(s65Disconnect)
			}
			t.wq.insert(func() { t.serverDisconnect(c) })
		}
	case rdmacm.EventTimewaitExit:
	default:
		t.printf("Unhandled event: %d (%s)\n", ev.Type, ev.Type)
		t.die()
	}
}

// openVerbs allocates the PD and the one-entry CQ every real QP uses, once per run.
func (t *t65) openVerbs(id *rdmacm.ID) bool {
	t.printf("\tAllocating verbs resources\n")
	ctx, _, err := id.Device()
	if err != nil {
		t.perror("ibv_alloc_pd", err)
		return false
	}
	if t.pd, err = ctx.AllocPD(); err != nil {
		t.pd = nil
		t.perror("ibv_alloc_pd", err)
		return false
	}
	if t.cq, err = ctx.CreateCQ(uverbs.CQAttr{CQE: 1}); err != nil {
		t.cq = nil
		t.perror("ibv_create_cq", err)
		return false
	}
	return true
}

func (t *t65) releaseVerbs() {
	if t.cq != nil {
		t.cq.Close()
		t.cq = nil
	}
	if t.pd != nil {
		t.pd.Close()
		t.pd = nil
	}
}

func (t *t65) createQP(c *conn65) bool {
	t.qpMu.Lock()
	if t.pd == nil && !t.openVerbs(c.id) {
		t.qpMu.Unlock()
		t.die()
		return false
	}
	t.qpMu.Unlock()
	c.times[s65CreateQP][0] = gettimeUS()
	if t.curQPN.Load() == 0 {
		qp, err := t.pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: t.cq, RecvCQ: t.cq, SigAll: true,
			Cap: uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.perror("ibv_create_qp", err)
			t.die()
			return false
		}
		c.qp = qp
	} else {
		sleepUS(t.ctx, t.mimicDelay)
	}
	c.times[s65CreateQP][1] = gettimeUS()
	t.complete(s65CreateQP)
	return true
}

// modifyQP is rdma_init_qp_attr (timed as attrStep) and the modify (or the mimic delay, timed as attrStep+1).
func (t *t65) modifyQP(c *conn65, state uverbs.QPState, attrStep int) bool {
	c.times[attrStep][0] = gettimeUS()
	attr, mask, err := c.id.InitQPAttr(state)
	if err != nil {
		t.perror("rdma_init_qp_attr", err)
		t.die()
		return false
	}
	c.times[attrStep][1] = gettimeUS()
	attrStep++
	c.times[attrStep][0] = gettimeUS()
	if c.qp != nil {
		if err := c.qp.Modify(*attr, mask); err != nil {
			t.perror("ibv_modify_qp", err)
			t.die()
			return false
		}
	} else {
		sleepUS(t.ctx, t.mimicDelay)
	}
	c.times[attrStep][1] = gettimeUS()
	t.complete(attrStep)
	return true
}

func (t *t65) connParam(c *conn65) *rdmacm.ConnParam {
	p := &rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1}
	if c.qp != nil {
		p.QPNum = c.qp.QPN()
	} else {
		p.QPNum = t.curQPN.Add(1) - 1
	}
	return p
}

func (t *t65) reqHandler(c *conn65) {
	if t.ctx.Err() != nil {
		return
	}
	if !t.createQP(c) || !t.modifyQP(c, uverbs.QPStateInit, s65InitQPAttr) ||
		!t.modifyQP(c, uverbs.QPStateRTR, s65RTRQPAttr) || !t.modifyQP(c, uverbs.QPStateRTS, s65RTSQPAttr) {
		return
	}
	if err := c.id.Accept(t.connParam(c)); err != nil {
		t.perror("failure accepting", err)
		t.die()
	}
}

func (t *t65) connectResponse(c *conn65) {
	if t.ctx.Err() != nil {
		return
	}
	if !t.modifyQP(c, uverbs.QPStateRTR, s65RTRQPAttr) || !t.modifyQP(c, uverbs.QPStateRTS, s65RTSQPAttr) {
		return
	}
	c.times[s65Establish][0] = gettimeUS()
	c.id.Establish()
	c.times[s65Establish][1] = gettimeUS()
	c.times[s65Connect][1] = gettimeUS()
	c.times[s65FullConnect][1] = gettimeUS()
	t.complete(s65Connect)
}

func (t *t65) serverDisconnect(c *conn65) {
	if t.ctx.Err() != nil {
		return
	}
	t.mu.Lock()
	c.serverDisconnected = true
	t.mu.Unlock()
	c.times[s65Disconnect][0] = gettimeUS()
	if c.id != nil {
		c.id.Disconnect()
	}
	c.times[s65Disconnect][1] = gettimeUS()
	t.mu.Lock() // with -n above 1, workers take this end time at once
	if uint32(t.discEvents.Load()) >= t.numConns {
		t.endTime(s65Disconnect)
	}
	t.mu.Unlock()
	t.complete(s65Disconnect)
}

// resetTest starts a round: fresh connection records, counters, and the sync on 0.
func (t *t65) resetTest() bool {
	t.mu.Lock()
	t.connIndex = 0
	t.conns = make([]conn65, t.numConns)
	clear(t.byID)
	// The event goroutine takes the first CONNECT_REQUEST's time under mu.
	t.times = [s65Cnt][2]uint64{}
	t.mu.Unlock()
	t.discEvents.Store(0)
	if !t.listen {
		t.assignListeners()
	}
	for i := range t.completed {
		t.completed[i].Store(0)
	}
	return t.sync(0)
}

func (t *t65) assignListeners() {
	p := uint32(0)
	for i := range t.conns {
		for t.peers[p].Role != roleListen {
			if p++; p >= t.numPeers {
				p = 0
			}
		}
		t.conns[i].peerID = p
		if p++; p >= t.numPeers {
			p = 0
		}
	}
}

func (t *t65) createIDs() bool {
	t.printf("\tCreating IDs\n")
	t.startTime(s65CreateID)
	for i := range t.conns {
		c := &t.conns[i]
		c.times[s65FullConnect][0] = gettimeUS()
		c.times[s65CreateID][0] = gettimeUS()
		id, err := t.ch.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
		if err != nil {
			t.perror("rdma_create_id", err)
			return false
		}
		t.mu.Lock()
		c.id = id
		t.byID[id] = c
		t.mu.Unlock()
		c.times[s65CreateID][1] = gettimeUS()
	}
	t.endTime(s65CreateID)
	return true
}

func (t *t65) destroyQPs() {
	t.startTime(s65DestroyQP)
	for i := range t.conns {
		c := &t.conns[i]
		c.times[s65DestroyQP][0] = gettimeUS()
		if c.qp != nil {
			c.qp.Close()
			c.qp = nil
		}
		c.times[s65DestroyQP][1] = gettimeUS()
	}
	t.endTime(s65DestroyQP)
}

func (t *t65) destroyIDs() {
	t.startTime(s65DestroyID)
	for i := range t.conns {
		c := &t.conns[i]
		c.times[s65DestroyID][0] = gettimeUS()
		if c.id != nil {
			t.mu.Lock()
			delete(t.byID, c.id)
			t.mu.Unlock()
			c.id.Close()
			c.id = nil
		}
		c.times[s65DestroyID][1] = gettimeUS()
	}
	t.endTime(s65DestroyID)
}

// teardown frees what a round left when it ends early (no leaks on failure).
func (t *t65) teardown() {
	t.wq.stop()
	t.mu.Lock()
	conns := t.conns
	t.mu.Unlock()
	for i := range conns {
		if conns[i].qp != nil {
			conns[i].qp.Close()
			conns[i].qp = nil
		}
		if conns[i].id != nil {
			conns[i].id.Close()
			conns[i].id = nil
		}
	}
}

func (t *t65) clientConnect() bool {
	if !t.resetTest() {
		return false
	}
	t.startTime(s65FullConnect)
	if !t.createIDs() {
		return false
	}
	t.printf("\tBinding addresses\n")
	t.startTime(s65Bind)
	for i := range t.conns {
		c := &t.conns[i]
		c.times[s65Bind][0] = gettimeUS()
		if err := c.id.Bind(t.srcAP); err != nil {
			t.perror("rdma_bind_addr", err)
			return false
		}
		c.times[s65Bind][1] = gettimeUS()
	}
	t.endTime(s65Bind)
	n := uint32(len(t.conns))
	timeout := time.Duration(t.timeout) * time.Millisecond

	t.printf("\tResolving addresses\n")
	t.startTime(s65ResolveAddr)
	for i := range t.conns {
		c := &t.conns[i]
		t.wq.insert(func() {
			c.retries = t.retries
			c.times[s65ResolveAddr][0] = gettimeUS()
			if err := c.id.ResolveAddr(t.srcAP, t.peers[c.peerID].AddrPort(), timeout); err != nil {
				t.perror("rdma_resolve_addr", err)
				t.die()
			}
		})
	}
	if !t.waitFor(s65ResolveAddr, n, 0, nil) {
		return false
	}
	t.endTime(s65ResolveAddr)

	t.printf("\tResolving routes\n")
	t.startTime(s65ResolveRoute)
	for i := range t.conns {
		c := &t.conns[i]
		t.wq.insert(func() {
			c.retries = t.retries
			c.times[s65ResolveRoute][0] = gettimeUS()
			if err := c.id.ResolveRoute(timeout); err != nil {
				t.perror("rdma_resolve_route", err)
				t.die()
			}
		})
	}
	if !t.waitFor(s65ResolveRoute, n, 0, nil) {
		return false
	}
	t.endTime(s65ResolveRoute)

	t.printf("\tCreating QPs\n")
	t.startTime(s65CreateQP)
	for i := range t.conns {
		c := &t.conns[i]
		t.wq.insert(func() { t.createQP(c) })
	}
	if !t.waitFor(s65CreateQP, n, 0, nil) {
		return false
	}
	t.endTime(s65CreateQP)

	t.printf("\tModify QPs to INIT\n")
	t.startTime(s65InitQP)
	for i := range t.conns {
		c := &t.conns[i]
		t.wq.insert(func() { t.modifyQP(c, uverbs.QPStateInit, s65InitQPAttr) })
	}
	if !t.waitFor(s65InitQP, n, 0, nil) {
		return false
	}
	t.endTime(s65InitQP)

	if !t.sync(s65InitQP) {
		return false
	}

	t.printf("\tConnecting\n")
	t.startTime(s65Connect)
	for i := range t.conns {
		c := &t.conns[i]
		p := t.connParam(c)
		c.times[s65Connect][0] = gettimeUS()
		if err := c.id.Connect(p); err != nil {
			t.perror("rdma_connect", err)
			return false
		}
	}
	if !t.waitFor(s65Connect, n, 0, nil) {
		return false
	}
	t.endTime(s65Connect)
	t.endTime(s65FullConnect)

	if !t.sync(s65Connect) {
		return false
	}

	t.printf("\tDisconnecting\n")
	t.startTime(s65Disconnect)
	for i := range t.conns {
		c := &t.conns[i]
		t.wq.insert(func() {
			c.times[s65Disconnect][0] = gettimeUS()
			c.id.Disconnect()
			c.times[s65Disconnect][1] = gettimeUS()
			t.complete(s65Disconnect)
		})
	}
	if !t.waitFor(s65Disconnect, n, 0, nil) {
		return false
	}
	t.endTime(s65Disconnect)

	if !t.sync(s65Disconnect) {
		return false
	}
	t.printf("\tDestroying QPs\n")
	t.destroyQPs()
	t.printf("\tDestroying IDs\n")
	t.destroyIDs()
	return true
}

func (t *t65) serverConnect() bool {
	if !t.resetTest() || !t.sync(s65InitQP) {
		return false
	}
	if !t.waitFor(s65Connect, t.numConns, 0, nil) || !t.sync(s65Connect) {
		return false
	}
	timedOut := func() {
		t.eprintf("Timeout waiting for clients to disconnect (got %d/%d)\n", t.completed[s65Disconnect].Load(), t.numConns)
		t.mu.Lock()
		var left []*conn65
		for i := range t.conns {
			if !t.conns[i].serverDisconnected {
				left = append(left, &t.conns[i])
			}
		}
		t.mu.Unlock()
		for _, c := range left {
			t.wq.insert(func() { t.serverDisconnect(c) })
		}
	}
	if !t.waitFor(s65Disconnect, t.numConns, srvMaxDisconnect, timedOut) || !t.sync(s65Disconnect) {
		return false
	}
	t.destroyQPs()
	t.destroyIDs()
	return true
}

func (t *t65) setupMesh() bool {
	if t.isRoot {
		b := make([]byte, peerInfoSize)
		for i, c := range t.root {
			if _, err := io.ReadFull(c, b); err != nil {
				return false
			}
			ps, _ := decodePeers(b)
			t.peers[i+1] = ps[0]
		}
		all := encodePeers(t.peers)
		for _, c := range t.root {
			if _, err := c.Write(all); err != nil {
				return false
			}
		}
	} else {
		if _, err := t.up.Write(encodePeers(t.peers[:1])); err != nil {
			return false
		}
		b := make([]byte, peerInfoSize*int(t.numPeers))
		if _, err := io.ReadFull(t.up, b); err != nil {
			return false
		}
		t.peers, _ = decodePeers(b)
	}
	for _, p := range t.peers {
		if p.Role == roleListen {
			t.numListeners++
		}
	}
	if t.numListeners == t.numPeers {
		t.printf("cannot have all listeners\n")
		return false
	}
	if t.numListeners == 0 {
		t.printf("need at least 1 listener\n")
		return false
	}
	if !t.listen {
		t.numConns *= t.numListeners
	} else {
		t.numConns *= t.numPeers - t.numListeners
	}
	// C's calloc of the connections fails (setup_mesh's -ENOMEM, a silent exit) where Go's make would abort.
	return t.numConns <= maxConns
}

func (t *t65) runClient() bool {
	defer t.teardown()
	t.peers[0].Role = roleConnect
	if !t.setupMesh() {
		return false
	}
	return t.runRounds("Client", "Connect", t.numListeners, t.clientConnect)
}

func (t *t65) runServer() bool {
	defer t.teardown()
	listen, err := t.ch.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	if err != nil {
		t.perror("rdma_create_id", err)
		return false
	}
	defer listen.Close()
	if err := listen.Bind(t.srcAP); err != nil {
		t.perror("rdma_bind_addr", err)
		return false
	}
	if err := listen.Listen(0); err != nil {
		t.perror("rdma_listen", err)
		return false
	}
	t.peers[0] = peerInfoFor(listen.LocalAddr(), roleListen)
	if !t.setupMesh() {
		return false
	}
	return t.runRounds("Server", "Accept", t.numPeers-t.numListeners, t.serverConnect)
}

// runRounds is the C tool's sequence, the same for both roles: a warmup round of warm connections, the timed
// round (with QPs, or simulated with -m), then with two peers a round without QPs; role and verb name them in
// the output ("Client"/"Connect", "Server"/"Accept").
func (t *t65) runRounds(role, verb string, warm uint32, connect func() bool) bool {
	t.printf("%s warmup\n", role)
	save := t.numConns
	t.numConns = warm
	if !connect() {
		return false
	}
	t.numConns = save
	if !t.mimic {
		t.printf("%s (%d) QPs test\n", verb, int32(t.numConns))
	} else {
		t.printf("%s (%d) simulated QPs test (delay %d us)\n", verb, int32(t.numConns), int32(t.mimicDelay))
		t.curQPN.Store(t.baseQPN)
	}
	if !connect() || !t.showPerf() {
		return false
	}
	if t.numPeers == 2 {
		t.printf("%s (%d) test - no QPs\n", verb, int32(t.numConns))
		t.curQPN.Store(t.baseQPN)
		t.mimicDelay = 0
		if !connect() || !t.showPerf() {
			return false
		}
	}
	return true
}

// showPerf prints the table. With no connections the C tool divides by zero (SIGFPE); the Go one prints
// nothing and fails.
func (t *t65) showPerf() bool {
	n := uint64(t.numConns)
	if n == 0 {
		return false
	}
	var maxs, mins, sums [s65Cnt]uint64
	for i := range s65Cnt {
		mins[i] = 0xffffffff
		for c := range t.conns[:min(len(t.conns), int(n))] {
			tm := &t.conns[c].times[i]
			if tm[0] != 0 && tm[1] != 0 {
				d := uint64(uint32(tm[1] - tm[0]))
				sums[i] += d
				maxs[i] = max(maxs[i], d)
				mins[i] = min(mins[i], d)
			}
		}
		if mins[i] == 0xffffffff {
			mins[i] = 0
		}
	}
	sums[s65FullConnect] = 0
	if t.curQPN.Load() == 0 {
		t.printf("qp_conn        %10d\n", t.numConns)
	} else {
		t.printf("cm_conn        %10d\n", t.numConns)
	}
	t.printf("threads        %10d\n", t.numThreads)
	t.printf("step             avg/conn  total(us)    us/conn    sum(us)    max(us)    min(us)\n")
	for i := range s65Cnt {
		d := t.times[i][1] - t.times[i][0]
		t.printf("%-13s  %10d %10d %10d %10d %10d %10d\n", step65Str[i], d/n, d, sums[i]/n, sums[i], maxs[i], mins[i])
	}
	return true
}

// setupOOB is setup_oob: the instance that can bind the controller address is the OOB root and waits for the
// other peers; the others connect to it.
func (t *t65) setupOOB() bool {
	ap, msg := cmcommon.GetAddr("tcp", t.oobPort, t.ctrlAddr, false, true)
	if msg != "" {
		t.eprintf("getaddrinfo error: %s\n", msg)
		return false
	}
	lc := net.ListenConfig{}
	l, err := lc.Listen(t.ctx, "tcp", ap.String())
	if err != nil {
		if errors.Is(err, unix.EADDRNOTAVAIL) || errors.Is(err, unix.EADDRINUSE) {
			return t.leafSetup()
		}
		e := cstd.ErrnoOf(err, unix.EIO)
		t.eprintf("unexpected bind error: %s (%d)\n", cstd.Strerror(e), int(e))
		t.perror("oob_try_bind", err)
		return false
	}
	t.isRoot = true
	t.printf("Running as OOB root\n")
	stop := context.AfterFunc(t.ctx, func() { l.Close() })
	defer stop()
	defer l.Close()
	for range t.numPeers - 1 {
		c, err := l.Accept()
		if err != nil {
			return false
		}
		t.mu.Lock()
		t.root = append(t.root, c)
		t.mu.Unlock()
	}
	return true
}

func (t *t65) leafSetup() bool {
	ap, msg := cmcommon.GetAddr("tcp", t.oobPort, t.ctrlAddr, false, false)
	if msg != "" {
		t.printf("getaddrinfo error: %s\n", msg)
		return false
	}
	var d net.Dialer
	c, err := d.DialContext(t.ctx, "tcp4", ap.String())
	if err != nil {
		return false
	}
	t.mu.Lock()
	t.up = c
	t.mu.Unlock()
	return true
}

func (t *t65) cleanupOOB() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.root {
		c.Close()
	}
	if t.up != nil {
		t.up.Close()
	}
}

// sync is do_sync. The C tool ignores what its sync calls return (a wrong value goes unnoticed; a lost peer
// leaves it waiting for ever); goverbs' ignores a wrong value too but ends, failed, when a peer is gone.
func (t *t65) sync(val byte) bool {
	b := []byte{0}
	if t.isRoot {
		for _, c := range t.root {
			if _, err := io.ReadFull(c, b); err != nil {
				return t.syncLost(err)
			}
		}
		for _, c := range t.root {
			if _, err := c.Write([]byte{val}); err != nil {
				return t.syncLost(err)
			}
		}
		return true
	}
	if _, err := t.up.Write([]byte{val}); err != nil {
		return t.syncLost(err)
	}
	if _, err := io.ReadFull(t.up, b); err != nil {
		return t.syncLost(err)
	}
	return true
}

func (t *t65) syncLost(err error) bool {
	if t.ctx.Err() == nil {
		t.eprintf("oob sync: %v\n", err)
		t.die()
	}
	return false
}

// sockListen binds the baseline's listening socket on the source address and the OOB port.
func (t *t65) sockListen(backlog int) (int, bool) {
	ap, msg := cmcommon.GetAddr("tcp", t.oobPort, t.srcAddr, false, true)
	if msg != "" || !ap.Addr().Is4() {
		t.eprintf("getaddrinfo: %s\n", msg)
		return -1, false
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.perror("socket", err)
		return -1, false
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		unix.Close(fd)
		t.perror("bind", err)
		return -1, false
	}
	if err := unix.Listen(fd, backlog); err != nil {
		unix.Close(fd)
		t.perror("listen", err)
		return -1, false
	}
	return fd, true
}

// accept waits for a connection on fd, giving up when the run ends.
func (t *t65) accept(fd int) (int, error) {
	for {
		if t.ctx.Err() != nil {
			return -1, t.ctx.Err()
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 100)
		if err != nil && err != unix.EINTR {
			return -1, err
		}
		if n > 0 {
			nfd, _, err := unix.Accept4(fd, unix.SOCK_CLOEXEC)
			return nfd, err
		}
	}
}

func (t *t65) sockServer() bool {
	if t.numConns > maxConns {
		return false
	}
	t.printf("Server baseline socket setup\n")
	t.conns = make([]conn65, t.numConns)
	lfd, ok := t.sockListen(int(int32(t.numConns)))
	if !ok {
		return false
	}
	defer unix.Close(lfd)
	t.printf("Accept sockets\n")
	accepted := 0
	defer func() {
		for i := range accepted {
			if t.conns[i].sock >= 0 {
				unix.Close(t.conns[i].sock)
			}
		}
	}()
	for i := range t.conns {
		fd, err := t.accept(lfd)
		if err != nil {
			if t.ctx.Err() == nil {
				t.perror("accept", err)
			}
			return false
		}
		t.conns[i].sock = fd
		accepted++
		if i == 0 {
			t.startTime(s65FullConnect)
		}
	}
	t.endTime(s65FullConnect)
	t.printf("Closing sockets\n")
	t.startTime(s65DestroyID)
	for i := range t.conns {
		unix.Close(t.conns[i].sock)
		t.conns[i].sock = -1
	}
	t.endTime(s65DestroyID)
	t.printf("Server baseline socket results:\n")
	return t.showPerf()
}

func (t *t65) sockClient() bool {
	if t.numConns > maxConns {
		return false
	}
	t.printf("Client baseline socket setup\n")
	t.conns = make([]conn65, t.numConns)
	for i := range t.conns {
		t.conns[i].sock = -1
	}
	defer func() {
		t.wq.stop()
		for i := range t.conns {
			if t.conns[i].sock >= 0 {
				unix.Close(t.conns[i].sock)
			}
		}
	}()
	ap, msg := cmcommon.GetAddr("tcp", t.oobPort, t.ctrlAddr, false, false)
	if msg != "" {
		t.eprintf("getaddrinfo: %s\n", msg)
		return false
	}
	var sa unix.Sockaddr
	family := unix.AF_INET
	if ap.Addr().Is4() {
		sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	} else {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	n := t.numConns
	t.startTime(s65FullConnect)
	t.printf("Creating sockets\n")
	t.startTime(s65CreateID)
	for i := range t.conns {
		c := &t.conns[i]
		t.wq.insert(func() {
			c.times[s65CreateID][0] = gettimeUS()
			fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.perror("socket", err)
				t.die()
				return
			}
			c.sock = fd
			c.times[s65CreateID][1] = gettimeUS()
			t.complete(s65CreateID)
		})
	}
	if !t.waitFor(s65CreateID, n, 0, nil) {
		return false
	}
	t.endTime(s65CreateID)
	t.printf("Connecting sockets\n")
	t.startTime(s65Connect)
	for i := range t.conns {
		c := &t.conns[i]
		t.wq.insert(func() {
			c.times[s65Connect][0] = gettimeUS()
			if err := unix.Connect(c.sock, sa); err != nil {
				t.perror("connect", err)
				t.die()
				return
			}
			c.times[s65Connect][1] = gettimeUS()
			t.complete(s65Connect)
		})
	}
	if !t.waitFor(s65Connect, n, 0, nil) {
		return false
	}
	t.endTime(s65Connect)
	t.endTime(s65FullConnect)
	t.printf("Closing sockets\n")
	t.startTime(s65DestroyID)
	for i := range t.conns {
		unix.Close(t.conns[i].sock)
		t.conns[i].sock = -1
	}
	t.endTime(s65DestroyID)
	t.printf("Client baseline socket results:\n")
	return t.showPerf()
}
