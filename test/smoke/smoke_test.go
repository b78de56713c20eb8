package smoke

import (
	"testing"

	"github.com/goverbs/goverbs/uverbs"
	"os"
)

func TestOpenQuery(t *testing.T) {
	if os.Getenv("GOVERBS_LAB") == "" {
		t.Skip("needs the lab")
	}
	devs, err := uverbs.Devices()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("devices: %+v", devs)
	ctx, err := uverbs.Open("rxe0")
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
