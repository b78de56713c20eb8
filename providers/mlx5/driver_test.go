package mlx5

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/providers/mlx5/internal/hw"
	"github.com/goverbs/goverbs/providers/mlx5/internal/mlx5emu"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// The provider glue is tested with mlx5emu playing both the HCA and the kernel: the fake exec functions decode the
// driver payloads this provider builds (buffer and doorbell-record addresses, UAR page ids, user indexes) and
// register exactly those with the emulator, as the kernel's mlx5 driver would.

// emuSys maps every UAR page onto the emulator's single UAR page and allocates rings with real anonymous mmaps.
//
// With heap set, rings and doorbell records are Go memory instead (unmap leaves them to the garbage collector):
// the race detector ignores accesses to mmapped memory, atomic ones included, so it cannot see the
// happens-before edges that a doorbell record or a CQE's ownership word carry between a goroutine posting and
// one polling; on the Go heap it can, and checks them.
type emuSys struct {
	dev   *mlx5emu.Device
	pages uint32
	heap  bool
	// clock is the HCA core clock page mapClock returns (nil: the mapping fails); clockOff records the offset
	// it was asked for.
	clock    []byte
	clockOff int64
}

func (s *emuSys) mapUAR(fd int, offset int64, length int) ([]byte, error) { return s.dev.UAR(), nil }
func (s *emuSys) mapClock(fd int, offset int64, length int) ([]byte, error) {
	s.clockOff = offset
	if s.clock == nil || length != len(s.clock) {
		return nil, unix.EINVAL
	}
	return s.clock, nil
}
func (s *emuSys) anon(n int) ([]byte, error) {
	if s.heap { // page-aligned, as an mmap
		b := make([]byte, n+4096)
		off := (4096 - int(uintptr(unsafe.Pointer(&b[0]))%4096)) % 4096
		return b[off : off+n : off+n], nil
	}
	return realSys{}.anon(n)
}
func (s *emuSys) unmap(b []byte) error {
	if s.heap || &b[0] == &s.dev.UAR()[0] || (s.clock != nil && &b[0] == &s.clock[0]) {
		return nil
	}
	return unix.Munmap(b)
}

// fakeObjects plays the core's provider.Device.Objects hook (uverbs/driverobj.go) the way the kernel and the core
// answer together: it accepts only mlx5 UAR alloc and destroy commands built as rdma-core sends them, writes the
// kernel's outputs through the command's pointers, and counts the live objects as the core does. refuse, when
// set, is returned for the next create (the core's cgroup limit error, say).
type fakeObjects struct {
	t        testing.TB
	next     uint32
	live     map[uint32]uint32 // handle -> UAR type
	refuse   error
	creates  int
	destroys int
}

func newFakeObjects(t testing.TB) *fakeObjects { return &fakeObjects{t: t, live: map[uint32]uint32{}} }

func (f *fakeObjects) hook(cmd *rawcmd.Cmd, create bool) error {
	if cmd.Hdr.ObjectId != abi.MLX5_IB_OBJECT_UAR || cmd.Hdr.DriverId != abi.RDMA_DRIVER_MLX5 {
		f.t.Errorf("driver object command for object %#x, driver %d", cmd.Hdr.ObjectId, cmd.Hdr.DriverId)
		return unix.EINVAL
	}
	attrs := cmd.Attrs[:cmd.NumAttrs()]
	switch {
	case create && cmd.Hdr.MethodId == abi.MLX5_IB_METHOD_UAR_OBJ_ALLOC:
		if err := f.refuse; err != nil {
			f.refuse = nil
			return err
		}
		f.next++
		f.creates++
		for i := range attrs {
			a := &attrs[i]
			switch a.AttrId {
			case abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE:
				a.Data = uint64(f.next)
			case abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_TYPE:
				f.live[f.next] = uint32(a.Data)
			case abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET:
				binary.NativeEndian.PutUint64(hostBytes(a.Data, 8), uint64(f.next)<<12)
			case abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH:
				binary.NativeEndian.PutUint32(hostBytes(a.Data, 4), 4096)
			case abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID:
				binary.NativeEndian.PutUint32(hostBytes(a.Data, 4), f.next)
			}
		}
		if _, ok := f.live[f.next]; !ok {
			f.t.Errorf("UAR alloc without a type")
		}
		return nil
	case !create && cmd.Hdr.MethodId == abi.MLX5_IB_METHOD_UAR_OBJ_DESTROY:
		if len(attrs) != 1 || attrs[0].AttrId != abi.MLX5_IB_ATTR_UAR_OBJ_DESTROY_HANDLE {
			f.t.Errorf("UAR destroy attributes %+v", attrs)
			return unix.EINVAL
		}
		h := uint32(attrs[0].Data)
		if _, ok := f.live[h]; !ok {
			f.t.Errorf("destroy of UAR handle %d, which is not live", h)
			return unix.EINVAL
		}
		delete(f.live, h)
		f.destroys++
		return nil
	}
	f.t.Errorf("driver object method %#x with create=%v", cmd.Hdr.MethodId, create)
	return unix.EINVAL
}

