package netlinkrdma

import (
	"reflect"
	"testing"

	"github.com/goverbs/goverbs/abi"
)

func portStatsMsg(e *attrEncoder) {
	devHandle(e)
	e.Uint32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, 1)
	e.Nested(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, func(t *attrEncoder) {
		for i, n := range []string{"sent_pkts", "rcvd_pkts"} {
			t.Nested(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY, func(en *attrEncoder) {
				en.String(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, n)
				en.Uint64(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, uint64(10*(i+1)))
			})
		}
	})
}

func TestPortStats(t *testing.T) {
	c, fk := newFakeConn(func(r request) ([][]byte, error) { return [][]byte{encode(portStatsMsg)}, nil })
	s, err := c.PortStats(2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Port != 1 || len(s.Counters) != 2 || s.Counters[1].Name != "rcvd_pkts" || s.Counters[1].Value != 20 {
		t.Fatalf("stats %+v", s)
	}
	attrs, _ := decodeAll(fk.reqs[0].attrs)
	if fk.reqs[0].msgType != 0x1411 || !reflect.DeepEqual(attrs, []string{"1=02000000", "3=01000000"}) {
		t.Errorf("request %+v %v", fk.reqs[0], attrs)
	}
	if _, err := decodePortStats(encode(devHandle), true); err == nil {
		t.Error("stats without port decoded")
	}
}

func TestQPCounterMode(t *testing.T) {
	c, fk := newFakeConn(func(r request) ([][]byte, error) {
		return [][]byte{encode(func(e *attrEncoder) {
			devHandle(e)
			e.Uint32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, 1)
			e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_MODE, abi.RDMA_COUNTER_MODE_AUTO)
			e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK, abi.RDMA_COUNTER_MASK_QP_TYPE)
		})}, nil
	})
	m, err := c.QPCounterMode(2, 1)
	if err != nil || m.Mode != CounterModeAuto || m.AutoMask != CounterMaskQPType {
		t.Fatalf("mode %+v %v", m, err)
	}
	attrs, _ := decodeAll(fk.reqs[0].attrs)
	if !reflect.DeepEqual(attrs, []string{"1=02000000", "3=01000000", "74=02000000", "75=13000000"}) {
		t.Errorf("request attrs %v", attrs)
	}
	cntn := uint32(4)
	if err := c.BindQPCounter(2, 1, 17, &cntn); err != nil {
		t.Fatal(err)
	}
	attrs, _ = decodeAll(fk.reqs[1].attrs)
	if fk.reqs[1].msgType != 0x1410 || !reflect.DeepEqual(attrs,
		[]string{"74=02000000", "75=13000000", "1=02000000", "3=01000000", "21=11000000", "79=04000000"}) {
		t.Errorf("bind request %#x %v", fk.reqs[1].msgType, attrs)
	}
}

func TestQPCounters(t *testing.T) {
	msg := encode(func(e *attrEncoder) {
		devHandle(e)
		e.Nested(abi.RDMA_NLDEV_ATTR_STAT_COUNTER, func(t *attrEncoder) {
			t.Nested(abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY, func(ce *attrEncoder) {
				ce.Uint32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, 1)
				ce.Uint32(abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ID, 4)
				ce.Uint8(abi.RDMA_NLDEV_ATTR_RES_TYPE, 2)
				ce.Uint32(abi.RDMA_NLDEV_ATTR_RES_PID, 77)
				ce.Nested(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, func(h *attrEncoder) {
					h.Nested(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY, func(en *attrEncoder) {
						en.String(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, "rx_write_requests")
						en.Uint64(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, 5)
					})
				})
				ce.Nested(abi.RDMA_NLDEV_ATTR_RES_QP, func(q *attrEncoder) {
					for _, n := range []uint32{17, 18} {
						q.Nested(abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY, func(x *attrEncoder) {
							x.Uint32(abi.RDMA_NLDEV_ATTR_RES_LQPN, n)
						})
					}
				})
			})
		})
	})
	c, _ := newFakeConn(func(r request) ([][]byte, error) { return [][]byte{msg}, nil })
	cs, err := c.QPCounters(2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].ID != 4 || cs[0].PID != 77 || !reflect.DeepEqual(cs[0].LQPNs, []uint32{17, 18}) ||
		cs[0].Counters[0].Value != 5 || cs[0].DevName != "rxe0" {
		t.Fatalf("counters %+v", cs)
	}
}

func FuzzDecodePortStats(f *testing.F) {
	f.Add(encode(portStatsMsg))
	f.Fuzz(func(t *testing.T, b []byte) {
		decodePortStats(b, true)
		decodePortStats(b, false)
	})
}

func FuzzDecodeQPCounterMode(f *testing.F) {
	f.Add(encode(portStatsMsg))
	f.Fuzz(func(t *testing.T, b []byte) { decodeQPCounterMode(b) })
}

func FuzzDecodeSystem(f *testing.F) {
	f.Add(encode(func(e *attrEncoder) {
		e.Uint8(abi.RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1)
		e.Uint8(abi.RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1)
	}))
	f.Fuzz(func(t *testing.T, b []byte) { decodeSystem(b) })
}
