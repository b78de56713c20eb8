package uverbs

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

// recQP records what the builder posts; refuse, when set, refuses request refuseAt with that status.
type recQP struct {
	nopQP
	posted   []verbs.SendWR
	inline   [][]byte // each posted request's inline bytes, read at post time as a provider copies them
	calls    int
	refuse   provider.Status
	refuseAt int
}

func (q *recQP) PostSendAll(wrs []verbs.SendWR) (int, provider.Status) {
	q.calls++
	if q.refuse != provider.OK {
		return q.refuseAt, q.refuse
	}
	for _, wr := range wrs {
		var inl []byte
		if wr.Flags&verbs.SendInline != 0 {
			for _, s := range wr.SGL {
				var p unsafe.Pointer
				*(*uintptr)(unsafe.Pointer(&p)) = uintptr(s.Addr) // as rxe's addrPointer
				inl = append(inl, unsafe.Slice((*byte)(p), s.Length)...)
			}
		}
		q.inline = append(q.inline, inl)
		wr.SGL = append([]verbs.SGE(nil), wr.SGL...)
		q.posted = append(q.posted, wr)
	}
	return len(wrs), provider.OK
}

func builderQP(ops SendOps, cap QPCap) (*QP, *recQP) {
	rq := &recQP{}
	c := &Context{dpErrs: newDataPathErrors("fake0")}
	c.dev.Name = "fake0"
	return &QP{ctx: c, prov: rq, qpn: 0x11, cap: cap, sendOps: ops}, rq
}

var builderCap = QPCap{MaxSendWR: 4, MaxSendSGE: 2, MaxInlineData: 16}

