package hw

import (
	"github.com/goverbs/goverbs/internal/provider"

	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/mmio"
	"github.com/goverbs/goverbs/providers/mlx5/internal/cmd/gengolden/golden"
)

// loadGolden reads testdata/golden.txt into name -> bytes and returns a function that marks a vector as used.
func loadGolden(t *testing.T) map[string][]byte {
	t.Helper()
	return loadGoldenRaw(t)
}

func loadGoldenRaw(t testing.TB) map[string][]byte {
	t.Helper()
	f, err := os.ReadFile("testdata/golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	sc := bufio.NewScanner(bytes.NewReader(f))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, hx, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("bad golden line %q", line)
		}
		b, err := hex.DecodeString(hx)
		if err != nil {
			t.Fatalf("golden %s: %v", name, err)
		}
		m[name] = b
	}
	return m
}

// goldenSet tracks which vectors a test consumed so that every generated vector is checked by some test.
type goldenSet struct {
	t    *testing.T
	m    map[string][]byte
	used map[string]bool
}

func newGoldenSet(t *testing.T) *goldenSet {
	return &goldenSet{t: t, m: loadGolden(t), used: map[string]bool{}}
}

func (g *goldenSet) get(name string) []byte {
	g.t.Helper()
	b, ok := g.m[name]
	if !ok {
		g.t.Fatalf("golden vector %q missing; run go generate ./providers/mlx5/internal/hw", name)
	}
	g.used[name] = true
	return b
}

func (g *goldenSet) checkAllUsed(prefixes ...string) {
	g.t.Helper()
	for name := range g.m {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) && !g.used[name] {
				g.t.Errorf("golden vector %q is not checked by any test case", name)
			}
		}
	}
}

// payload is the byte pattern the C generator inlines and scatters: payload[i] = i*7+3.
func payload() []byte {
	p := make([]byte, 256)
	for i := range p {
		p[i] = byte(i*7 + 3)
	}
	return p
}

// aligned returns an n-byte slice whose first byte is 64-byte aligned.
func aligned(n int) []byte {
	b := make([]byte, n+64)
	off := (64 - int(addrOf(b)%64)) % 64
	return b[off : off+n : off+n]
}

const (
	gQPN  = 0xabc123
	gCQN  = 0x000456
	gUIdx = 7
)

var (
	gS1 = SGE{Length: 0x1000, LKey: 0x11223344, Addr: 0x00007f0011223340}
	gS2 = SGE{Length: 0x40, LKey: 0x55667788, Addr: 0x00007f00aabbcc00}
	gS3 = SGE{Length: 0x8, LKey: 0x99aabbcc, Addr: 0x00007f0000001000}
	gS0 = SGE{Length: 0, LKey: 0xdeadbeef, Addr: 0x00007f00deadbe00}
)

// testSQ is a send queue over an 8-block ring with a 256-byte BlueFlame register.
type testSQ struct {
	sq   *SendQueue
	ring []byte
	dbr  []byte
	reg  []byte
	bf   *BFReg
}

func newTestSQ(t testing.TB, typ QPType, bfSize int, shared bool) *testSQ {
	return newTestSQSized(t, typ, bfSize, shared, 2, 4, 128)
}

