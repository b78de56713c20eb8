package smoke

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

func TestLabOpenQuery(t *testing.T) {
	labtest.Require(t)
	devs, err := uverbs.Devices()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("devices: %+v", devs)
	ctx, err := uverbs.Open(labtest.Device())
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	da, err := ctx.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("device: guid %v vendor %#x maxqp %d maxcqe %d ports %d", da.NodeGUID, da.VendorID, da.MaxQP, da.MaxCQE, da.PhysPortCnt)
	pa, err := ctx.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("port: %+v", pa)
	gids, err := ctx.QueryGIDTable()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gids {
		t.Logf("gid %d: %v %v", g.Index, g.GID, g.Type)
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	buf, _ := uverbs.AllocBuffer(4096)
	mr, err := pd.RegMR(buf.Bytes(), uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	cq, err := ctx.CreateCQ(uverbs.CQAttr{CQE: 16})
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: uverbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("qp %#x cap %+v", qp.QPN(), qp.Cap())
	for _, c := range []interface{ Close() error }{qp, cq, mr, pd} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	buf.Close()
}

// TestRCLoopback is the program a new user writes: two RC QPs connected with Endpoint and Connect, one message
// sent with PostRecv/PostSend, completions read with Poll and WC.Err. Then the error contract: a post before
// RTS names the device, and every verb on a closed QP is ErrClosed.
func TestLabRCLoopback(t *testing.T) {
	labtest.Require(t)
	ctx, err := uverbs.Open(labtest.Device())
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	buf, err := uverbs.AllocBuffer(8192)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	cq, err := ctx.CreateCQ(uverbs.CQAttr{CQE: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	caps := uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}
	a, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: caps})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: caps})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	// A post before RTS fails, naming the verb and the device: rxe refuses it with EINVAL, siw's kernel (which
	// the doorbell asks) with ENOTCONN.
	want := unix.EINVAL
	if labtest.Provider() == "siw" {
		want = unix.ENOTCONN
	}
	_, err = a.PostSend([]uverbs.SendWR{{Opcode: uverbs.WRSend}})
	var verr *uverbs.Error
	if !errors.As(err, &verr) || verr.Device != ctx.Name() || verr.Op != "post send" || !errors.Is(err, want) {
		t.Fatalf("post send in RESET: %v; want a post send error on %s matching %v", err, ctx.Name(), want)
	}
	if labtest.Provider() == "siw" {
		t.Skip("the rest connects two RC QPs by hand (INIT, RTR, RTS with each other's QPN and PSN): an iWARP QP is connected only through the iWARP connection manager (rdma_cm over TCP), so siw cannot run it; test/conformance and test/siwlab run siw's data path through rdma_cm")
	}

	// Exchange endpoints (here in memory; over TCP they travel as MarshalBinary's bytes) and connect.
	epA, err := a.Endpoint(nil)
	if err != nil {
		t.Fatal(err)
	}
	epB, err := b.Endpoint(nil)
	if err != nil {
		t.Fatal(err)
	}
	wire, _ := epB.MarshalBinary()
	var gotB uverbs.Endpoint
	if err := gotB.UnmarshalBinary(wire); err != nil || gotB != epB {
		t.Fatalf("endpoint round trip: %+v, %v", gotB, err)
	}
	if err := a.Connect(gotB, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Connect(epA, nil); err != nil {
		t.Fatal(err)
	}

	mem := buf.Bytes()
	copy(mem, "hello from goverbs")
	if _, err := b.PostRecv([]uverbs.RecvWR{{WRID: 2, SGL: []uverbs.SGE{mr.SGE(4096, 1024)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PostSend([]uverbs.SendWR{{WRID: 1, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{mr.SGE(0, 18)}}}); err != nil {
		t.Fatal(err)
	}
	wcs := make([]uverbs.WC, 4)
	got := 0
	for deadline := time.Now().Add(30 * time.Second); got < 2 && time.Now().Before(deadline); {
		n, err := cq.Poll(wcs[got:])
		if err != nil {
			t.Fatal(err)
		}
		got += n
	}
	if got != 2 {
		t.Fatalf("got %d completions", got)
	}
	for _, wc := range wcs[:2] {
		if err := wc.Err(); err != nil {
			t.Fatalf("completion %+v: %v", wc, err)
		}
	}
	if string(mem[4096:4096+18]) != "hello from goverbs" {
		t.Fatalf("received %q", mem[4096:4096+18])
	}

	// After Close every verb on the QP is ErrClosed, data path included.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	_, errSend := a.PostSend([]uverbs.SendWR{{Opcode: uverbs.WRSend}})
	_, errRecv := a.PostRecv([]uverbs.RecvWR{{}})
	errModify := a.Modify(uverbs.QPAttr{State: uverbs.QPStateErr}, uverbs.QPAttrState)
	_, errEndpoint := a.Endpoint(nil)
	for name, err := range map[string]error{"PostSend": errSend, "PostRecv": errRecv, "Modify": errModify, "Endpoint": errEndpoint} {
		if !errors.Is(err, uverbs.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}