// Every operation and setter lands in the work request PostSend would take for it, and the chain is posted in
// one call.
func TestWRBuilderChain(t *testing.T) {
	qp, rq := builderQP(verbs.SendOps(sendOpsKnown), QPCap{MaxSendWR: 16, MaxSendSGE: 2, MaxInlineData: 16})
	ah := &AH{data: &AHData{}}
	mr := &MR{lkey: 0x77}
	mw := &MW{rkey: 0x500}
	sgl := []SGE{{Addr: 1, Length: 2, LKey: 3}, {Addr: 4, Length: 5, LKey: 6}}
	hdr := []byte("header")
	b := qp.StartWR()
	b.Send(1, SendSignaled).SetSGE(9, 0x1000, 64)
	b.SendImm(2, 0, 0xabcd).SetSGEList(sgl).SetUDAddr(ah, 0x22, 0x33)
	b.SendInv(3, 0, 0x44)
	b.RDMAWrite(4, SendFence, 0x55, 0x2000).SetInlineData(hdr)
	b.RDMAWriteImm(5, 0, 0x56, 0x3000, 7).SetInlineDataList([][]byte{[]byte("ab"), nil, []byte("cd")})
	b.RDMARead(6, 0, 0x57, 0x4000)
	b.AtomicCmpSwp(7, 0, 0x58, 0x5000, 10, 20)
	b.AtomicFetchAdd(8, 0, 0x59, 0x6000, 30)
	b.AtomicWrite(9, 0, 0x5a, 0x7000, 40)
	b.Flush(10, 0, 0x5b, 0x8000, 512, FlushPersistent, FlushMR)
	b.BindMW(11, 0, mw, 0x501, MWBindInfo{MR: mr, Addr: 0x9000, Length: 100, Access: AccessRemoteWrite})
	b.LocalInv(12, 0, 0x501)
	if b.Len() != 12 {
		t.Fatalf("Len %d", b.Len())
	}
	sgl[0].Addr, hdr[0] = 99, 'X' // the builder copied both
	if err := b.Complete(); err != nil {
		t.Fatal(err)
	}
	if rq.calls != 1 || len(rq.posted) != 12 {
		t.Fatalf("%d calls, %d requests", rq.calls, len(rq.posted))
	}
	p := rq.posted
	want := []struct {
		op    WROpcode
		flags SendFlags
	}{{WRSend, SendSignaled}, {WRSendWithImm, 0}, {WRSendWithInv, 0}, {WRRDMAWrite, SendFence | SendInline},
		{WRRDMAWriteWithImm, SendInline}, {WRRDMARead, 0}, {WRAtomicCmpAndSwp, 0}, {WRAtomicFetchAndAdd, 0},
		{WRAtomicWrite, 0}, {WRFlush, 0}, {WRBindMW, 0}, {WRLocalInv, 0}}
	for i, w := range want {
		if p[i].WRID != uint64(i+1) || p[i].Opcode != w.op || p[i].Flags != w.flags {
			t.Errorf("request %d: %+v, want WRID %d %v %v", i, p[i], i+1, w.op, w.flags)
		}
	}
	check := func(cond bool, what string) {
		t.Helper()
		if !cond {
			t.Errorf("%s", what)
		}
	}
	check(len(p[0].SGL) == 1 && p[0].SGL[0] == SGE{Addr: 0x1000, Length: 64, LKey: 9}, "SetSGE")
	check(len(p[1].SGL) == 2 && p[1].SGL[0] == SGE{Addr: 1, Length: 2, LKey: 3} && p[1].SGL[1] == sgl[1], "SetSGEList copied")
	check(p[1].Imm == 0xabcd && p[1].AH == ah.data && p[1].RemoteQPN == 0x22 && p[1].RemoteQKey == 0x33, "SendImm, SetUDAddr")
	check(p[2].Imm == 0x44, "SendInv")
	check(p[3].RKey == 0x55 && p[3].RemoteAddr == 0x2000 && string(rq.inline[3]) == "header", "RDMAWrite inline")
	check(p[4].Imm == 7 && string(rq.inline[4]) == "abcd", "RDMAWriteImm inline list")
	check(p[5].RKey == 0x57 && p[5].RemoteAddr == 0x4000 && len(p[5].SGL) == 0, "RDMARead")
	check(p[6].CompareAdd == 10 && p[6].Swap == 20, "AtomicCmpSwp")
	check(p[7].CompareAdd == 30, "AtomicFetchAdd")
	check(p[8].Swap == 40 && p[8].RemoteAddr == 0x7000, "AtomicWrite")
	check(p[9].Flush == Flush{Length: 512, Type: FlushPersistent, Level: FlushMR}, "Flush")
	check(p[10].Bind == MWBind{MWRKey: 0x500, NewRKey: 0x501, MRLKey: 0x77, Addr: 0x9000, Length: 100, Access: uint32(AccessRemoteWrite)}, "BindMW")
	check(p[11].Imm == 0x501, "LocalInv")

	// No request of the posted chain keeps the AH referenced.
	for i, wr := range qp.wrb.wrs[:cap(qp.wrb.wrs)] {
		if wr.AH != nil {
			t.Errorf("request slot %d still holds an AH after Complete", i)
		}
	}
	// The builder is free again, and empty.
	b = qp.StartWR()
	if b.Len() != 0 {
		t.Fatalf("a new chain starts with %d requests", b.Len())
	}
	b.Abort()
	if rq.calls != 1 {
		t.Fatal("Abort posted")
	}
}