type glue struct {
	t    testing.TB
	dev  *mlx5emu.Device
	ctx  *mctx
	objs *fakeObjects
	// createECE is the ece_options QP_CREATE answers (the kernel's; 0 without ECE); lastQPReq the driver
	// request of the last QP_CREATE.
	createECE uint32
	lastQPReq abi.Mlx5IbCreateQp
}

func newGlue(t testing.TB, bfRegSize int) *glue {
	t.Helper()
	return newGlueWith(t, bfRegSize, false)
}

// newGlueWith is newGlue with rings and doorbell records on the Go heap when heap is set (see emuSys).
func newGlueWith(t testing.TB, bfRegSize int, heap bool) *glue {
	t.Helper()
	return newGlueResp(t, bfRegSize, heap, nil, nil)
}

// newGlueResp is newGlueWith with the GET_CONTEXT response changed by resp (when not nil) and clock as the
// HCA core clock page the kernel maps (nil: the mapping fails).
func newGlueResp(t testing.TB, bfRegSize int, heap bool, respHook func(*abi.Mlx5IbAllocUcontextResp), clock []byte) *glue {
	t.Helper()
	dev := mlx5emu.NewForTest(t, mlx5emu.Options{BFRegSize: bfRegSize, RequireDoorbell: true})
	sys := &emuSys{dev: dev, heap: heap, clock: clock}
	var sent abi.Mlx5IbAllocUcontextReqV2
	objs := newFakeObjects(t)
	ctx, err := allocContext(&provider.Device{Name: "mlx5_0", DriverID: 1, ABI: 1, PageSize: 4096, Objects: objs.hook},
		func(in, out []byte) error {
			copy(bytesOf(&sent), in)
			resp := abi.Mlx5IbAllocUcontextResp{QpTabSize: 1 << 18, BfRegSize: uint32(bfRegSize), CacheLineSize: 64,
				MaxSqDescSz: 512, MaxRqDescSz: 512, MaxSendWqebb: 1 << 15, MaxRecvWr: 1 << 15, MaxSrqRecvWr: 1 << 15,
				NumPorts: 1, CqeVersion: 1, CmdsSuppUhw: 3, LogUarSize: 12, NumUarsPerPage: 1}
			if respHook != nil {
				respHook(&resp)
			}
			copy(out, bytesOf(&resp))
			return nil
		}, sys)
	if err != nil {
		t.Fatal(err)
	}
	if sent.LibCaps != abi.MLX5_LIB_CAP_4K_UAR|abi.MLX5_LIB_CAP_DYN_UAR || sent.MaxCqeVersion != 1 {
		t.Errorf("GET_CONTEXT request %+v", sent)
	}
	t.Cleanup(func() {
		if err := ctx.Close(); err != nil {
			t.Errorf("close context: %v", err)
		}
		if len(objs.live) != 0 {
			t.Errorf("provider Close left UAR objects %v", objs.live)
		}
	})
	return &glue{t: t, dev: dev, ctx: ctx, objs: objs}
}

// emuSys is the glue's system-call fake.
func (g *glue) emuSys() *emuSys { return g.ctx.sys.(*emuSys) }

func (g *glue) cq(n int) (*cqAdapter, uint32) {
	g.t.Helper()
	return g.cqIn(n, nil)
}

// cqIn creates a CQ through the driver in parent domain dom (nil for none).
func (g *glue) cqIn(n int, dom provider.ParentDomain) (*cqAdapter, uint32) {
	g.t.Helper()
	p := provider.CQParams{CQE: n, ParentDomain: dom}
	var cqn uint32
	c, _, err := g.ctx.CreateCQ(p, func(r provider.CQParams, in, out []byte) (provider.CQResult, error) {
		var req abi.Mlx5IbCreateCq
		copy(bytesOf(&req), in)
		if req.Flags != abi.MLX5_IB_CREATE_CQ_FLAGS_UAR_PAGE_INDEX || req.UarPageIndex != uint16(g.ctx.nc.obj.PageID) ||
			req.CqeSize != 64 {
			g.t.Errorf("CQ request %+v", req)
		}
		var err error
		cqn, err = g.dev.CreateCQ(hostBytes(req.BufAddr, (r.CQE+1)*hw.CQESize), hostBytes(req.DbAddr, 8))
		resp := abi.Mlx5IbCreateCqResp{Cqn: cqn}
		copy(out, bytesOf(&resp))
		return provider.CQResult{CQE: r.CQE, Handle: cqn}, err
	})
	if err != nil {
		g.t.Fatal(err)
	}
	return c.(*cqAdapter), cqn
}