func newTestSQSized(t testing.TB, typ QPType, bfSize int, shared bool, maxPost, maxSGE, maxInline int) *testSQ {
	t.Helper()
	ts := &testSQ{ring: aligned(8 * 64), dbr: aligned(8), reg: aligned(max(2*bfSize, 8))}
	r, err := mmio.RegFromBytes(ts.reg)
	if err != nil {
		t.Fatal(err)
	}
	ts.bf, err = NewBFReg(r, bfSize, shared)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewDoorbellRecord(ts.dbr)
	if err != nil {
		t.Fatal(err)
	}
	ts.sq, err = NewSendQueue(SendQueueConfig{Buf: ts.ring, WQECount: 8,
		QPN: gQPN, Type: typ, DBR: d, BF: ts.bf, Atomics: true, MaxPost: maxPost, MaxSGE: maxSGE, MaxInline: maxInline})
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func ibAH() *AHData {
	return NewIBAH(AHAttr{DLID: 0x17, SL: 5, SrcPathBits: 3, StaticRate: 3 /* IBV_RATE_10_GBPS */})
}

func roceAH(t testing.TB) *AHData {
	ah, err := NewRoCEAH(AHAttr{SL: 3, IsGlobal: true, GRH: GRH{
		DGID:      [16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 233, 14: 0, 15: 2},
		FlowLabel: 0x12345, SGIDIndex: 1, HopLimit: 64, TrafficClass: 0x20,
	}}, [6]byte{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}, true, 0xC123)
	if err != nil {
		t.Fatal(err)
	}
	return ah
}

// TestGoldenWQEs posts each shape through SendQueue and compares the ring and the doorbell record with the bytes
// rdma-core's mlx5dv.h helpers produce.
func TestGoldenWQEs(t *testing.T) {
	g := newGoldenSet(t)
	pl := payload()
	base := addrOf(pl)
	sig := verbs.SendSignaled
	cases := []struct {
		name    string
		typ     QPType
		curPost uint32
		wrs     []SendWR
	}{
		{"rc_send", QPTypeRC, 0, []SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: sig, SGL: []SGE{gS1}}}},
		{"rc_send_imm_solicited", QPTypeRC, 0, []SendWR{{Opcode: verbs.WRSendWithImm, Flags: sig | verbs.SendSolicited,
			Imm: 0xdeadbeef, SGL: []SGE{gS2}}}},
		{"rc_send_inv", QPTypeRC, 0, []SendWR{{Opcode: verbs.WRSendWithInv, Flags: sig, Imm: 0x00c0ffee,
			SGL: []SGE{gS1}}}},
		{"rc_send_zero_len_sge_unsignaled", QPTypeRC, 0, []SendWR{{Opcode: verbs.WRSend, SGL: []SGE{gS1, gS0, gS2}}}},
		{"rc_rdma_write_fence", QPTypeRC, 0, []SendWR{{Opcode: verbs.WRRDMAWrite, Flags: sig | verbs.SendFence,
			RemoteAddr: 0x0000123456789a00, RKey: 0x0badf00d, SGL: []SGE{gS1, gS2}}}},
		{"rc_rdma_write_imm", QPTypeRC, 0, []SendWR{{Opcode: verbs.WRRDMAWriteWithImm, Flags: sig, Imm: 0x01020304,
			RemoteAddr: 0x0000123456789a00, RKey: 0x0badf00d, SGL: []SGE{gS1}}}},
		{"rc_rdma_read", QPTypeRC, 0, []SendWR{{Opcode: verbs.WRRDMARead, Flags: sig,
			RemoteAddr: 0x0000123456789a00, RKey: 0x0badf00d, SGL: []SGE{gS1}}}},
		{"rc_atomic_cmp_swap", QPTypeRC, 0, []SendWR{{Opcode: verbs.WRAtomicCmpAndSwp, Flags: sig,
			RemoteAddr: 0x0000123456789a08, RKey: 0x0badf00d, Swap: 0x1111111122222222, CompareAdd: 0x3333333344444444,
			SGL: []SGE{gS3}}}},
		{"rc_atomic_fetch_add", QPTypeRC, 0, []SendWR{{Opcode: verbs.WRAtomicFetchAndAdd, Flags: sig,
			RemoteAddr: 0x0000123456789a08, RKey: 0x0badf00d, CompareAdd: 5, SGL: []SGE{gS1}}}},
		{"rc_send_inline", QPTypeRC, 0, []SendWR{{Opcode: verbs.WRSend, Flags: sig | verbs.SendInline,
			SGL: []SGE{{Addr: base, Length: 12}, {Addr: base + 100, Length: 8}}}}},
		{"rc_send_inline_wrap", QPTypeRC, 0x1ffff, []SendWR{{Opcode: verbs.WRSend, Flags: sig | verbs.SendInline,
			SGL: []SGE{{Addr: base + 7, Length: 100}}}}},
		{"rc_rdma_write_data_wrap", QPTypeRC, 7, []SendWR{{Opcode: verbs.WRRDMAWrite, Flags: sig,
			RemoteAddr: 0x0000123456789a00, RKey: 0x0badf00d, SGL: []SGE{gS1, gS2, gS3, gS1}}}},
		{"uc_rdma_write", QPTypeUC, 0, []SendWR{{Opcode: verbs.WRRDMAWrite, Flags: sig, RemoteAddr: 0x1000, RKey: 0x42,
			SGL: []SGE{gS2}}}},
		{"rc_send_batch", QPTypeRC, 3, []SendWR{{Opcode: verbs.WRSend, SGL: []SGE{gS1}},
			{Opcode: verbs.WRSend, Flags: sig, SGL: []SGE{gS2}}}},
		{"ud_send_ib", QPTypeUD, 0, []SendWR{{Opcode: verbs.WRSend, Flags: sig, AH: ibAH(), RemoteQPN: 1,
			RemoteQKey: 0x11111111, SGL: []SGE{gS2}}}},
		{"ud_send_roce_inline_imm", QPTypeUD, 0, []SendWR{{Opcode: verbs.WRSendWithImm, Flags: sig | verbs.SendInline,
			Imm: 0xfeedface, AH: roceAH(t), RemoteQPN: 0xbeef, RemoteQKey: 0x80010000,
			SGL: []SGE{{Addr: base + 40, Length: 30}}}}},
		{"ud_send_wrap", QPTypeUD, 7, []SendWR{{Opcode: verbs.WRSend, Flags: sig, AH: roceAH(t), RemoteQPN: 1,
			RemoteQKey: 0x11111111, SGL: []SGE{gS1}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := newTestSQ(t, c.typ, 256, false)
			ts.sq.curPost = c.curPost
			n, st := ts.sq.PostSend(c.wrs)
			if st != provider.OK || n != len(c.wrs) {
				t.Fatalf("PostSend = %d, %v", n, st)
			}
			if want := g.get("wqe." + c.name); !bytes.Equal(ts.ring, want) {
				t.Errorf("ring differs from golden\n got %x\nwant %x", ts.ring, want)
			}
			if want := g.get("sqdbr." + c.name); !bytes.Equal(ts.dbr[4:8], want) {
				t.Errorf("send doorbell record = %x, want %x", ts.dbr[4:8], want)
			}
			if !bytes.Equal(ts.dbr[0:4], []byte{0, 0, 0, 0}) {
				t.Errorf("receive doorbell record touched: %x", ts.dbr[0:4])
			}
		})
	}
	g.checkAllUsed("wqe.", "sqdbr.")
}

