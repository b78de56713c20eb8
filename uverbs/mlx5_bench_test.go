package uverbs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

// BenchmarkMlx5Public runs the work-request streams of the libmlx5 comparison (providers/mlx5/internal/cmd/mlx5bench,
// issue 28 part 4) through the public data path: QP.PostSend, QP.PostRecv and CQ.Poll (the closed gate, the
// status-to-error step) over goverbs' real mlx5 provider (its QP state check and queue locks, then the hw
// package), as a user of Open("mlx5_0") runs them. The hw package's BenchmarkLibmlx5 is the same loops on the hw
// queues alone.
//
// No device and no kernel: the provider is the registered mlx5 driver, given a fake kernel in this file (GET_CONTEXT,
// ALLOC_PD, CQ_CREATE and QP_CREATE answered with the responses libmlx5emu's C harness gives libmlx5: bf_reg_size 512,
// CQE version 1, one UAR per page; the UAR objects through provider.Device.Objects) and /dev/zero as the command
// fd, so that the UAR and BlueFlame pages it maps are ordinary shared memory. The QP and CQ objects are the core's
// (QP, CQ, a Context's data-path errors) around the provider's objects, built here as Context.CreateQP and
// CreateCQ build them; their data path is the code a user's post and poll run. The QP is moved to RTS by the
// provider's StateChanged (what Modify calls after the kernel's MODIFY_QP).
//
// Variants: locked (a QP and CQ as CreateQP and CreateCQ make them: the provider takes its SQ, RQ and CQ locks;
// against libmlx5's default locking) and td (the QP and the CQ made in a parent domain with a thread domain:
// the QP's queues take no lock, as libmlx5's in a TD; the CQ keeps its lock, as libmlx5's does in such a parent
// domain: its create_cq sets the CQ lock from MLX5_SINGLE_THREADED alone, where the QP's and SRQ's locks follow
// the PD, mlx5_spinlock_init_pd. mlx5bench's C side of these rows sets MLX5_SINGLE_THREADED=1, which drops the CQ
// lock too, so its td-poll rows compare a locked CQ with an unlocked one). Both use the provider's defaults:
// BlueFlame for every single-WQE post that fits (libmlx5's default MLX5_POST_SEND_PREFER_BF), so the doorbell
// stream's SEND is BlueFlamed here.
//
// Sub-benchmarks and loops are BenchmarkLibmlx5's: inline, doorbell, list16, recv, pollsend, pollrecv; batches of
// 32 posts, 4 lists of 16 or 16 polls, timed with "ns/unit" per WR or CQE; between batches (untimed) the posted
// WQEs are retired as the C harness retires them: CQEs written into the CQ ring as the device writes them and
// polled through the provider. Under callgrind (mlx5bench) the measured methods are (*QP).PostSend,
// (*QP).PostRecv and (*CQ).Poll.
//
// The extended API's streams (mlx5bench -set ext): wr-inline, wr-doorbell and wr-list16 are the inline,
// doorbell and list16 streams built with QP.StartWR … Complete (the builder of a QP created with SendOps SEND |
// RDMA_WRITE), one chain per call of mlx5WRInline, mlx5WRDoorbell or mlx5WRList16 (the measured functions);
// pollex-send and pollex-recv are the poll streams read with StartPoll, NextPoll and EndPoll, 16 per call of
// mlx5PollEx, from a CQ as CreateCQEx makes it (WCStandardFlags; CQSingleThreaded in the td variant). Neither
// has an mlx5-specific path in goverbs: the builder collects SendWRs and posts them with the provider's
// PostSendAll, and each StartPoll or NextPoll is a provider Poll of one completion.
func BenchmarkMlx5Public(b *testing.B) {
	for _, v := range []string{"locked", "td"} {
		b.Run(v, func(b *testing.B) {
			for _, op := range mlx5PublicOps {
				b.Run(op, func(b *testing.B) { benchMlx5Public(b, v == "td", op) })
			}
		})
	}
}

