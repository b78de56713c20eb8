package netlinkrdma

import (
	"net/netip"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
)

func devHandle(e *attrEncoder) {
	e.Uint32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 2)
	e.String(abi.RDMA_NLDEV_ATTR_DEV_NAME, "rxe0")
}

func summaryMsg(e *attrEncoder) {
	devHandle(e)
	e.Nested(abi.RDMA_NLDEV_ATTR_RES_SUMMARY, func(t *attrEncoder) {
		for i, n := range []string{"pd", "cq", "qp"} {
			t.Nested(abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY, func(en *attrEncoder) {
				en.String(abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, n)
				en.Uint64(abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR, uint64(i+1))
				if n != "cq" { // Linux 7.3 adds the limit (not for every kind)
					en.Uint64(abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_MAX, uint64(1000*(i+1)))
				}
			})
		}
	})
}

func TestDecodeResourceSummary(t *testing.T) {
	got, err := decodeResourceSummary(encode(summaryMsg))
	if err != nil {
		t.Fatal(err)
	}
	want := ResourceSummary{DevIndex: 2, DevName: "rxe0", Counts: []ResourceCount{
		{Name: "pd", Current: 1, Max: 1000, HasMax: true}, {Name: "cq", Current: 2}, {Name: "qp", Current: 3, Max: 3000, HasMax: true}}}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("summary:\n- want: %+v\n-  got: %+v", want, got)
	}
	bad := encode(func(e *attrEncoder) {
		devHandle(e)
		e.Nested(abi.RDMA_NLDEV_ATTR_RES_SUMMARY, func(t *attrEncoder) {
			t.Nested(abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY, func(en *attrEncoder) {
				en.String(abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, "pd")
				en.Uint32(abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR, 1) // u64 on the wire
			})
		})
	})
	if _, err := decodeResourceSummary(bad); err == nil {
		t.Fatal("short nested count decoded")
	}
}

func qpEntry(e *attrEncoder, port, lqpn uint32, user bool) {
	e.Nested(abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY, func(q *attrEncoder) {
		if port != 0 {
			q.Uint32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, port)
		}
		q.Uint32(abi.RDMA_NLDEV_ATTR_RES_LQPN, lqpn)
		if user {
			q.Uint32(abi.RDMA_NLDEV_ATTR_RES_RQPN, 18)
			q.Uint32(abi.RDMA_NLDEV_ATTR_RES_RQ_PSN, 0x1234)
		}
		q.Uint32(abi.RDMA_NLDEV_ATTR_RES_SQ_PSN, 0x5678)
		if user {
			q.Uint8(abi.RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE, 0)
		}
		q.Uint8(abi.RDMA_NLDEV_ATTR_RES_TYPE, map[bool]uint8{true: 2, false: 1}[user])
		q.Uint8(abi.RDMA_NLDEV_ATTR_RES_STATE, 3)
		if user {
			q.Uint32(abi.RDMA_NLDEV_ATTR_RES_PDN, 4)
			q.Uint32(abi.RDMA_NLDEV_ATTR_RES_PID, 999)
		} else {
			q.String(abi.RDMA_NLDEV_ATTR_RES_KERN_NAME, "ib_core")
		}
	})
}

func qpDumpMsg(e *attrEncoder) {
	devHandle(e)
	e.Nested(abi.RDMA_NLDEV_ATTR_RES_QP, func(t *attrEncoder) {
		qpEntry(t, 1, 1, false)
		qpEntry(t, 1, 17, true)
	})
}