func (g *glue) qp(typ verbs.QPType, cap verbs.QPCap, scq, rcq *cqAdapter, scqn, rcqn uint32) *qpAdapter {
	g.t.Helper()
	return g.qpOn(typ, cap, scq, rcq, scqn, rcqn, nil)
}

// qpOn creates a QP through the driver; with srq it receives from that SRQ (as uverbs.CreateQP passes it).
func (g *glue) qpOn(typ verbs.QPType, cap verbs.QPCap, scq, rcq *cqAdapter, scqn, rcqn uint32, srq *srqAdapter) *qpAdapter {
	g.t.Helper()
	return g.qpIn(typ, cap, scq, rcq, scqn, rcqn, srq, nil)
}

// qpIn is qpOn in parent domain dom (nil for none).
func (g *glue) qpIn(typ verbs.QPType, cap verbs.QPCap, scq, rcq *cqAdapter, scqn, rcqn uint32, srq *srqAdapter, dom provider.ParentDomain) *qpAdapter {
	g.t.Helper()
	p := provider.QPParams{Type: typ, Cap: cap, SendCQ: scq, RecvCQ: rcq, ParentDomain: dom}
	var srqn uint32
	if srq != nil {
		p.HasSRQ, p.SRQ, srqn = true, srq, srq.SRQN()
	}
	q, _, err := g.ctx.CreateQP(p, func(r provider.QPParams, in, out []byte) (provider.QPResult, error) {
		var req abi.Mlx5IbCreateQp
		copy(bytesOf(&req), in)
		g.lastQPReq = req
		resp := abi.Mlx5IbCreateQpResp{EceOptions: g.createECE}
		copy(out, bytesOf(&resp))
		if req.Flags != abi.MLX5_QP_FLAG_SCATTER_CQE|abi.MLX5_QP_FLAG_UAR_PAGE_INDEX {
			g.t.Errorf("QP request flags %#x", req.Flags)
		}
		if srq != nil && (req.RqWqeCount != 0 || req.RqWqeShift != 0) {
			g.t.Errorf("QP on an SRQ asks for a receive queue: %+v", req)
		}
		et := map[verbs.QPType]mlx5emu.QPType{verbs.QPTypeRC: mlx5emu.RC, verbs.QPTypeUC: mlx5emu.UC,
			verbs.QPTypeUD: mlx5emu.UD}[typ]
		n := int(req.RqWqeCount)<<req.RqWqeShift + int(req.SqWqeCount)*hw.SendWQEBB
		qpn, err := g.dev.CreateQP(mlx5emu.QPConfig{Type: et, PDN: 1, Buf: hostBytes(req.BufAddr, n),
			SQWQECnt: int(req.SqWqeCount), RQWQECnt: int(req.RqWqeCount), RQWQEShift: int(req.RqWqeShift),
			DBR: hostBytes(req.DbAddr, 8), SendCQN: scqn, RecvCQN: rcqn, SRQN: srqn, UIDX: req.Uidx, ScatterToCQE: true})
		return provider.QPResult{QPN: qpn, Cap: r.Cap}, err
	})
	if err != nil {
		g.t.Fatal(err)
	}
	return q.(*qpAdapter)
}

func (g *glue) connect(a, b *qpAdapter, qkey uint32) {
	g.t.Helper()
	acc := mlx5emu.AccessLocalWrite | mlx5emu.AccessRemoteWrite | mlx5emu.AccessRemoteRead | mlx5emu.AccessRemoteAtomic
	for _, pr := range [][2]*qpAdapter{{a, b}, {b, a}} {
		for _, st := range []struct {
			attr mlx5emu.QPAttr
			s    verbs.QPState
		}{
			{mlx5emu.QPAttr{State: mlx5emu.StateInit, Access: acc, QKey: qkey}, verbs.QPStateInit},
			{mlx5emu.QPAttr{State: mlx5emu.StateRTR, DestQPN: pr[1].QPN}, verbs.QPStateRTR},
			{mlx5emu.QPAttr{State: mlx5emu.StateRTS, RNRRetry: 1}, verbs.QPStateRTS},
		} {
			if err := g.dev.ModifyQP(pr[0].QPN, st.attr); err != nil {
				g.t.Fatal(err)
			}
			pr[0].StateChanged(st.s)
		}
	}
}

// rcPair makes the tests' usual set: a send CQ and a receive CQ, two connected RC QPs on them (16 WRs each
// way, 32 bytes inline), and two 4 KiB MRs with their lkeys.
func (g *glue) rcPair() (scq, rcq *cqAdapter, a, b *qpAdapter, src []byte, slk uint32, dst []byte, dlk uint32) {
	g.t.Helper()
	scq, scqn := g.cq(64)
	rcq, rcqn := g.cq(64)
	cap := verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 32}
	a = g.qp(verbs.QPTypeRC, cap, scq, rcq, scqn, rcqn)
	b = g.qp(verbs.QPTypeRC, cap, scq, rcq, scqn, rcqn)
	g.connect(a, b, 0)
	src, slk = g.mr(4096)
	dst, dlk = g.mr(4096)
	return scq, rcq, a, b, src, slk, dst, dlk
}