// mlx5PublicOps are BenchmarkMlx5Public's streams: the classic API's, then the extended API's.
var mlx5PublicOps = []string{"inline", "doorbell", "list16", "recv", "pollsend", "pollrecv",
	"wr-inline", "wr-doorbell", "wr-list16", "pollex-send", "pollex-recv"}

// TestMlx5PublicPath runs each stream of BenchmarkMlx5Public a few batches, so that `go test` keeps the fake
// kernel and the loops working.
func TestMlx5PublicPath(t *testing.T) {
	for _, td := range []bool{false, true} {
		for _, op := range mlx5PublicOps {
			t.Run(fmt.Sprintf("td=%v/%s", td, op), func(t *testing.T) {
				e := newMlx5Emu(t, td)
				if strings.HasPrefix(op, "wr-") || strings.HasPrefix(op, "pollex-") {
					e.extend(td)
				}
				if err := e.run(op, 100, nil); err != nil {
					t.Fatal(err)
				}
				if e.unaligned {
					t.Error("a ring is not 64-byte aligned")
				}
			})
		}
	}
}

// mlx5Emu is one mlx5 context, CQ and RC QP behind the fake kernel, and the public objects around them.
type mlx5Emu struct {
	tb        testing.TB
	zero      int
	prov      provider.Context
	pcq       provider.CQ
	qp        *QP
	cq        *CQ
	cqBuf     []byte
	cqn, qpn  uint32
	qpCap     verbs.QPCap // the capacities QP_CREATE granted
	uidx      uint32
	cqN       uint32 // CQEs written so far
	sqIdx     uint16 // the next send WQE index (the producer's counter)
	unaligned bool
	next      uint32 // the next handle the fake kernel hands out
	pl        []byte
	inline    []SendWR
	doorbell  []SendWR
	list16    []SendWR
	recv      []RecvWR
	wc        []verbs.WC // consume's (allocated once: a slice passed to an interface method escapes)
	pollWC    [16]WC     // the measured polls' (in e for the same reason: a local array would be allocated)
}

const (
	mlx5EmuCQSize   = 256
	mlx5CQEReq      = 0    // MLX5_CQE_REQ
	mlx5CQERespSend = 2    // MLX5_CQE_RESP_SEND
	mlx5OpcodeSend  = 0x0a // MLX5_OPCODE_SEND
)

// mlx5HostBytes views n bytes at an address the provider gave the fake kernel (memory of this process).
func mlx5HostBytes(addr uint64, n int) []byte {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n)
}

// objects answers the provider's UAR object commands (MLX5_IB_METHOD_UAR_OBJ_ALLOC / _DESTROY) as the kernel does.
func (e *mlx5Emu) objects(cmd *rawcmd.Cmd, create bool) error {
	if !create {
		return nil
	}
	if cmd.Hdr.ObjectId != abi.MLX5_IB_OBJECT_UAR || cmd.Hdr.MethodId != abi.MLX5_IB_METHOD_UAR_OBJ_ALLOC {
		return unix.EINVAL
	}
	e.next++
	attrs := cmd.Attrs[:cmd.NumAttrs()]
	for i := range attrs {
		a := &attrs[i]
		switch a.AttrId {
		case abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE:
			a.Data = uint64(e.next)
		case abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_OFFSET:
			// 0: a shared mapping of /dev/zero is a new zeroed object of the mapping's length, and a page past
			// its offset 0 faults (SIGBUS). Every UAR page is its own memory all the same.
			binary.NativeEndian.PutUint64(mlx5HostBytes(a.Data, 8), 0)
		case abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_MMAP_LENGTH:
			binary.NativeEndian.PutUint32(mlx5HostBytes(a.Data, 4), 4096)
		case abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_PAGE_ID:
			binary.NativeEndian.PutUint32(mlx5HostBytes(a.Data, 4), e.next)
		}
	}
	return nil
}