func TestQPs(t *testing.T) {
	c, fk := newFakeConn(func(r request) ([][]byte, error) { return [][]byte{encode(qpDumpMsg)}, nil })
	qps, err := c.QPs(ResQuery{DevIndex: 2, Port: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(qps) != 2 {
		t.Fatalf("want 2 QPs, got %d", len(qps))
	}
	k, u := qps[0], qps[1]
	if k.DevName != "rxe0" || k.LQPN != 1 || k.Type.String() != "GSI" || k.KernelName != "ib_core" || k.PID != 0 ||
		k.Present.Has(abi.RDMA_NLDEV_ATTR_RES_PDN) {
		t.Errorf("kernel QP: %+v", k)
	}
	if u.LQPN != 17 || u.RQPN != 18 || u.PDN != 4 || u.PID != 999 || u.Type.String() != "RC" || u.State.String() != "RTS" ||
		u.PathMigState.String() != "MIGRATED" || !u.Present.Has(abi.RDMA_NLDEV_ATTR_RES_RQPN) || u.DevIndex != 2 {
		t.Errorf("user QP: %+v", u)
	}
	attrs, _ := decodeAll(fk.reqs[0].attrs)
	if fk.reqs[0].msgType != 0x140a || fk.reqs[0].flags != unix.NLM_F_DUMP || !reflect.DeepEqual(attrs, []string{"1=02000000", "3=01000000"}) {
		t.Errorf("request %+v %v", fk.reqs[0], attrs)
	}

	// doit: the entry's attributes sit at the top level.
	c, fk = newFakeConn(func(r request) ([][]byte, error) {
		return [][]byte{encode(func(e *attrEncoder) {
			devHandle(e)
			e.Uint32(abi.RDMA_NLDEV_ATTR_RES_LQPN, 17)
			e.Uint32(abi.RDMA_NLDEV_ATTR_RES_SQ_PSN, 1)
			e.Uint8(abi.RDMA_NLDEV_ATTR_RES_TYPE, 4)
			e.Uint8(abi.RDMA_NLDEV_ATTR_RES_STATE, 0)
		})}, nil
	})
	qp, err := c.QP(ResQuery{DevIndex: 2}, 17)
	if err != nil || qp.LQPN != 17 || qp.Type.String() != "UD" || qp.DevName != "rxe0" {
		t.Fatalf("QP: %+v %v", qp, err)
	}
	attrs, _ = decodeAll(fk.reqs[0].attrs)
	if !reflect.DeepEqual(attrs, []string{"1=02000000", "21=11000000"}) || fk.reqs[0].flags != 0 {
		t.Errorf("doit request %v flags %#x", attrs, fk.reqs[0].flags)
	}

	if _, err := c.PDs(ResQuery{DevIndex: 2, Raw: true}); err == nil {
		t.Error("raw PD dump accepted")
	}
}

func TestDecodeResEntries(t *testing.T) {
	cqs, err := decodeResDump[CQ](encode(func(e *attrEncoder) {
		devHandle(e)
		e.Nested(abi.RDMA_NLDEV_ATTR_RES_CQ, func(t *attrEncoder) {
			t.Nested(abi.RDMA_NLDEV_ATTR_RES_CQ_ENTRY, func(q *attrEncoder) {
				q.Uint32(abi.RDMA_NLDEV_ATTR_RES_CQE, 255)
				q.Uint64(abi.RDMA_NLDEV_ATTR_RES_USECNT, 2)
				q.Uint8(abi.RDMA_NLDEV_ATTR_RES_POLL_CTX, 2)
				q.Uint8(abi.RDMA_NLDEV_ATTR_DEV_DIM, 1)
				q.Uint32(abi.RDMA_NLDEV_ATTR_RES_CQN, 7)
				q.String(abi.RDMA_NLDEV_ATTR_RES_KERN_NAME, "ib_core")
				q.Nested(abi.RDMA_NLDEV_ATTR_DRIVER, func(d *attrEncoder) {
					d.String(abi.RDMA_NLDEV_ATTR_DRIVER_STRING, "cqn")
					d.Uint8(abi.RDMA_NLDEV_ATTR_DRIVER_PRINT_TYPE, abi.RDMA_NLDEV_PRINT_TYPE_HEX)
					d.Uint32(abi.RDMA_NLDEV_ATTR_DRIVER_U32, 0x40)
					d.String(abi.RDMA_NLDEV_ATTR_DRIVER_STRING, "mode")
					d.String(abi.RDMA_NLDEV_ATTR_DRIVER_STRING, "fast")
					d.String(abi.RDMA_NLDEV_ATTR_DRIVER_STRING, "delta")
					d.Uint32(abi.RDMA_NLDEV_ATTR_DRIVER_S32, 0xffffffff)
				})
			})
		})
	}), cqKind)
	if err != nil {
		t.Fatal(err)
	}
	cq := cqs[0]
	if cq.CQE != 255 || cq.Users != 2 || cq.PollCtx.String() != "WORKQUEUE" || cq.AdaptiveModeration == nil || !*cq.AdaptiveModeration || cq.CQN != 7 {
		t.Errorf("cq %+v", cq)
	}
	wantDrv := []DriverAttr{
		{Key: "cqn", Kind: DriverU32, Hex: true, Uint: 0x40},
		{Key: "mode", Kind: DriverString, Str: "fast"},
		{Key: "delta", Kind: DriverS32, Int: -1},
	}
	if !reflect.DeepEqual(wantDrv, cq.Driver) {
		t.Errorf("driver attrs:\n- want: %+v\n-  got: %+v", wantDrv, cq.Driver)
	}

	sa := make([]byte, 128)
	sa[0], sa[1] = unix.AF_INET, 0 // little-endian family
	sa[2], sa[3] = 0x12, 0x34
	copy(sa[4:], []byte{10, 233, 0, 1})
	ids, err := decodeResDump[CMID](encode(func(e *attrEncoder) {
		devHandle(e)
		e.Nested(abi.RDMA_NLDEV_ATTR_RES_CM_ID, func(t *attrEncoder) {
			t.Nested(abi.RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY, func(q *attrEncoder) {
				q.Uint32(abi.RDMA_NLDEV_ATTR_RES_PS, uint32(PortSpaceTCP))
				q.Uint8(abi.RDMA_NLDEV_ATTR_RES_STATE, 8)
				q.bytes(abi.RDMA_NLDEV_ATTR_RES_SRC_ADDR, sa)
			})
		})
	}), cmIDKind)
	if err != nil {
		t.Fatal(err)
	}
	if ids[0].SrcAddr != netip.MustParseAddrPort("10.233.0.1:4660") || ids[0].State.String() != "LISTEN" ||
		ids[0].PortSpace.String() != "TCP" || ids[0].DstAddr.IsValid() {
		t.Errorf("cm_id %+v", ids[0])
	}

	srqs, err := decodeResDump[SRQ](encode(func(e *attrEncoder) {
		devHandle(e)
		e.Nested(abi.RDMA_NLDEV_ATTR_RES_SRQ, func(t *attrEncoder) {
			t.Nested(abi.RDMA_NLDEV_ATTR_RES_SRQ_ENTRY, func(q *attrEncoder) {
				q.Uint32(abi.RDMA_NLDEV_ATTR_RES_SRQN, 3)
				q.Uint8(abi.RDMA_NLDEV_ATTR_RES_TYPE, 0)
				q.Nested(abi.RDMA_NLDEV_ATTR_RES_QP, func(qt *attrEncoder) {
					qt.Nested(abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY, func(x *attrEncoder) {
						x.Uint32(abi.RDMA_NLDEV_ATTR_RES_LQPN, 20)
					})
					qt.Nested(abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY, func(x *attrEncoder) {
						x.Uint32(abi.RDMA_NLDEV_ATTR_MIN_RANGE, 22)
						x.Uint32(abi.RDMA_NLDEV_ATTR_MAX_RANGE, 25)
					})
				})
			})
		})
	}), srqKind)
	if err != nil {
		t.Fatal(err)
	}
	if want := []QPNRange{{20, 20, false}, {22, 25, true}}; !reflect.DeepEqual(want, srqs[0].QPs) || !srqs[0].QPsPresent {
		t.Errorf("srq qps %+v", srqs[0].QPs)
	}

	if _, err := decodeResDump[MR](encode(func(e *attrEncoder) {
		devHandle(e)
		e.Nested(abi.RDMA_NLDEV_ATTR_RES_MR, func(t *attrEncoder) {
			t.Nested(abi.RDMA_NLDEV_ATTR_RES_MR_ENTRY, func(q *attrEncoder) { q.Uint32(abi.RDMA_NLDEV_ATTR_RES_MRN, 1) })
		})
	}), mrKind); err == nil {
		t.Error("MR without length decoded")
	}
}

func FuzzDecodeResourceSummary(f *testing.F) {
	f.Add(encode(summaryMsg))
	f.Fuzz(func(t *testing.T, b []byte) { decodeResourceSummary(b) })
}

func fuzzResDump[T any, P interface {
	*T
	resEntry
}](f *testing.F, k resKind, seed []byte) {
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := decodeResDump[T, P](b, k); err != nil {
			return
		}
		decodeResOne[T, P](b, k)
	})
}

