package smoke

import (
	"testing"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

func TestOpenQuery(t *testing.T) {
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

func connectRC(t *testing.T, qp *uverbs.QP, remote uint32, gid uverbs.GID) {
	t.Helper()
	init := &uverbs.QPAttr{State: uverbs.QPStateInit, PKeyIndex: 0, PortNum: 1,
		AccessFlags: uverbs.AccessRemoteWrite | uverbs.AccessRemoteRead | uverbs.AccessLocalWrite | uverbs.AccessRemoteAtomic}
	if err := qp.Modify(init, uverbs.QPAttrState|uverbs.QPAttrPKeyIndex|uverbs.QPAttrPort|uverbs.QPAttrAccessFlags); err != nil {
		t.Fatal(err)
	}
	rtr := &uverbs.QPAttr{State: uverbs.QPStateRTR, PathMTU: uverbs.MTU1024, DestQPN: remote, RQPSN: 0,
		MaxDestRdAtomic: 1, MinRNRTimer: 12,
		AHAttr: uverbs.AHAttr{IsGlobal: true, PortNum: 1, GRH: uverbs.GlobalRoute{DGID: gid, SGIDIndex: 1, HopLimit: 1}}}
	if err := qp.Modify(rtr, uverbs.QPAttrState|uverbs.QPAttrAV|uverbs.QPAttrPathMTU|uverbs.QPAttrDestQPN|
		uverbs.QPAttrRQPSN|uverbs.QPAttrMaxDestRdAtomic|uverbs.QPAttrMinRNRTimer); err != nil {
		t.Fatal(err)
	}
	rts := &uverbs.QPAttr{State: uverbs.QPStateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: 0, MaxRdAtomic: 1}
	if err := qp.Modify(rts, uverbs.QPAttrState|uverbs.QPAttrTimeout|uverbs.QPAttrRetryCnt|uverbs.QPAttrRNRRetry|
		uverbs.QPAttrSQPSN|uverbs.QPAttrMaxQPRdAtomic); err != nil {
		t.Fatal(err)
	}
}

func TestRCLoopback(t *testing.T) {
	labtest.Require(t)
	ctx, err := uverbs.Open(labtest.Device())
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	gid, err := ctx.QueryGID(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	pd, _ := ctx.AllocPD()
	defer pd.Close()
	buf, _ := uverbs.AllocBuffer(8192)
	defer buf.Close()
	mr, err := pd.RegMR(buf.Bytes(), uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite|uverbs.AccessRemoteRead|uverbs.AccessRemoteAtomic)
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Close()
	cq, _ := ctx.CreateCQ(uverbs.CQAttr{CQE: 64})
	defer cq.Close()
	caps := uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 64}
	a, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: caps})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, _ := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: caps})
	defer b.Close()
	connectRC(t, a, b.QPN(), gid.GID)
	connectRC(t, b, a.QPN(), gid.GID)
	mem := buf.Bytes()
	copy(mem[0:], "hello from goverbs")
	if _, err := b.PostRecv([]uverbs.RecvWR{{WRID: 2, SGL: []uverbs.SGE{mr.SGE(4096, 1024)}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PostSend([]uverbs.SendWR{{WRID: 1, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{mr.SGE(0, 18)}}}); err != nil {
		t.Fatal(err)
	}
	wcs := make([]uverbs.WC, 4)
	got := 0
	for i := 0; i < 1000000 && got < 2; i++ {
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
		t.Logf("wc %+v", wc)
		if wc.Status != uverbs.WCSuccess {
			t.Fatalf("completion %+v", wc)
		}
	}
	if string(mem[4096:4096+18]) != "hello from goverbs" {
		t.Fatalf("received %q", mem[4096:4096+18])
	}
}