func newMlx5Emu(tb testing.TB, td bool) *mlx5Emu {
	tb.Helper()
	drv, ok := provider.Lookup(abi.RDMA_DRIVER_MLX5)
	if !ok {
		tb.Fatal("mlx5 provider not registered")
	}
	zero, err := unix.Open("/dev/zero", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		tb.Skipf("no /dev/zero for the UAR pages: %v", err)
	}
	e := &mlx5Emu{tb: tb, zero: zero, next: 0x100}
	tb.Cleanup(func() { unix.Close(zero) })
	dev := &provider.Device{Name: "mlx5_emu", FD: zero, DriverID: abi.RDMA_DRIVER_MLX5, ABI: 1, PageSize: 4096,
		Objects: e.objects}
	e.prov, err = drv.AllocContext(dev, func(in, out []byte) error {
		resp := abi.Mlx5IbAllocUcontextResp{QpTabSize: 1 << 18, BfRegSize: 512, CacheLineSize: 64,
			MaxSqDescSz: 512, MaxRqDescSz: 512, MaxSendWqebb: 1 << 15, MaxRecvWr: 1 << 15, MaxSrqRecvWr: 1 << 15,
			NumPorts: 1, CqeVersion: 1, CmdsSuppUhw: 3, LogUarSize: 12, NumUarsPerPage: 1}
		copy(out, rawcmd.Bytes(&resp))
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	pd, err := e.prov.AllocPD(func(in, out []byte) error {
		copy(out, rawcmd.Bytes(&abi.Mlx5IbAllocPdResp{Pdn: 1}))
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	var dom provider.ParentDomain
	if td {
		t, err := e.prov.(provider.TDAllocator).AllocTD()
		if err != nil {
			tb.Fatal(err)
		}
		if dom, err = e.prov.(interface {
			AllocParentDomain(provider.ParentDomainParams) (provider.ParentDomain, error)
		}).AllocParentDomain(provider.ParentDomainParams{PD: pd, TD: t}); err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { // after the QP and CQ (cleanups run last first)
			if err := errors.Join(dom.Close(), t.Close()); err != nil {
				tb.Errorf("close the domains: %v", err)
			}
		})
	}
	e.pcq, _, err = e.prov.CreateCQ(provider.CQParams{CQE: mlx5EmuCQSize - 1, ParentDomain: dom},
		func(r provider.CQParams, in, out []byte) (provider.CQResult, error) {
			var req abi.Mlx5IbCreateCq
			copy(rawcmd.Bytes(&req), in)
			if r.CQE+1 != mlx5EmuCQSize {
				return provider.CQResult{}, fmt.Errorf("CQ of %d entries", r.CQE+1)
			}
			e.cqBuf = mlx5HostBytes(req.BufAddr, mlx5EmuCQSize*64)
			e.cqn = e.next + 1
			e.next++
			copy(out, rawcmd.Bytes(&abi.Mlx5IbCreateCqResp{Cqn: e.cqn}))
			return provider.CQResult{CQE: r.CQE, Handle: e.cqn}, nil
		})
	if err != nil {
		tb.Fatal(err)
	}
	// libmlx5emu's QP: RC, 64 send WRs of up to 4 SGEs or 128 inline bytes, 64 receives of one SGE.
	cap := verbs.QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 4, MaxRecvSGE: 1, MaxInlineData: 128}
	pqp, qres, err := e.prov.CreateQP(provider.QPParams{Type: verbs.QPTypeRC, Cap: cap, SendCQ: e.pcq,
		RecvCQ: e.pcq, ParentDomain: dom},
		func(r provider.QPParams, in, out []byte) (provider.QPResult, error) {
			var req abi.Mlx5IbCreateQp
			copy(rawcmd.Bytes(&req), in)
			e.uidx, e.qpn = req.Uidx, 0x1234
			e.unaligned = e.unaligned || req.BufAddr%64 != 0
			copy(out, rawcmd.Bytes(&abi.Mlx5IbCreateQpResp{}))
			return provider.QPResult{QPN: e.qpn, Cap: r.Cap, Handle: 1}, nil
		})
	if err != nil {
		tb.Fatal(err)
	}
	e.qpCap = qres.Cap
	for _, s := range []verbs.QPState{verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS} {
		pqp.StateChanged(s)
	}
	tb.Cleanup(func() {
		pqp.Destroyed()
		e.pcq.Destroyed()
		if err := e.prov.Close(); err != nil {
			tb.Errorf("close the provider context: %v", err)
		}
	})
	c := &Context{prov: e.prov, fd: -1, dpErrs: newDataPathErrors(dev.Name)}
	c.dev.Name, c.dev.DriverID = dev.Name, DriverMLX5
	e.cq = &CQ{ctx: c, prov: e.pcq, handle: e.cqn, cqe: mlx5EmuCQSize - 1}
	e.qp = &QP{ctx: c, prov: pqp, qpn: e.qpn, handle: 1, state: QPStateRTS}

	// The streams of libmlx5emu's harness (make_wrs) and of the hw package's newLibmlx5Streams.
	e.pl = make([]byte, 256)
	for i := range e.pl {
		e.pl[i] = byte(i*7 + 3)
	}
	inl := []SGE{{Addr: uint64(uintptr(unsafe.Pointer(&e.pl[0]))), Length: 32, LKey: 0x11223344}}
	s1 := []SGE{{Addr: 0x00007f0011223340, Length: 0x1000, LKey: 0x11223344}}
	e.inline = []SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: SendSignaled | SendInline, SGL: inl}}
	e.doorbell = []SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: SendSignaled, SGL: s1}}
	e.list16 = make([]SendWR, 16)
	for i := range e.list16 {
		e.list16[i] = SendWR{WRID: uint64(i), Opcode: WRRDMAWrite, RemoteAddr: 0x1000, RKey: 7, SGL: s1}
	}
	e.list16[15].Flags = SendSignaled
	e.recv = []RecvWR{{WRID: 1, SGL: s1}}
	return e
}