func FuzzDecodeQP(f *testing.F)        { fuzzResDump[QP](f, qpKind, encode(qpDumpMsg)) }
func FuzzDecodeCQ(f *testing.F)        { fuzzResDump[CQ](f, cqKind, nil) }
func FuzzDecodeMR(f *testing.F)        { fuzzResDump[MR](f, mrKind, nil) }
func FuzzDecodePD(f *testing.F)        { fuzzResDump[PD](f, pdKind, nil) }
func FuzzDecodeCMID(f *testing.F)      { fuzzResDump[CMID](f, cmIDKind, nil) }
func FuzzDecodeContext(f *testing.F)   { fuzzResDump[Context](f, ctxKind, nil) }
func FuzzDecodeSRQ(f *testing.F)       { fuzzResDump[SRQ](f, srqKind, nil) }
func FuzzDecodeQPCounter(f *testing.F) { fuzzResDump[QPCounter](f, qpCounterKind, nil) }
func FuzzDecodeMRStats(f *testing.F)   { fuzzResDump[MRStats](f, mrStatKind, nil) }

// frmrPoolsMsg is an FRMR_POOLS_GET dump reply with a keyed pool and one
// without a key.
func frmrPoolsMsg(e *attrEncoder) {
	devHandle(e)
	e.Nested(abi.RDMA_NLDEV_ATTR_FRMR_POOLS, func(t *attrEncoder) {
		t.Nested(abi.RDMA_NLDEV_ATTR_FRMR_POOL_ENTRY, func(en *attrEncoder) {
			en.Nested(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY, func(k *attrEncoder) {
				k.Uint8(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ATS, 1)
				k.Uint32(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ACCESS_FLAGS, 0x2007)
				k.Uint64(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_VENDOR_KEY, 0x1f)
				k.Uint64(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_NUM_DMA_BLOCKS, 0x100)
			})
			en.Uint32(abi.RDMA_NLDEV_ATTR_FRMR_POOL_QUEUE_HANDLES, 12)
			en.Uint64(abi.RDMA_NLDEV_ATTR_FRMR_POOL_IN_USE, 3)
			en.Uint64(abi.RDMA_NLDEV_ATTR_FRMR_POOL_MAX_IN_USE, 40)
			en.Uint32(abi.RDMA_NLDEV_ATTR_FRMR_POOL_PINNED_HANDLES, 8)
		})
		t.Nested(abi.RDMA_NLDEV_ATTR_FRMR_POOL_ENTRY, func(en *attrEncoder) {
			en.Uint64(abi.RDMA_NLDEV_ATTR_FRMR_POOL_IN_USE, 1)
		})
	})
}

func TestDecodeFRMRPools(t *testing.T) {
	got, err := decodeResDump[FRMRPool](encode(frmrPoolsMsg), frmrPoolKind)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d pools, want 2", len(got))
	}
	a, b := got[0], got[1]
	if !a.HasKey || a.Key.VendorKey != 0x1f || a.Key.NumDMABlocks != 0x100 || a.Key.AccessFlags != 0x2007 || !a.Key.ATS ||
		a.QueueHandles != 12 || a.InUse != 3 || a.MaxInUse != 40 || a.PinnedHandles != 8 || a.DevName != "rxe0" {
		t.Errorf("keyed pool: %+v", a)
	}
	if a.Key.Present.Has(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_KERNEL_VENDOR_KEY) {
		t.Error("kernel vendor key recorded as present")
	}
	if b.HasKey || b.InUse != 1 || b.Present.Has(abi.RDMA_NLDEV_ATTR_FRMR_POOL_QUEUE_HANDLES) {
		t.Errorf("pool without key: %+v", b)
	}
}

func FuzzDecodeFRMRPool(f *testing.F) { fuzzResDump[FRMRPool](f, frmrPoolKind, encode(frmrPoolsMsg)) }