func TestGoldenRecv(t *testing.T) {
	g := newGoldenSet(t)
	ring, dbrb := aligned(2*64), aligned(8)
	dbr, _ := NewDoorbellRecord(dbrb)
	rq, err := NewRecvQueue(RecvQueueConfig{Buf: ring, WQECount: 2, WQEShift: 6, DBR: dbr, QPN: gQPN})
	if err != nil {
		t.Fatal(err)
	}
	n, st := rq.PostRecv([]RecvWR{{WRID: 1, SGL: []SGE{gS1, gS2}}, {WRID: 2, SGL: []SGE{gS0, gS3}}})
	if n != 2 || st != provider.OK {
		t.Fatalf("PostRecv = %d, %v", n, st)
	}
	if want := g.get("rq.two_wqes"); !bytes.Equal(ring, want) {
		t.Errorf("RQ ring\n got %x\nwant %x", ring, want)
	}
	if !bytes.Equal(dbrb[:8], []byte{0, 0, 0, 2, 0, 0, 0, 0}) {
		t.Errorf("doorbell record = %x, want receive counter 2", dbrb[:8])
	}

	sbuf, sdbrb := aligned(4*64), aligned(8)
	sdbr, _ := NewDoorbellRecord(sdbrb)
	srq, err := NewSRQ(SRQConfig{Buf: sbuf, WQECount: 4, WQEShift: 6, DBR: sdbr, SRQN: 9})
	if err != nil {
		t.Fatal(err)
	}
	if n, st := srq.PostRecv([]RecvWR{{WRID: 1, SGL: []SGE{gS1, gS2}}}); n != 1 || st != provider.OK {
		t.Fatalf("SRQ PostRecv = %d, %v", n, err)
	}
	if want := g.get("srq.one_wqe"); !bytes.Equal(sbuf, want) {
		t.Errorf("SRQ buffer\n got %x\nwant %x", sbuf, want)
	}
	if want := g.get("srqdbr.one_wqe"); !bytes.Equal(sdbrb[:4], want) {
		t.Errorf("SRQ doorbell record = %x, want %x", sdbrb[:4], want)
	}
	g.checkAllUsed("rq.", "srq.", "srqdbr.")
}

