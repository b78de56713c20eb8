// Package cmtime is cmtime, in two generations, on goverbs' pure-Go rdma_cm.
//
// Without -C it is rdmacm-utils 44's cmtime: the client (-s server) times each rdma_cm step (create id,
// bind, resolve address, resolve route, create QP, connect, disconnect, destroy) over -c connections and
// prints the C tool's table; the server accepts and disconnects connections until it is stopped. Same
// options, messages and exit status as that C tool; the numbers differ by nature.
//
// With -C controller_address it is rdma-core 65's rewritten cmtime (cmtime65.go): every instance names the
// controller; the one that can bind that address (and the OOB port, -p, 7471 by default) is the OOB root
// and synchronizes the -P peers over TCP with 65's wire protocol (oob65.go), so goverbs' and the C tool's
// instances can be each other's controller or peer. Listeners (-L) accept -c connections per client peer,
// clients connect -c per listener; after a warmup round the table of 17 steps is printed, and with two
// peers a second round without QPs (-q base QPN) follows. -m mimics the QP verbs with a delay and uses
// QP numbers from -q instead of hardware QPs; -S is the plain TCP socket baseline.
//
// Which cmtime runs, and so which usage text a bad option prints, is decided by the options: arguments that
// 65's getopt parses with -C or another option only 65 has (-B -L -m -n -P -q -S) among them run 65's tool
// (its usage on every error, -C and one of -b/-B required, as in C); all others (-s, -b, -c, -p, -r, -t, -h,
// unknown options) run 44's, whose usage is printed for -h and every other unknown option.
package cmtime

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cmcommon"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/getopt"
	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

const (
	stepCreateID = iota
	stepBind
	stepResolveAddr
	stepResolveRoute
	stepCreateQP
	stepConnect
	stepDisconnect
	stepDestroy
	stepCnt
)

var stepStr = [stepCnt]string{"create id", "bind addr", "resolve addr", "resolve route", "create qp", "connect",
	"disconnect", "destroy"}

var qpCap = uverbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}

type node struct {
	id      *rdmacm.ID
	times   [stepCnt][2]time.Time
	err     bool
	retries int
}

type test struct {
	stdout, stderr io.Writer
	port           string
	dst, src       string
	haveSrc        bool
	connections    int
	retries        int
	timeout        int

	ch    *rdmacm.Channel
	nodes []node

	// qpAttr is the C tool's one static init_qp_attr (see createQP).
	qpAttr rdmacm.QPInitAttr
	byID   map[*rdmacm.ID]*node
	times  [stepCnt][2]time.Time
	srcAP  netip.AddrPort
	dstAP  netip.AddrPort

	mu        sync.Mutex
	cond      *sync.Cond
	started   [stepCnt]int
	completed [stepCnt]int
	outMu     sync.Mutex
}

func (t *test) printf(format string, args ...any) {
	t.outMu.Lock()
	fmt.Fprintf(t.stdout, format, args...)
	t.outMu.Unlock()
}

func (t *test) perror(what string, err error) { cstd.Perror(t.stderr, what, err) }

// Main is cmtime's main; prog is argv[0] as the usage prints it. The server runs until the process ends.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	return MainContext(context.Background(), prog, args, stdout, stderr)
}

