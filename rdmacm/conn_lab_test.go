package rdmacm_test

import (
	"bytes"
	"github.com/goverbs/goverbs/test/interop"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// connPair is a connected pair of rdma_cm connections on the lab's device: the server with a registered
// receive buffer, the client with a registered send buffer.
type connPair struct {
	client, server *rdmacm.Conn
	smr, cmr       *uverbs.MR
}

func newConnPair(t *testing.T, port uint16) *connPair {
	t.Helper()
	ctx := testCtx(t)
	l := mustListen(t, labAddr(port), nil)
	t.Cleanup(func() { l.Close() })
	p := &connPair{}
	sbuf, cbuf := make([]byte, 4096), make([]byte, 4096)
	accepted := make(chan error, 1)
	go func() {
		req, err := l.Accept(ctx)
		if err != nil {
			accepted <- err
			return
		}
		p.server, err = req.Accept(ctx, &rdmacm.Options{Setup: func(c *rdmacm.Conn) error {
			var err error
			p.smr, err = c.PD().RegMR(sbuf, uverbs.AccessLocalWrite)
			return err
		}})
		accepted <- err
	}()
	var err error
	p.client, err = rdmacm.Dial(ctx, labAddr(port), &rdmacm.Options{Setup: func(c *rdmacm.Conn) error {
		var err error
		p.cmr, err = c.PD().RegMR(cbuf, uverbs.AccessLocalWrite)
		return err
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.client.Close()
		p.server.Close()
		p.cmr.Close()
		p.smr.Close()
	})
	return p
}

// pollOne polls cq until one completion arrives and fails the test on any error; it allocates nothing.
func pollOne(t testing.TB, cq *uverbs.CQ, wc []uverbs.WC) {
	for {
		n, err := cq.Poll(wc[:1])
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			if err := wc[0].Err(); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
}

// The data path of an rdma_cm connection is uverbs' own: one message each way allocates nothing (issue 11's
// acceptance). The round is a receive posted by the server, a send by the client, and both completions polled.
func TestLabConnDataPathAllocatesNothing(t *testing.T) {
	labtest.Require(t)
	p := newConnPair(t, 20301)
	recv := []uverbs.RecvWR{{WRID: 1, SGL: []uverbs.SGE{p.smr.SGE(0, 256)}}}
	send := []uverbs.SendWR{{WRID: 2, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{p.cmr.SGE(0, 64)}}}
	wc := make([]uverbs.WC, 1)
	round := func() {
		if _, err := p.server.QP().PostRecv(recv); err != nil {
			t.Fatal(err)
		}
		if _, err := p.client.QP().PostSend(send); err != nil {
			t.Fatal(err)
		}
		pollOne(t, p.client.SendCQ(), wc)
		pollOne(t, p.server.RecvCQ(), wc)
	}
	round() // warm up
	if n := testing.AllocsPerRun(200, round); n != 0 {
		t.Fatalf("one message over an rdma_cm connection allocates %v times", n)
	}
}

// `goverbs rdma res show cm_id` shows goverbs' ids as iproute2 shows them, and with the same fields as the ids
// of librdmacm's rping (item 8 of issue 11).
func TestLabResShowCMID(t *testing.T) {
	labtest.Require(t)
	if _, err := exec.LookPath("rping"); err != nil {
		t.Fatalf("rping is needed (apt-get install rdmacm-utils): %v", err)
	}
	newConnPair(t, 20302)
	// A librdmacm listener beside ours.
	c := exec.Command("rping", "-s", "-a", labIP.String(), "-p", "20303")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	var lines []string
	for deadline := 0; deadline < 500; deadline++ {
		out, err := exec.Command("rdma", "res", "show", "cm_id").Output()
		if err != nil {
			t.Fatal(err)
		}
		lines = strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(grep(lines, ":20303")) > 0 && len(grep(lines, ":20302")) >= 3 {
			break
		}
		time.Sleep(20 * time.Millisecond) // rping's listener appears asynchronously; bounded poll
	}
	var ours, oursErr bytes.Buffer
	show := exec.Command(interop.Binary(t), "rdma", "res", "show", "cm_id")
	show.Stdout, show.Stderr = &ours, &oursErr
	if err := show.Run(); err != nil {
		t.Fatalf("goverbs rdma res show cm_id: %v: %s", err, oursErr.String())
	}
	want, err := exec.Command("rdma", "res", "show", "cm_id").Output()
	if err != nil {
		t.Fatal(err)
	}
	if ours.String() != string(want) {
		t.Errorf("goverbs rdma res show cm_id:\n%s\niproute2:\n%s", ours.String(), want)
	}
	lines = strings.Split(strings.TrimSpace(string(want)), "\n")
	goListen := grep(grep(lines, ":20302"), "LISTEN")
	cListen := grep(grep(lines, ":20303"), "LISTEN")
	if len(goListen) != 1 || len(cListen) != 1 {
		t.Fatalf("listeners: goverbs %q, librdmacm %q in\n%s", goListen, cListen, want)
	}
	if g, c := fieldNames(goListen[0]), fieldNames(cListen[0]); g != c {
		t.Errorf("goverbs' listener shows fields %s, librdmacm's %s", g, c)
	}
	if conn := grep(grep(lines, ":20302"), "CONNECT"); len(conn) < 2 {
		t.Errorf("goverbs' connected ids (both ends) not shown: %q", conn)
	}
}

func grep(lines []string, s string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// fieldNames are the names of a `rdma res show` line's "name value" pairs, sorted.
func fieldNames(line string) string {
	f := strings.Fields(line)
	var names []string
	for i := 2; i+1 < len(f); i += 2 { // "link rxe0/1 cm-idn 1 lqpn 17 ..."
		names = append(names, f[i])
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