// extend makes the QP and CQ those of the extended API, as CreateQP with SendOps and CreateCQEx leave them (the
// provider's objects are the same: neither passes the provider anything more): the QP's builder may post SEND
// and RDMA WRITE with the granted capacities, and the CQ is read with StartPoll … EndPoll, without the poll lock
// when single (CQSingleThreaded).
func (e *mlx5Emu) extend(single bool) {
	e.qp.sendOps, e.qp.cap = SendOpSend|SendOpRDMAWrite, e.qpCap
	x := &cqCursor{locking: !single, wcFlags: WCStandardFlags}
	if single {
		x.flags = CQSingleThreaded
	}
	e.cq.ex = x
}

// The measured functions of the extended API's streams (mlx5bench's callgrind toggles on them, as on the C
// harness's op_wr_inline, op_wr_doorbell, op_wr_list16 and op_pollex): one chain built and posted, one extended
// poll of up to n completions.

//go:noinline
func mlx5WRInline(qp *QP, pl []byte) error {
	b := qp.StartWR()
	b.Send(1, SendSignaled).SetInlineData(pl)
	return b.Complete()
}

//go:noinline
func mlx5WRDoorbell(qp *QP) error {
	b := qp.StartWR()
	b.Send(1, SendSignaled).SetSGE(0x11223344, 0x00007f0011223340, 0x1000)
	return b.Complete()
}

//go:noinline
func mlx5WRList16(qp *QP) error {
	b := qp.StartWR()
	for i := range 16 {
		var f SendFlags
		if i == 15 {
			f = SendSignaled
		}
		b.RDMAWrite(uint64(i), f, 7, 0x1000).SetSGE(0x11223344, 0x00007f0011223340, 0x1000)
	}
	return b.Complete()
}