func (g *glue) mr(n int) ([]byte, uint32) {
	g.t.Helper()
	b := aligned(n)
	acc := mlx5emu.AccessLocalWrite | mlx5emu.AccessRemoteWrite | mlx5emu.AccessRemoteRead | mlx5emu.AccessRemoteAtomic
	lkey, _, err := g.dev.RegisterMR(b, acc, 1)
	if err != nil {
		g.t.Fatal(err)
	}
	return b, lkey
}

func pollN(t *testing.T, c *cqAdapter, want int) []hw.WC {
	t.Helper()
	var out []hw.WC
	var wcs [8]hw.WC
	for i := 0; i < 50 && len(out) < want; i++ {
		n, st := c.Poll(wcs[:])
		out = append(out, wcs[:n]...)
		if st != provider.OK {
			t.Fatal(st.Err())
		}
	}
	if len(out) != want {
		t.Fatalf("polled %d, want %d: %+v", len(out), want, out)
	}
	return out
}

func TestDriverAgainstEmulator(t *testing.T) {
	for _, bf := range []int{512, 0} {
		t.Run(map[int]string{512: "BlueFlame", 0: "no BlueFlame"}[bf], func(t *testing.T) {
			g := newGlue(t, bf)
			if got := g.ctx.Caps().ContextFlags()&hw.MLX5DV_CONTEXT_FLAGS_BLUEFLAME != 0; got != (bf != 0) {
				t.Errorf("BlueFlame flag %v with bf_reg_size %d", got, bf)
			}
			scq, scqn := g.cq(10)
			rcq, rcqn := g.cq(10)
			if scq.Entries() != 16 {
				t.Errorf("CQ of 10 entries has %d", scq.Entries())
			}
			cap := verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 32}
			a := g.qp(verbs.QPTypeRC, cap, scq, rcq, scqn, rcqn)
			b := g.qp(verbs.QPTypeRC, cap, scq, rcq, scqn, rcqn)

			src, slk := g.mr(4096)
			dst, dlk := g.mr(4096)
			copy(src, "hello from goverbs through an emulated ConnectX")
			// Posting is gated on the QP state, as in rdma-core.
			if _, err := errOf(a.PostSend([]hw.SendWR{{Opcode: verbs.WRSend}})); !errors.Is(err, syscall.EINVAL) {
				t.Errorf("send in RESET: %v", err)
			}
			if _, err := errOf(b.PostRecv([]hw.RecvWR{{}})); !errors.Is(err, syscall.EINVAL) {
				t.Errorf("receive in RESET: %v", err)
			}
			g.connect(a, b, 0)
			for i := 0; i < 40; i++ {
				if _, err := errOf(b.PostRecv([]hw.RecvWR{{WRID: uint64(100 + i), SGL: []hw.SGE{{Addr: addrOf(dst), Length: 256, LKey: dlk}}}})); err != nil {
					t.Fatal(err)
				}
				if _, err := errOf(a.PostSend([]hw.SendWR{{WRID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline,
					SGL: []hw.SGE{{Addr: addrOf(src), Length: 48, LKey: slk}}}})); err != nil {
					t.Fatal(err)
				}
				g.dev.Process()
				s := pollN(t, scq, 1)[0]
				r := pollN(t, rcq, 1)[0]
				if s.Status != verbs.WCSuccess || s.WRID != uint64(i) || r.WRID != uint64(100+i) || r.ByteLen != 48 {
					t.Fatalf("iteration %d: send %+v receive %+v", i, s, r)
				}
				if !bytes.Equal(dst[:48], src[:48]) {
					t.Fatalf("iteration %d: payload %q", i, dst[:48])
				}
			}
			st, err := g.dev.QPStats(a.QPN)
			if err != nil || (bf != 0) != (st.BlueFlameWrites > 0) || (bf == 0 && st.Doorbells == 0) {
				t.Errorf("doorbell statistics with bf_reg_size %d: %+v, %v", bf, st, err)
			}
			// Arm, complete, event.
			if err := rcq.Arm(false); err != nil {
				t.Fatal(err)
			}
			if _, err := errOf(b.PostRecv([]hw.RecvWR{{WRID: 7, SGL: []hw.SGE{{Addr: addrOf(dst), Length: 256, LKey: dlk}}}})); err != nil {
				t.Fatal(err)
			}
			if _, err := errOf(a.PostSend([]hw.SendWR{{WRID: 8, Opcode: verbs.WRRDMAWriteWithImm, Imm: 5, Flags: verbs.SendSignaled,
				RemoteAddr: addrOf(dst) + 512, RKey: dlk, SGL: []hw.SGE{{Addr: addrOf(src), Length: 16, LKey: slk}}}})); err != nil {
				t.Fatal(err)
			}
			g.dev.Process()
			if ev := g.dev.Events(); len(ev) != 1 || ev[0] != rcqn {
				t.Errorf("events %v", ev)
			}
			rcq.EventReceived()
			if r := pollN(t, rcq, 1)[0]; r.Opcode != verbs.WCRecvRDMAWithImm || r.Imm != 5 || r.WRID != 7 {
				t.Errorf("write with immediate: %+v", r)
			}
			pollN(t, scq, 1)

			// Resize the send CQ with nothing pending... the emulator does not model RESIZE_CQ, so only the
			// no-op path (same rounded size) is exercised here; CQ.CompleteResize has its own tests.
			if n, err := scq.Resize(15, func(int, []byte, []byte) (int, error) {
				t.Error("resize to the same size issued a command")
				return 0, nil
			}); err != nil || n != 15 {
				t.Fatal(n, err)
			}

			// Back to RESET: indices and doorbell records are zeroed.
			a.StateChanged(verbs.QPStateReset)
			if a.SQ.Outstanding() != 0 || !bytes.Equal(a.dbrMem[4:8], []byte{0, 0, 0, 0}) {
				t.Errorf("reset left state behind")
			}
			a.Destroyed()
			b.Destroyed()
			scq.Destroyed()
			rcq.Destroyed()
		})
	}
}