// cqEnv is a QP (uidx 7) with an SQ, an RQ and a CQ of 8 CQEs, CQE version 1.
type cqEnv struct {
	sq     *testSQ
	rq     *RecvQueue
	cq     *CQ
	cqBuf  []byte
	cqDBR  []byte
	uar    []byte
	rqBuf  []byte
	recvTo []byte // receive buffer of the posted receive
	readTo []byte // local buffer of a posted RDMA read
	qp     *QP
}

func newCQEnv(t testing.TB) *cqEnv {
	t.Helper()
	e := &cqEnv{sq: newTestSQSized(t, QPTypeRC, 256, false, 8, 1, 0), cqBuf: aligned(8 * 64), cqDBR: aligned(8), uar: aligned(4096),
		rqBuf: aligned(4 * 64), recvTo: make([]byte, 64), readTo: make([]byte, 64)}
	rqDBR, _ := NewDoorbellRecord(e.sq.dbr) // the QP's record: RQ word 0, SQ word 1
	var err error
	e.rq, err = NewRecvQueue(RecvQueueConfig{Buf: e.rqBuf, WQECount: 4, WQEShift: 6, DBR: rqDBR, QPN: gQPN})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := NewDoorbellRecord(e.cqDBR)
	u, _ := mmio.RegFromBytes(e.uar)
	e.cq, err = NewCQ(CQConfig{Buf: e.cqBuf, CQECount: 8, CQN: gCQN, DBR: d, UAR: u, CQEVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.qp = &QP{QPN: gQPN, UserIndex: gUIdx, SQ: e.sq.sq, RQ: e.rq}
	if err := e.cq.Attach(e.qp); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestGoldenCQEs places each generated CQE in a CQ and checks the work completion Poll derives from it.
func TestGoldenCQEs(t *testing.T) {
	g := newGoldenSet(t)
	pl := payload()
	sends := []SendWR{{WRID: 100, Opcode: verbs.WRSend, SGL: []SGE{gS1}}, {WRID: 101, Opcode: verbs.WRSend, SGL: []SGE{gS1}}}
	send3 := SendWR{WRID: 102, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: []SGE{gS1}}
	type tc struct {
		name  string
		read  bool // post an RDMA read into readTo first
		want  WC
		check func(t *testing.T, e *cqEnv)
	}
	recv := func(w WC) WC { w.WRID, w.QPNum = 200, gQPN; return w }
	req := func(w WC) WC { w.WRID, w.QPNum = 100, gQPN; return w }
	cases := []tc{
		{name: "req_send", want: req(WC{Opcode: verbs.WCSend})},
		{name: "req_rdma_write_imm", want: req(WC{Opcode: verbs.WCRDMAWrite, Flags: verbs.WCWithImm})},
		{name: "req_rdma_read", want: req(WC{Opcode: verbs.WCRDMARead, ByteLen: 4096})},
		{name: "req_atomic_cs", want: req(WC{Opcode: verbs.WCCompSwap, ByteLen: 8})},
		{name: "req_atomic_fa", want: req(WC{Opcode: verbs.WCFetchAdd, ByteLen: 8})},
		{name: "req_send_retires_unsignaled", want: WC{WRID: 102, QPNum: gQPN, Opcode: verbs.WCSend},
			check: func(t *testing.T, e *cqEnv) {
				if o := e.sq.sq.Outstanding(); o != 0 {
					t.Errorf("outstanding after completion of the third WQE = %d, want 0", o)
				}
			}},
		{name: "req_rdma_read_scatter", read: true, want: req(WC{Opcode: verbs.WCRDMARead, ByteLen: 24}),
			check: func(t *testing.T, e *cqEnv) {
				if !bytes.Equal(e.readTo[:24], pl[:24]) || e.readTo[24] != 0 {
					t.Errorf("scattered read data = %x, want %x", e.readTo[:25], pl[:24])
				}
			}},
		{name: "resp_send", want: recv(WC{Opcode: verbs.WCRecv, ByteLen: 100, SL: 5, SrcQP: 0xabc, SLID: 0x17,
			DLIDPathBits: 3, PKeyIndex: 3})},
		{name: "resp_send_imm", want: recv(WC{Opcode: verbs.WCRecv, Flags: verbs.WCWithImm, Imm: 0x01020304, ByteLen: 4,
			SrcQP: 1, PKeyIndex: 0x0304})},
		{name: "resp_rdma_write_imm", want: recv(WC{Opcode: verbs.WCRecvRDMAWithImm, Flags: verbs.WCWithImm,
			Imm: 0xcafef00d, ByteLen: 65536, PKeyIndex: 0xf00d})},
		{name: "resp_send_inv", want: recv(WC{Opcode: verbs.WCRecv, Flags: verbs.WCWithInv, Imm: 0xabcd1234,
			ByteLen: 10, PKeyIndex: 0x1234})},
		{name: "resp_send_grh", want: recv(WC{Opcode: verbs.WCRecv, Flags: verbs.WCWithGRH, SrcQP: 0xbeef, ByteLen: 140})},
		// With scatter-to-CQE the payload overlays ml_path and slid; rdma-core reports those bytes as they are.
		{name: "resp_send_scatter", want: recv(WC{Opcode: verbs.WCRecv, ByteLen: 24, SLID: uint16(pl[22])<<8 | uint16(pl[23]),
			DLIDPathBits: pl[17] & 0x7f}),
			check: func(t *testing.T, e *cqEnv) {
				if !bytes.Equal(e.recvTo[:24], pl[:24]) || e.recvTo[24] != 0 {
					t.Errorf("scattered receive = %x, want %x", e.recvTo[:25], pl[:24])
				}
			}},
		{name: "resp_err_wr_flush", want: recv(WC{Status: verbs.WCWRFlushErr})},
	}
	for _, s := range []struct {
		name string
		st   WCStatus
	}{
		{"local_length", verbs.WCLocLenErr}, {"local_qp_op", verbs.WCLocQPOpErr}, {"local_prot", verbs.WCLocProtErr},
		{"wr_flush", verbs.WCWRFlushErr}, {"mw_bind", verbs.WCMWBindErr}, {"bad_resp", verbs.WCBadRespErr},
		{"local_access", verbs.WCLocAccessErr}, {"remote_inval_req", verbs.WCRemInvReqErr},
		{"remote_access", verbs.WCRemAccessErr}, {"remote_op", verbs.WCRemOpErr},
		{"transport_retry_exc", verbs.WCRetryExcErr}, {"rnr_retry_exc", verbs.WCRNRRetryExcErr},
		{"remote_aborted", verbs.WCRemAbortErr}, {"unknown", verbs.WCGeneralErr},
	} {
		cases = append(cases, tc{name: "req_err_" + s.name, want: req(WC{Status: s.st, VendorErr: 0x42})})
	}
	// Each CQE is polled cold (the CQ has not seen the QP yet: parse) and warm (the QP's previous CQE was just
	// polled: successful requester CQEs then take Poll's inline path). Both must give the same completion.
	for _, c := range cases {
		for _, warm := range []bool{false, true} {
			name := c.name
			if warm {
				name += "/warm"
			}
			t.Run(name, func(t *testing.T) { checkGoldenCQE(t, g, c.name, c.read, c.want, c.check, warm, sends, send3) })
		}
	}
	g.checkAllUsed("cqe.")
}

// checkGoldenCQE places golden CQE name in a fresh CQ and polls it; warm primes the CQ's last-QP cache first.
func checkGoldenCQE(t *testing.T, g *goldenSet, name string, read bool, want WC, check func(*testing.T, *cqEnv),
	warm bool, sends []SendWR, send3 SendWR) {
	e := newCQEnv(t)
	if warm {
		if e.cq.lookup(gUIdx) != e.qp || e.cq.lastSQ != e.sq.sq {
			t.Fatal("priming the CQ's QP cache failed")
		}
	}
	if read {
		if _, st := e.sq.sq.PostSend([]SendWR{{WRID: 100, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled,
			RemoteAddr: 0x1000, RKey: 1, SGL: []SGE{{Addr: addrOf(e.readTo), Length: 32, LKey: 5}}}}); st != provider.OK {
			t.Fatal(st)
		}
	} else {
		for _, w := range []SendWR{sends[0], sends[1], send3} {
			if _, st := e.sq.sq.PostSend([]SendWR{w}); st != provider.OK {
				t.Fatal(st)
			}
		}
	}
	if _, st := e.rq.PostRecv([]RecvWR{{WRID: 200, SGL: []SGE{{Addr: addrOf(e.recvTo), Length: 32, LKey: 6}}}}); st != provider.OK {
		t.Fatal(st)
	}
	copy(e.cqBuf[0:64], g.get("cqe."+name))
	var wcs [4]WC
	for i := range wcs {
		wcs[i] = WC{WRID: 0xdead, Status: 99, VendorErr: 1, Imm: 2, SrcQP: 3, PKeyIndex: 4, SLID: 5, SL: 6, PortNum: 7}
	}
	n, st := e.cq.Poll(wcs[:])
	if st != provider.OK || n != 1 {
		t.Fatalf("Poll = %d, %v", n, st)
	}
	if wcs[0] != want {
		t.Errorf("WC\n got %+v\nwant %+v", wcs[0], want)
	}
	if got := e.cqDBR[0:4]; !bytes.Equal(got, []byte{0, 0, 0, 1}) {
		t.Errorf("consumer index record = %x, want 00000001", got)
	}
	if check != nil {
		check(t, e)
	}
}

func TestGoldenArm(t *testing.T) {
	g := newGoldenSet(t)
	for _, c := range []struct {
		name      string
		sn, ci    uint32
		solicited bool
	}{
		{"first", 0, 0, false},
		{"solicited_after_polls", 1, 5, true},
		{"sn_wraps_ci_masked", 6, 0x1234567, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newCQEnv(t)
			e.cq.armSN, e.cq.ci = c.sn, c.ci
			e.cq.Arm(c.solicited)
			if want := g.get("armdbr." + c.name); !bytes.Equal(e.cqDBR[4:8], want) {
				t.Errorf("arm doorbell record = %x, want %x", e.cqDBR[4:8], want)
			}
			if want := g.get("armreg." + c.name); !bytes.Equal(e.uar[CQDoorbellOffset:CQDoorbellOffset+8], want) {
				t.Errorf("CQ doorbell = %x, want %x", e.uar[CQDoorbellOffset:CQDoorbellOffset+8], want)
			}
		})
	}
	g.checkAllUsed("armdbr.", "armreg.")
}

func TestGoldenUdata(t *testing.T) {
	g := newGoldenSet(t)
	check := func(name string, got []byte) {
		t.Helper()
		if want := g.get("udata." + name); !bytes.Equal(got, want) {
			t.Errorf("%s\n got %x\nwant %x", name, got, want)
		}
	}
	req := DefaultAllocUcontextReq(true)
	check("alloc_ucontext_req", bytesOf(&req))
	cq := CreateCQReq(0x7f0000100000, 0x7f0000200040, 0x1234)
	check("create_cq", bytesOf(&cq))
	rcq := ResizeCQReq(0x7f0000300000)
	check("resize_cq", bytesOf(&rcq))
	qp := CreateQPReq(QPLayout{SQWQECount: 256, RQWQECount: 128, RQWQEShift: 4}, 0x7f0000400000, 0x7f0000200080, 7,
		0x10001, true)
	qp.EceOptions = 0x10000000
	check("create_qp", bytesOf(&qp))
	srq := CreateSRQReq(0x7f0000500000, 0x7f00002000c0, 9)
	check("create_srq", bytesOf(&srq))

	// Responses are read the way the provider reads them: the kernel's bytes copied over the abi struct.
	var resp abi.Mlx5IbAllocUcontextResp
	copy(bytesOf(&resp), g.get("udata.alloc_ucontext_resp"))
	want := abi.Mlx5IbAllocUcontextResp{QpTabSize: 1 << 18, BfRegSize: 512, CacheLineSize: 64, MaxSqDescSz: 512,
		MaxRqDescSz: 512, MaxSendWqebb: 32768, MaxRecvWr: 32768, MaxSrqRecvWr: 32767, NumPorts: 1, CompMask: 7,
		ResponseLength: 72, CqeVersion: 1, CmdsSuppUhw: 3, EthMinInline: 1, ClockInfoVersions: 1,
		HcaCoreClockOffset: 0x1234, LogUarSize: 12, NumUarsPerPage: 1, NumDynBfregs: 256, DumpFillMkey: 0x77}
	if resp != want {
		t.Errorf("alloc_ucontext resp\n got %+v\nwant %+v", resp, want)
	}
	var qpr abi.Mlx5IbCreateQpResp
	copy(bytesOf(&qpr), g.get("udata.create_qp_resp"))
	if qpr != (abi.Mlx5IbCreateQpResp{BfregIndex: 5, EceOptions: 0x10000001, CompMask: 15, Tirn: 1, Tisn: 2, Rqn: 3,
		Sqn: 4, TirIcmAddr: 0x1122334455667788}) {
		t.Errorf("create_qp resp = %+v", qpr)
	}
	var ahr abi.Mlx5IbCreateAhResp
	copy(bytesOf(&ahr), g.get("udata.create_ah_resp"))
	if ahr.Dmac != [6]byte{2, 0x11, 0x22, 0x33, 0x44, 0x55} {
		t.Errorf("create_ah resp = %+v", ahr)
	}
	g.checkAllUsed("udata.")
}

// TestGoldenUpToDate regenerates the vectors with the C generator when gcc and mlx5dv.h are installed and fails
// if testdata/golden.txt differs. Without them it skips, unless GOVERBS_REQUIRE_GOLDEN=1.
func TestGoldenUpToDate(t *testing.T) {
	if err := golden.Available(); err != nil {
		if os.Getenv("GOVERBS_REQUIRE_GOLDEN") == "1" {
			t.Fatalf("GOVERBS_REQUIRE_GOLDEN=1 but %v", err)
		}
		t.Skipf("cannot regenerate golden vectors (%v); install gcc and libibverbs-dev to check them", err)
	}
	got, err := golden.Generate()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/golden.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("testdata/golden.txt is stale: run go generate ./providers/mlx5/internal/hw")
	}
}