// mlx5PollEx reads up to n completions with StartPoll, NextPoll and EndPoll; of each it reads WRID, Status,
// Opcode and ByteLen (the fields the C harness's op_pollex reads). It returns how many it read (their sum added
// to *sum), or -1 for a failed completion.
//
//go:noinline
func mlx5PollEx(cq *CQ, n int, sum *uint64) (int, error) {
	wc, err := cq.StartPoll()
	if wc == nil {
		return 0, err
	}
	got := 0
	var s uint64
	for {
		if wc.Status != verbs.WCSuccess {
			got = -1
			break
		}
		s += wc.WRID + uint64(wc.Opcode) + uint64(wc.ByteLen)
		got++
		if got == n {
			break
		}
		if wc, err = cq.NextPoll(); wc == nil {
			break
		}
	}
	cq.EndPoll()
	*sum += s
	return got, err
}

// putCQE writes CQE number n into the ring as the device does (libmlx5emu's put_cqe): the fields, then op_own
// with the owner bit of pass n / size.
func (e *mlx5Emu) putCQE(n uint32, opcode, wqeOpcode byte, wqeCounter uint16, byteCnt uint32) {
	c := e.cqBuf[(n%mlx5EmuCQSize)*64:][:64]
	clear(c)
	binary.BigEndian.PutUint32(c[32:], e.uidx)
	binary.BigEndian.PutUint32(c[44:], byteCnt)
	binary.BigEndian.PutUint32(c[56:], uint32(wqeOpcode)<<24|e.qpn)
	binary.BigEndian.PutUint16(c[60:], wqeCounter)
	c[63] = opcode<<4 | byte(n/mlx5EmuCQSize&1)
}

// consume polls want completions through the provider (not the measured CQ.Poll).
func (e *mlx5Emu) consume(want int) error {
	if e.wc == nil {
		e.wc = make([]verbs.WC, 16)
	}
	for got := 0; got < want; {
		n, st := e.pcq.Poll(e.wc[:min(16, want-got)])
		if st != provider.OK || n <= 0 {
			return fmt.Errorf("retire: poll returned %d, %v after %d of %d CQEs", n, st, got, want)
		}
		for _, w := range e.wc[:n] {
			if w.Status != verbs.WCSuccess {
				return fmt.Errorf("retire: completion status %v", w.Status)
			}
		}
		got += n
	}
	return nil
}