func TestDriverAHAndPD(t *testing.T) {
	g := newGlue(t, 256)
	pd, err := g.ctx.AllocPD(func(in, out []byte) error {
		r := abi.Mlx5IbAllocPdResp{Pdn: 9}
		copy(out, bytesOf(&r))
		return nil
	})
	if err != nil || pd.PDN() != 9 {
		t.Fatalf("PD %v, %v", pd, err)
	}
	ib, err := g.ctx.CreateAH(provider.AHParams{DLID: 3, SL: 1}, func(provider.AHParams, []byte, []byte) (provider.AHResult, error) {
		t.Error("IB AH issued a command")
		return provider.AHResult{}, nil
	})
	if err != nil || binary.BigEndian.Uint16(ib.AV[14:]) /* rlid */ != 3 {
		t.Fatalf("IB AH %x, %v", ib.AV, err)
	}
	roce, err := g.ctx.CreateAH(provider.AHParams{Ethernet: true, RoCEv2: true, IsGlobal: true, FlowLabel: 0},
		func(_ provider.AHParams, in, out []byte) (provider.AHResult, error) {
			r := abi.Mlx5IbCreateAhResp{ResponseLength: 16, Dmac: [6]byte{1, 2, 3, 4, 5, 6}}
			copy(out, bytesOf(&r))
			return provider.AHResult{Handle: 4}, nil
		})
	if err != nil || roce.Handle != 4 || roce.AV[20] /* rmac */ != 1 || binary.BigEndian.Uint16(roce.AV[14:]) /* udp_sport */ < hw.RoCEUDPPortMin {
		t.Fatalf("RoCE AH %x, %v", roce.AV, err)
	}
	if _, _, err := g.ctx.CreateQP(provider.QPParams{Type: verbs.QPTypeRC, HasSRQ: true}, nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("QP on a missing SRQ: %v", err)
	}
	if _, _, err := g.ctx.CreateQP(provider.QPParams{Type: verbs.QPTypeRC, HasSRQ: true, SRQ: foreignSRQ{}}, nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("QP on another provider's SRQ: %v", err)
	}
	p := provider.SRQParams{MaxWR: 10, MaxSGE: 2}
	s, res, err := g.ctx.CreateSRQ(p, func(rq provider.SRQParams, in, out []byte) (provider.SRQResult, error) {
		var req abi.Mlx5IbCreateSrq
		copy(bytesOf(&req), in)
		r := abi.Mlx5IbCreateSrqResp{Srqn: 77}
		copy(out, bytesOf(&r))
		return provider.SRQResult{MaxWR: rq.MaxWR, MaxSGE: rq.MaxSGE, SRQN: 77}, nil
	})
	if err != nil || res.SRQN != 77 || res.MaxWR != 15 {
		t.Fatalf("SRQ %+v, %v", res, err)
	}
	if n, err := errOf(s.PostRecv(make([]hw.RecvWR, 15))); n != 15 || err != nil {
		t.Errorf("SRQ post %d, %v", n, err)
	}
	s.Destroyed()
}

// foreignSRQ is an SRQ of another provider.
type foreignSRQ struct{}

func (foreignSRQ) PostRecv([]hw.RecvWR) (int, provider.Status) { return 0, provider.OK }
func (foreignSRQ) Modify(uint32, provider.Exec) error          { return nil }
func (foreignSRQ) Destroyed()                                  {}