// MainContext is Main with a context that stops the server (the C server never returns; tests stop ours).
func MainContext(ctx context.Context, prog string, args []string, stdout, stderr io.Writer) int {
	if wants65(prog, args) {
		return main65(ctx, prog, args, stdout, stderr)
	}
	t := &test{stdout: stdout, stderr: stderr, port: "7471", connections: 100, retries: 2, timeout: 2000}
	t.cond = sync.NewCond(&t.mu)
	p := getopt.New(prog, args, "s:b:c:p:r:t:", nil, stderr, false)
	for o := range p.All() {
		switch o.Val {
		case 's':
			t.dst = o.Arg
		case 'b':
			t.src, t.haveSrc = o.Arg, true
		case 'c':
			t.connections = int(cstd.Atoi(o.Arg))
		case 'p':
			t.port = o.Arg
		case 'r':
			t.retries = int(cstd.Atoi(o.Arg))
		case 't':
			t.timeout = int(cstd.Atoi(o.Arg))
		default:
			fmt.Fprintf(stdout, "usage: %s\n", prog)
			for _, l := range []string{"[-s server_address]", "[-b bind_address]", "[-c connections]",
				"[-p port_number]", "[-r retries]", "[-t timeout_ms]"} {
				fmt.Fprintf(stdout, "\t%s\n", l)
			}
			return 1
		}
	}
	ch, err := cmcommon.CreateFirstEventChannel(stderr)
	if err != nil {
		return 1
	}
	t.ch = ch
	var ret int
	if t.dst != "" {
		t.allocNodes()
		ret = t.runClient()
	} else {
		ret = t.runServer(ctx)
	}
	t.cleanupNodes()
	ch.Close()
	t.showPerf()
	return ret & 0xff
}

func (t *test) allocNodes() {
	t.nodes = make([]node, max(t.connections, 0))
	t.byID = map[*rdmacm.ID]*node{}
	t.printf("creating id\n")
	t.times[stepCreateID][0] = time.Now()
	for i := range t.nodes {
		n := &t.nodes[i]
		n.times[stepCreateID][0] = time.Now()
		id, err := t.ch.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
		if err != nil {
			for j := 0; j < i; j++ {
				t.nodes[j].id.Close()
				t.nodes[j].id = nil
			}
			t.nodes = nil
			return
		}
		n.id = id
		t.byID[id] = n
		n.times[stepCreateID][1] = time.Now()
	}
	t.times[stepCreateID][1] = time.Now()
}

func (t *test) cleanupNodes() {
	t.printf("destroying id\n")
	t.times[stepDestroy][0] = time.Now()
	for i := range t.nodes {
		n := &t.nodes[i]
		n.times[stepDestroy][0] = time.Now()
		if n.id != nil {
			n.id.Close()
			n.id = nil
		}
		n.times[stepDestroy][1] = time.Now()
	}
	t.times[stepDestroy][1] = time.Now()
}

// diffUS is the C tool's float microseconds between two gettimeofday values.
func diffUS(end, start time.Time) float32 {
	return float32(float64(end.UnixMicro() - start.UnixMicro()))
}

func (t *test) showPerf() {
	var maxs, mins [stepCnt]float32
	for i := 0; i < stepCnt; i++ {
		maxs[i], mins[i] = 0, 999999999.
		for c := range t.nodes {
			tm := &t.nodes[c].times[i]
			if !tm[0].IsZero() && !tm[1].IsZero() {
				us := diffUS(tm[1], tm[0])
				if us > maxs[i] {
					maxs[i] = us
				}
				if us < mins[i] {
					mins[i] = us
				}
			}
		}
	}
	t.printf("step              total ms     max ms     min us  us / conn\n")
	for i := 0; i < stepCnt; i++ {
		if i == stepBind && !t.haveSrc {
			continue
		}
		us := diffUS(t.times[i][1], t.times[i][0])
		t.printf("%-13s: %11.2f%11.2f%11.2f%11.2f\n", stepStr[i], float64(us/1000.), float64(maxs[i]/1000.),
			float64(mins[i]), float64(us/float32(t.connections)))
	}
}

func (t *test) complete(n *node, step int) {
	t.mu.Lock()
	n.times[step][1] = time.Now()
	t.completed[step]++
	t.mu.Unlock()
	t.cond.Broadcast()
}

func (t *test) failed(n *node) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return n.err
}

func (t *test) markErr(n *node) {
	t.mu.Lock()
	n.err = true
	t.mu.Unlock()
}

func (t *test) start(step int) {
	t.mu.Lock()
	t.started[step]++
	t.mu.Unlock()
}

func (t *test) waitStep(step int) {
	t.mu.Lock()
	for t.started[step] != t.completed[step] {
		t.cond.Wait()
	}
	t.mu.Unlock()
}