// run runs n operations of op; with ns set it times the batches (less tc, the cost of an empty timed region)
// and returns the total there.
func (e *mlx5Emu) run(op string, n int, ns *time.Duration) error {
	var tc time.Duration
	if ns != nil {
		tc = mlx5TimerCost()
	}
	var t time.Time
	start := func() {
		if ns != nil {
			t = time.Now()
		}
	}
	stop := func() {
		if ns != nil {
			*ns += time.Since(t) - tc
		}
	}
	switch op {
	case "wr-inline", "wr-doorbell", "wr-list16":
		batch, per := 32, 1
		if op == "wr-list16" {
			batch, per = 4, 16
		}
		pl := e.pl[:32]
		for done := 0; done < n; {
			k := min(n-done, batch)
			start()
			for range k {
				var err error
				switch op {
				case "wr-inline":
					err = mlx5WRInline(e.qp, pl)
				case "wr-doorbell":
					err = mlx5WRDoorbell(e.qp)
				default:
					err = mlx5WRList16(e.qp)
				}
				if err != nil {
					return err
				}
			}
			stop()
			done += k
			e.sqIdx += uint16(k * per)
			e.putCQE(e.cqN, mlx5CQEReq, mlx5OpcodeSend, e.sqIdx-1, 0) // retires every WQE up to it
			e.cqN++
			if err := e.consume(1); err != nil {
				return err
			}
		}
	case "pollex-send", "pollex-recv":
		for i := uint32(0); i < mlx5EmuCQSize; i++ {
			if op == "pollex-recv" {
				e.putCQE(i, mlx5CQERespSend, 0, uint16(i), 64)
			} else {
				e.putCQE(i, mlx5CQEReq, mlx5OpcodeSend, uint16(i), 0)
			}
		}
		var sum uint64
		for done := 0; done < n; {
			k := min(n-done, mlx5EmuCQSize/16)
			bad := false
			start()
			for range k {
				got, err := mlx5PollEx(e.cq, 16, &sum)
				bad = bad || got != 16 || err != nil
			}
			stop()
			if bad {
				return fmt.Errorf("extended poll read fewer than 16 CQEs")
			}
			done += k
			e.cqN += uint32(16 * k)
			if e.cqN%mlx5EmuCQSize == 0 { // the device wrote the next pass
				for i := 63; i < len(e.cqBuf); i += 64 {
					e.cqBuf[i] ^= 1
				}
			}
		}
	case "inline", "doorbell", "list16":
		w, batch, per := e.inline, 32, 1
		switch op {
		case "doorbell":
			w = e.doorbell
		case "list16":
			w, batch, per = e.list16, 4, 16
		}
		for done := 0; done < n; {
			k := min(n-done, batch)
			start()
			for range k {
				if _, err := e.qp.PostSend(w); err != nil {
					return err
				}
			}
			stop()
			done += k
			e.sqIdx += uint16(k * per)
			e.putCQE(e.cqN, mlx5CQEReq, mlx5OpcodeSend, e.sqIdx-1, 0) // retires every WQE up to it
			e.cqN++
			if err := e.consume(1); err != nil {
				return err
			}
		}
	case "recv":
		for done := 0; done < n; {
			k := min(n-done, 32)
			start()
			for range k {
				if _, err := e.qp.PostRecv(e.recv); err != nil {
					return err
				}
			}
			stop()
			done += k
			for range k {
				e.putCQE(e.cqN, mlx5CQERespSend, 0, 0, 64)
				e.cqN++
			}
			if err := e.consume(k); err != nil {
				return err
			}
		}
	case "pollsend", "pollrecv":
		for i := uint32(0); i < mlx5EmuCQSize; i++ {
			if op == "pollrecv" {
				e.putCQE(i, mlx5CQERespSend, 0, uint16(i), 64)
			} else {
				e.putCQE(i, mlx5CQEReq, mlx5OpcodeSend, uint16(i), 0)
			}
		}
		wcs := &e.pollWC
		for done := 0; done < n; {
			k := min(n-done, mlx5EmuCQSize/16)
			bad := false
			start()
			for range k {
				got, err := e.cq.Poll(wcs[:])
				bad = bad || got != 16 || err != nil
			}
			stop()
			if bad || wcs[0].Status != verbs.WCSuccess {
				return fmt.Errorf("poll returned fewer than 16 CQEs")
			}
			done += k
			e.cqN += uint32(16 * k)
			if e.cqN%mlx5EmuCQSize == 0 { // the device wrote the next pass
				for i := 63; i < len(e.cqBuf); i += 64 {
					e.cqBuf[i] ^= 1
				}
			}
		}
	default:
		return fmt.Errorf("unknown operation %q", op)
	}
	return nil
}

// mlx5TimerCost is the mean time of an empty timed region.
func mlx5TimerCost() time.Duration {
	var sum time.Duration
	for range 10000 {
		t := time.Now()
		sum += time.Since(t)
	}
	return sum / 10000
}

func benchMlx5Public(b *testing.B, td bool, op string) {
	e := newMlx5Emu(b, td)
	units := b.N
	switch op {
	case "list16", "pollsend", "pollrecv", "wr-list16", "pollex-send", "pollex-recv":
		units = 16 * b.N
	}
	if strings.HasPrefix(op, "wr-") || strings.HasPrefix(op, "pollex-") {
		e.extend(td)
	}
	var ns time.Duration
	b.ReportAllocs()
	runtime.LockOSThread() // one thread: mlx5bench sums callgrind's profiles of the threads that ran the ops
	defer runtime.UnlockOSThread()
	b.ResetTimer()
	if err := e.run(op, b.N, &ns); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(ns.Nanoseconds())/float64(units), "ns/unit")
}