// A problem found while building is reported by Complete with the request's index, and nothing is posted.
func TestWRBuilderRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ops   SendOps
		build func(b *WRBuilder)
		want  error
		index string
	}{
		{"op not in SendOps", SendOpSend, func(b *WRBuilder) { b.Send(1, 0); b.RDMAWrite(2, 0, 1, 2) }, unix.EINVAL, "request 1 "},
		{"setter first", SendOpSend, func(b *WRBuilder) { b.SetSGE(1, 2, 3) }, unix.EINVAL, "request 0 "},
		{"too many SGEs", SendOpSend, func(b *WRBuilder) { b.Send(1, 0).SetSGEList(make([]SGE, 3)) }, unix.EINVAL, "request 0 "},
		{"inline too long", SendOpSend, func(b *WRBuilder) { b.Send(1, 0).SetInlineData(make([]byte, 17)) }, unix.EINVAL, "request 0 "},
		{"inline list too long", SendOpSend, func(b *WRBuilder) {
			b.Send(1, 0).SetInlineDataList([][]byte{make([]byte, 9), make([]byte, 8)})
		}, unix.EINVAL, "request 0 "},
		{"more than the queue", SendOpSend, func(b *WRBuilder) {
			for i := 0; i < 5; i++ {
				b.Send(uint64(i), 0)
			}
		}, unix.ENOMEM, "request 4 "},
		{"UD address without AH", SendOpSend, func(b *WRBuilder) { b.Send(1, 0).SetUDAddr(nil, 1, 2) }, unix.EINVAL, "request 0 "},
		{"bind without window", SendOpBindMW | SendOpSend, func(b *WRBuilder) { b.BindMW(1, 0, nil, 1, MWBindInfo{}) }, unix.EINVAL, "request 0 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			qp, rq := builderQP(tc.ops, builderCap)
			b := qp.StartWR()
			tc.build(b)
			b.Send(9, 0) // ignored after the first problem
			err := b.Complete()
			if !errors.Is(err, tc.want) {
				t.Fatalf("Complete: %v, want %v", err, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.Device != "fake0" || !contains(e.Op, tc.index) {
				t.Errorf("%v: want the device and %q", err, tc.index)
			}
			if rq.calls != 0 {
				t.Errorf("posted after a building error")
			}
			if err := qp.StartWR().Send(1, 0).Complete(); err != nil || rq.calls != 1 { // the next chain is clean
				t.Errorf("next chain: %v (%d calls)", err, rq.calls)
			}
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// A request the provider refuses fails the chain with its index and the provider's errno; a QP without
// SendOps, and a builder used outside StartWR … Complete, are EINVAL; a closed QP is ErrClosed.
func TestWRBuilderCompleteErrors(t *testing.T) {
	qp, rq := builderQP(SendOpSend, builderCap)
	rq.refuse, rq.refuseAt = provider.QueueFull, 2
	err := qp.StartWR().Send(1, 0).Send(2, 0).Send(3, 0).Complete()
	var e *Error
	if !errors.Is(err, unix.ENOMEM) || !errors.As(err, &e) || !contains(e.Op, "request 2 of 3 (SEND)") {
		t.Errorf("refused chain: %v", err)
	}
	rq.refuse = provider.OK

	plain, _ := builderQP(0, builderCap)
	if err := plain.StartWR().Send(1, 0).Complete(); !errors.Is(err, unix.EINVAL) {
		t.Errorf("QP without SendOps: %v", err)
	}
	b := qp.StartWR()
	b.Abort()
	if err := b.Send(1, 0).Complete(); !errors.Is(err, unix.EINVAL) {
		t.Errorf("builder after Abort: %v", err)
	}
	b = qp.StartWR() // the lock was released by each of the above
	b.Abort()

	qp.life.close(func() error { return nil })
	if err := qp.StartWR().Send(1, 0).Complete(); !errors.Is(err, ErrClosed) {
		t.Errorf("closed QP: %v", err)
	}
}

// CreateQP's check of SendOps: unknown bits EINVAL, operations the provider does not build ErrNotSupported
// (all of them for a provider without the capability).
func TestCheckSendOps(t *testing.T) {
	c := &Context{prov: sendOpsCtx{}}
	for _, tc := range []struct {
		t    QPType
		ops  SendOps
		want error
	}{
		{QPTypeRC, 0, nil},
		{QPTypeRC, SendOpSend | SendOpRDMAWrite, nil},
		{QPTypeUD, SendOpRDMAWrite, ErrNotSupported},
		{QPTypeRC, SendOpTSO, ErrNotSupported},
		{QPTypeRC, 1 << 20, unix.EINVAL},
	} {
		if err := c.checkSendOps(tc.t, tc.ops); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%v %v: %v, want %v", tc.t, tc.ops, err, tc.want)
		}
	}
	if err := (&Context{prov: plainCtx{}}).checkSendOps(QPTypeRC, SendOpSend); !errors.Is(err, ErrNotSupported) {
		t.Errorf("provider without the capability: %v", err)
	}
}

type plainCtx struct{ provider.Context }

type sendOpsCtx struct{ provider.Context }

func (sendOpsCtx) SendOps(t verbs.QPType) verbs.SendOps {
	if t == verbs.QPTypeRC {
		return SendOpSend | SendOpRDMAWrite
	}
	return SendOpSend
}

// A chain built and completed allocates nothing once the builder exists.
func TestWRBuilderAllocations(t *testing.T) {
	qp, _ := builderQP(SendOpSend|SendOpRDMAWrite, builderCap)
	qp.prov = nopQP{} // recQP's recording allocates
	hdr := make([]byte, 8)
	qp.StartWR().Abort()
	n := testing.AllocsPerRun(100, func() {
		b := qp.StartWR()
		b.Send(1, SendSignaled).SetInlineData(hdr)
		b.RDMAWrite(2, 0, 3, 4).SetSGE(5, 6, 7)
		if err := b.Complete(); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("%v allocations per chain", n)
	}
}