// srq creates an SRQ through the driver and registers it with the emulator the way the kernel would: its
// geometry follows from the max_wr and max_sge the provider put into the request.
func (g *glue) srq(maxWR, maxSGE uint32) *srqAdapter {
	g.t.Helper()
	return g.srqIn(maxWR, maxSGE, nil)
}

// srqIn is srq in parent domain dom (nil for none).
func (g *glue) srqIn(maxWR, maxSGE uint32, dom provider.ParentDomain) *srqAdapter {
	g.t.Helper()
	p := provider.SRQParams{MaxWR: maxWR, MaxSGE: maxSGE, ParentDomain: dom}
	s, _, err := g.ctx.CreateSRQ(p, func(rq provider.SRQParams, in, out []byte) (provider.SRQResult, error) {
		var req abi.Mlx5IbCreateSrq
		copy(bytesOf(&req), in)
		n := roundupPow2(int(rq.MaxWR) + 1)
		shift := 0
		for 1<<shift < hw.SRQNextSegSize+int(rq.MaxSGE)*hw.DataSegSize {
			shift++
		}
		srqn, err := g.dev.CreateSRQ(mlx5emu.SRQConfig{PDN: 1, Buf: hostBytes(req.BufAddr, n<<shift), WQECnt: n,
			WQEShift: shift, DBR: hostBytes(req.DbAddr, 8), UIDX: req.Uidx})
		r := abi.Mlx5IbCreateSrqResp{Srqn: srqn}
		copy(out, bytesOf(&r))
		return provider.SRQResult{MaxWR: rq.MaxWR, MaxSGE: rq.MaxSGE, SRQN: srqn}, err
	})
	if err != nil {
		g.t.Fatal(err)
	}
	return s.(*srqAdapter)
}

// TestDriverQPOnSRQ creates QPs on one SRQ through the provider contract (QPParams.SRQ, as uverbs.CreateQP sets
// it) and runs traffic through the emulator: receives of two QPs that complete into two CQs all retire through the
// SRQ's wr_id table and free list, including scattered-to-CQE payloads, and WQEs are recycled many times over.
func TestDriverQPOnSRQ(t *testing.T) {
	for _, bf := range []int{512, 0} {
		t.Run(map[int]string{512: "BlueFlame", 0: "no BlueFlame"}[bf], func(t *testing.T) {
			g := newGlue(t, bf)
			srq := g.srq(7, 2)
			scq, scqn := g.cq(16)
			rcq1, rcqn1 := g.cq(16)
			rcq2, rcqn2 := g.cq(16)
			cap := verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 8, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 32}
			a1 := g.qp(verbs.QPTypeRC, cap, scq, scq, scqn, scqn)
			a2 := g.qp(verbs.QPTypeRC, cap, scq, scq, scqn, scqn)
			b1 := g.qpOn(verbs.QPTypeRC, cap, scq, rcq1, scqn, rcqn1, srq)
			b2 := g.qpOn(verbs.QPTypeRC, cap, scq, rcq2, scqn, rcqn2, srq)
			if b1.RQ != nil || b1.QP.SRQ != srq.SRQ {
				t.Fatalf("QP on SRQ has RQ %v, SRQ %p", b1.RQ, b1.QP.SRQ)
			}
			g.connect(a1, b1, 0)
			g.connect(a2, b2, 0)
			if _, err := errOf(b1.PostRecv([]hw.RecvWR{{}})); !errors.Is(err, syscall.EINVAL) {
				t.Errorf("receive posted to a QP on an SRQ: %v", err)
			}

			src, slk := g.mr(4096)
			dst, dlk := g.mr(8 * 256)
			for i := range src {
				src[i] = byte(i*7 + 1)
			}
			// 7 receives fit; 60 messages recycle every WQE several times, alternating QPs and CQs and
			// alternating scattered-to-CQE (16 bytes) and buffer (100 bytes) deliveries.
			posted, done, scattered := 0, 0, 0
			post := func() {
				slot := posted % 8
				if _, err := errOf(srq.PostRecv([]hw.RecvWR{{WRID: uint64(1000 + posted),
					SGL: []hw.SGE{{Addr: addrOf(dst) + uint64(slot*256), Length: 256, LKey: dlk}}}})); err != nil {
					t.Fatal(err)
				}
				posted++
			}
			for range 7 {
				post()
			}
			if _, err := errOf(srq.PostRecv([]hw.RecvWR{{}})); !errors.Is(err, syscall.ENOMEM) {
				t.Fatalf("eighth receive on a 7-WR SRQ: %v", err)
			}
			for i := 0; i < 60; i++ {
				a, rcq := a1, rcq1
				if i%2 == 1 {
					a, rcq = a2, rcq2
				}
				n := uint32(100)
				if i%3 == 0 {
					n = 16
				}
				if _, err := errOf(a.PostSend([]hw.SendWR{{WRID: uint64(i), Opcode: verbs.WRSend, Flags: verbs.SendSignaled,
					SGL: []hw.SGE{{Addr: addrOf(src) + uint64(i), Length: n, LKey: slk}}}})); err != nil {
					t.Fatal(err)
				}
				g.dev.Process()
				if rcq.mem[int(rcq.ConsumerIndex()&uint32(rcq.Entries()-1))*hw.CQESize+hw.CQESize-1] /* op_own */ &hw.InlineScatter32 != 0 {
					scattered++
				}
				s := pollN(t, scq, 1)[0]
				r := pollN(t, rcq, 1)[0]
				if s.Status != verbs.WCSuccess || s.WRID != uint64(i) {
					t.Fatalf("message %d: send %+v", i, s)
				}
				want := uint64(1000 + done)
				slot := done % 8
				if r.Status != verbs.WCSuccess || r.WRID != want || r.ByteLen != n || r.Opcode != verbs.WCRecv {
					t.Fatalf("message %d: receive %+v, want wr_id %d, %d bytes", i, r, want, n)
				}
				if got := dst[slot*256 : slot*256+int(n)]; !bytes.Equal(got, src[i:i+int(n)]) {
					t.Fatalf("message %d (%d bytes): payload %x", i, n, got)
				}
				done++
				post()
			}
			if scattered != 20 {
				t.Errorf("%d receives scattered to the CQE, want the 20 short ones", scattered)
			}
			for _, q := range []*qpAdapter{a1, a2, b1, b2} {
				q.Destroyed()
			}
			srq.Destroyed()
			for _, c := range []*cqAdapter{scq, rcq1, rcq2} {
				c.Destroyed()
			}
		})
	}
}

