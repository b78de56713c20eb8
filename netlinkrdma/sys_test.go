package netlinkrdma

import (
	"testing"

	"github.com/goverbs/goverbs/abi"
)

func TestSystem(t *testing.T) {
	c, fk := newFakeConn(func(r request) ([][]byte, error) {
		return [][]byte{encode(func(e *attrEncoder) {
			e.Uint8(abi.RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 0)
			e.Uint8(abi.RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1)
		})}, nil
	})
	s, err := c.System()
	if err != nil {
		t.Fatal(err)
	}
	if s.NetNSMode != NetNSExclusive || s.NetNSMode.String() != "exclusive" || !s.CopyOnFork ||
		!s.Present.Has(abi.RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK) {
		t.Fatalf("system %+v", s)
	}
	if fk.reqs[0].msgType != 0x1406 || len(fk.reqs[0].attrs) != 0 {
		t.Errorf("request %+v", fk.reqs[0])
	}
	if NetNSShared.String() != "shared" {
		t.Error("shared mode name")
	}
}