// retry is what an ADDR_ERROR or ROUTE_ERROR event does to n: while it has retries left, the step starts again;
// when none is left or the new start fails, the event is printed and the node's step ends failed.
func (t *test) retry(n *node, step int, event string, status int32, again func() error) {
	if n.retries != 0 {
		n.retries--
		if again() == nil {
			return
		}
	} else {
		n.retries--
	}
	t.printf("%s, error: %d\n", event, status)
	t.markErr(n)
	t.complete(n, step)
}

func (t *test) clientEvent(ev *rdmacm.Event) {
	n := t.byID[ev.ID]
	if n == nil {
		return
	}
	timeout := time.Duration(t.timeout) * time.Millisecond
	switch ev.Type {
	case rdmacm.EventAddrResolved:
		t.complete(n, stepResolveAddr)
	case rdmacm.EventRouteResolved:
		t.complete(n, stepResolveRoute)
	case rdmacm.EventEstablished:
		t.complete(n, stepConnect)
	case rdmacm.EventAddrError:
		t.retry(n, stepResolveAddr, "RDMA_CM_EVENT_ADDR_ERROR", ev.Status, func() error {
			return n.id.ResolveAddr(t.srcAP, t.dstAP, timeout)
		})
	case rdmacm.EventRouteError:
		t.retry(n, stepResolveRoute, "RDMA_CM_EVENT_ROUTE_ERROR", ev.Status, func() error {
			return n.id.ResolveRoute(timeout)
		})
	case rdmacm.EventConnectError, rdmacm.EventUnreachable, rdmacm.EventRejected:
		t.printf("event: %s, error: %d\n", ev.Type, ev.Status)
		t.markErr(n)
		t.complete(n, stepConnect)
	case rdmacm.EventDisconnected:
		t.complete(n, stepDisconnect)
	}
}

func (t *test) runClient() int {
	src := netip.AddrPort{}
	if t.haveSrc {
		a, msg, code := cmcommon.RdmaGetaddrinfo(t.src, "", true)
		if msg != "" {
			t.printf("getaddrinfo error: %s\n", msg)
			return code
		}
		src = netip.AddrPortFrom(a.Addr(), 0)
	}
	dst, msg, code := cmcommon.RdmaGetaddrinfo(t.dst, t.port, false)
	if msg != "" {
		t.printf("getaddrinfo error: %s\n", msg)
		return code
	}
	t.srcAP, t.dstAP = src, dst
	param := &rdmacm.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: uint8(t.retries)}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ev, err := t.ch.GetEvent(ctx)
			if err != nil {
				if ctx.Err() == nil {
					t.perror("failure in rdma_get_cm_event in process_server_events", err)
				}
				return
			}
			t.clientEvent(ev)
		}
	}()
	defer func() { cancel(); <-done }()

	ret := 0
	timeout := time.Duration(t.timeout) * time.Millisecond
	if t.haveSrc {
		ret = t.step(stepBind, false, "binding source address\n", "failure bind addr", ret, func(n *node) error {
			return n.id.Bind(src)
		})
	}
	ret = t.step(stepResolveAddr, true, "resolving address\n", "failure getting addr", ret, func(n *node) error {
		n.retries = t.retries
		return n.id.ResolveAddr(src, dst, timeout)
	})
	ret = t.step(stepResolveRoute, true, "resolving route\n", "failure resolving route", ret, func(n *node) error {
		n.retries = t.retries
		return n.id.ResolveRoute(timeout)
	})
	ret = t.step(stepCreateQP, false, "creating qp\n", "failure creating qp", ret, func(n *node) error {
		return t.createQP(n.id)
	})
	ret = t.step(stepConnect, true, "connecting\n", "failure rconnecting", ret, func(n *node) error {
		return n.id.Connect(param)
	})
	t.step(stepDisconnect, true, "disconnecting\n", "", ret, func(n *node) error {
		n.id.Disconnect()
		n.id.DestroyQP()
		return nil
	})
	return ret
}