// errOf turns a data-path status into an error for the assertions (nil for OK, else the errno).
func errOf(n int, st provider.Status) (int, error) { return n, st.Err() }

// hostBytes views n bytes at a user address the driver gave the "kernel" (memory this test process owns).
func hostBytes(addr uint64, n int) []byte {
	if n == 0 {
		return nil
	}
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n)
}

// aligned returns n bytes at a 64-byte aligned address.
func aligned(n int) []byte {
	b := make([]byte, n+64)
	off := (64 - int(addrOf(b)%64)) % 64
	return b[off : off+n : off+n]
}

// errLimit stands for the core's cgroup limit error (uverbs turns EAGAIN from a create into it).
var errLimit = fmt.Errorf("rdma cgroup limit reached: hca_object on mlx5_0: %w", unix.EAGAIN)

// UAR pages are created and destroyed only through the core's driver-object hook (provider.Device.Objects): the
// context's NC page at open, a BlueFlame page when a QP finds no free register; the hook's refusal reaches the
// caller intact and names what failed; the provider's Close destroys every page; without the hook the provider
// refuses to open a context.
func TestDriverUARsThroughCore(t *testing.T) {
	g := newGlue(t, 512)
	if g.objs.creates != 1 || len(g.objs.live) != 1 || g.objs.live[1] != hw.UARTypeNC {
		t.Fatalf("after open: %d creates, live %v; want the NC page", g.objs.creates, g.objs.live)
	}
	scq, scqn := g.cq(8)
	cp := verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}
	q1 := g.qp(verbs.QPTypeRC, cp, scq, scq, scqn, scqn)
	q2 := g.qp(verbs.QPTypeRC, cp, scq, scq, scqn, scqn)
	if g.objs.creates != 2 || g.objs.live[2] != hw.UARTypeBF {
		t.Fatalf("after two QPs: %d creates, live %v; want one BlueFlame page (two registers)", g.objs.creates, g.objs.live)
	}
	g.objs.refuse = errLimit
	_, _, err := g.ctx.CreateQP(provider.QPParams{Type: verbs.QPTypeRC, Cap: cp, SendCQ: scq, RecvCQ: scq},
		func(provider.QPParams, []byte, []byte) (provider.QPResult, error) {
			t.Error("QP command issued without a doorbell register")
			return provider.QPResult{}, nil
		})
	if !errors.Is(err, errLimit) || !errors.Is(err, unix.EAGAIN) || !strings.Contains(err.Error(), "allocate BlueFlame UAR on mlx5_0") {
		t.Fatalf("third QP with the UAR refused: %v", err)
	}
	if len(g.objs.live) != 2 {
		t.Errorf("live UARs after the refusal: %v", g.objs.live)
	}
	q1.Destroyed()
	q2.Destroyed()
	scq.Destroyed()
	if err := g.ctx.Close(); err != nil {
		t.Fatal(err)
	}
	if len(g.objs.live) != 0 || g.objs.destroys != 2 {
		t.Errorf("after Close: live %v, %d destroys", g.objs.live, g.objs.destroys)
	}

	// No hook: the context cannot get its NC page.
	dev, err := mlx5emu.New(mlx5emu.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	_, err = allocContext(&provider.Device{Name: "mlx5_1", PageSize: 4096}, func(in, out []byte) error {
		resp := abi.Mlx5IbAllocUcontextResp{CacheLineSize: 64, NumUarsPerPage: 1, CqeVersion: 1}
		copy(out, bytesOf(&resp))
		return nil
	}, &emuSys{dev: dev})
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "mlx5_1") {
		t.Errorf("context without the driver-object hook: %v", err)
	}

	// A UAR size but 0 UARs per page (make fuzz's input for CapsFromResp): refused, not a division by zero later.
	_, err = allocContext(&provider.Device{Name: "mlx5_2", PageSize: 4096, Objects: g.objs.hook}, func(in, out []byte) error {
		resp := abi.Mlx5IbAllocUcontextResp{CacheLineSize: 64, LogUarSize: 12, NumUarsPerPage: 0, CqeVersion: 1}
		copy(out, bytesOf(&resp))
		return nil
	}, &emuSys{dev: dev})
	if !errors.Is(err, syscall.EINVAL) || !strings.Contains(err.Error(), "0 UARs per page") || !strings.Contains(err.Error(), "mlx5_2") {
		t.Errorf("context with 0 UARs per page: %v, want EINVAL naming mlx5_2 and the cause", err)
	}
}