// createQP is rdma_create_qp(id, NULL, &init_qp_attr) as the C tool calls it, with one static
// init_qp_attr for every QP: librdmacm writes the CQs it made for the first QP back into it, so every
// later QP of the process (client and server alike) is created on the first one's CQs. The Go tool does
// the same, so that both do the same work per connection (cmtime's numbers are compared with C's). Where
// the C tool would go on with CQs already destroyed (the first connection gone with no other QP on its
// CQs), the Go tool makes new ones instead.
func (t *test) createQP(id *rdmacm.ID) error {
	if t.qpAttr.Cap == (uverbs.QPCap{}) {
		t.qpAttr.Cap = qpCap
	}
	_, err := id.CreateQP(t.qpAttr)
	if err != nil && t.qpAttr.SendCQ != nil {
		t.qpAttr.SendCQ, t.qpAttr.RecvCQ = nil, nil
		_, err = id.CreateQP(t.qpAttr)
	}
	if err != nil {
		return err
	}
	if t.qpAttr.SendCQ == nil {
		t.qpAttr.SendCQ, t.qpAttr.RecvCQ = id.SendCQ(), id.RecvCQ()
	}
	return nil
}

// step is one of the client's timed steps, taken on each node not failed yet. A step that an event completes
// (async: resolve addr, resolve route, connect, disconnect) is then waited for until every started node's event
// came; one that its call completes (bind, create qp) ends with the call. ret is the status so far, which each
// node's call sets: -1 (reported, and the node failed) or 0.
func (t *test) step(step int, async bool, msg, fail string, ret int, call func(n *node) error) int {
	t.printf("%s", msg)
	t.times[step][0] = time.Now()
	for i := range t.nodes {
		n := &t.nodes[i]
		if t.failed(n) {
			continue
		}
		t.mu.Lock()
		n.times[step][0] = time.Now()
		t.mu.Unlock()
		if async {
			t.start(step)
		}
		if err := call(n); err != nil {
			if async {
				t.mu.Lock()
				t.started[step]--
				t.mu.Unlock()
			}
			ret = -1
			t.perror(fail, err)
			t.markErr(n)
			continue
		}
		ret = 0
		if !async {
			n.times[step][1] = time.Now()
		}
	}
	if async {
		t.waitStep(step)
	}
	t.times[step][1] = time.Now()
	return ret
}

// runServer accepts every connection with a QP of one WR each way and tears it down when the client
// disconnects, until ctx ends (the C server runs until it is killed).
func (t *test) runServer(ctx context.Context) int {
	listen, err := t.ch.CreateID(rdmacm.PortSpaceTCP, uverbs.QPTypeRC)
	if err != nil {
		t.perror("listen request failed", err)
		return -1
	}
	defer listen.Close()
	src, msg, code := cmcommon.RdmaGetaddrinfo(t.src, t.port, true)
	if msg != "" {
		t.printf("getrdmaaddr error: %s\n", msg)
		return code
	}
	if err := listen.Bind(src); err != nil {
		t.perror("bind address failed", err)
		return -1
	}
	if err := listen.Listen(0); err != nil {
		t.perror("failure trying to listen", err)
		return -1
	}
	children := map[*rdmacm.ID]bool{}
	defer func() {
		for id := range children {
			id.Close()
		}
	}()
	for {
		ev, err := t.ch.GetEvent(ctx)
		if err != nil {
			if ctx.Err() == nil {
				t.perror("failure in rdma_get_cm_event in process_server_events", err)
				return int(cstd.ErrnoOf(err, unix.EIO))
			}
			return 0
		}
		switch ev.Type {
		case rdmacm.EventConnectRequest:
			id := ev.ID
			children[id] = true
			if err := t.createQP(id); err != nil {
				t.perror("failure creating qp", err)
			} else if err := id.Accept(nil); err != nil {
				t.perror("failure accepting", err)
				id.DestroyQP()
			} else {
				continue
			}
			t.printf("failing connection request\n")
			id.Reject(nil)
			id.Close()
			delete(children, id)
		case rdmacm.EventDisconnected:
			if id := ev.ID; children[id] {
				id.Disconnect()
				id.DestroyQP()
				id.Close()
				delete(children, id)
			}
		}
	}
}