// Every control-path refusal names what failed and wraps an errno; every not-supported one also matches
// ErrNotSupported and errors.ErrUnsupported (issue 10: one sentinel for the module).
func TestDriverErrorsWrapErrnos(t *testing.T) {
	g := newGlue(t, 256)
	scq, _ := g.cq(4)
	noExec := func(in, out []byte) error { t.Error("command issued for a refused request"); return nil }
	noQP := func(provider.QPParams, []byte, []byte) (provider.QPResult, error) {
		return provider.QPResult{}, noExec(nil, nil)
	}
	noCQ := func(provider.CQParams, []byte, []byte) (provider.CQResult, error) {
		return provider.CQResult{}, noExec(nil, nil)
	}
	noAH := func(provider.AHParams, []byte, []byte) (provider.AHResult, error) {
		return provider.AHResult{}, noExec(nil, nil)
	}
	noResize := func(int, []byte, []byte) (int, error) { return 0, noExec(nil, nil) }
	cp := verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}
	_, _, errXRC := g.ctx.CreateQP(provider.QPParams{Type: verbs.QPTypeXRCSend, Cap: cp, SendCQ: scq, RecvCQ: scq}, noQP)
	_, _, errRaw := g.ctx.CreateQP(provider.QPParams{Type: verbs.QPTypeRawPacket, Cap: cp, SendCQ: scq, RecvCQ: scq}, noQP)
	supp := g.ctx.resp.CmdsSuppUhw
	g.ctx.resp.CmdsSuppUhw &^= abi.MLX5_USER_CMDS_SUPP_UHW_CREATE_AH
	_, errAH := g.ctx.CreateAH(provider.AHParams{Ethernet: true, RoCEv2: true, IsGlobal: true}, noAH)
	g.ctx.resp.CmdsSuppUhw = supp
	_, errStatic := allocContext(&provider.Device{Name: "mlx5_1", PageSize: 4096, Objects: newFakeObjects(t).hook},
		func(in, out []byte) error {
			resp := abi.Mlx5IbAllocUcontextResp{CacheLineSize: 64, NumUarsPerPage: 1, CqeVersion: 1, TotBfregs: 16}
			copy(out, bytesOf(&resp))
			return nil
		}, &emuSys{dev: g.dev})
	for name, err := range map[string]error{"XRC QP": errXRC, "raw packet QP": errRaw, "RoCE AH without MAC": errAH,
		"static bfregs": errStatic} {
		if !errors.Is(err, ErrNotSupported) || !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, syscall.EOPNOTSUPP) {
			t.Errorf("%s: %v does not match ErrNotSupported, errors.ErrUnsupported and EOPNOTSUPP", name, err)
		}
		if strings.Count(err.Error(), "not supported") != 1 {
			t.Errorf("%s: %q", name, err)
		}
	}

	_, _, errCQ := g.ctx.CreateCQ(provider.CQParams{CQE: 1 << 24}, noCQ)
	_, _, errSize := g.ctx.CreateQP(provider.QPParams{Type: verbs.QPTypeRC, Cap: verbs.QPCap{MaxSendWR: 1 << 20, MaxSendSGE: 1},
		SendCQ: scq, RecvCQ: scq}, noQP)
	_, errResize := scq.Resize(0, noResize)
	for name, err := range map[string]error{"CQ too large": errCQ, "QP too large": errSize, "resize to 0": errResize} {
		var errno syscall.Errno
		if !errors.As(err, &errno) || errno != syscall.EINVAL || !strings.HasPrefix(err.Error(), "mlx5: ") {
			t.Errorf("%s: %v, want a mlx5 error wrapping EINVAL", name, err)
		}
	}
	scq.Destroyed()
}
