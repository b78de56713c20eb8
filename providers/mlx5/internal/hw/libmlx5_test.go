package hw

import (
	"github.com/goverbs/goverbs/internal/provider"

	"bytes"
	"encoding/hex"
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/mmio"
	"github.com/goverbs/goverbs/providers/mlx5/internal/cmd/libmlx5emu"
	"github.com/goverbs/goverbs/verbs"
)

// The libmlx5 comparison: providers/mlx5/internal/cmd/libmlx5emu runs Debian's libibverbs + rdma-core's libmlx5
// against an emulated kernel and dumps the bytes libmlx5 writes for each work-request stream. The same streams go
// through goverbs' SendQueue/RecvQueue here and must produce the same bytes: the real provider decides, not a
// header-derived vector.

// libmlx5Streams are the work-request streams of the comparison, in the order the harness posts them. They match
// csrc/harness.c's make_wrs (payload, SGE, remote address, keys, flags).
type libmlx5Streams struct {
	inline, doorbell, list16, ud []SendWR
	recv                         []RecvWR
}

var lS1 = SGE{Addr: 0x00007f0011223340, Length: 0x1000, LKey: 0x11223344}

func newLibmlx5Streams(pl []byte, lkey uint32) *libmlx5Streams {
	s := &libmlx5Streams{}
	inl := []SGE{{Addr: addrOf(pl), Length: 32, LKey: lkey}}
	s.inline = []SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline, SGL: inl}}
	s.doorbell = []SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: []SGE{lS1}}}
	s.list16 = make([]SendWR, 16)
	for i := range s.list16 {
		s.list16[i] = SendWR{WRID: uint64(i), Opcode: verbs.WRRDMAWrite, RemoteAddr: 0x1000, RKey: 7, SGL: []SGE{lS1}}
	}
	s.list16[15].Flags = verbs.SendSignaled
	ah := NewIBAH(AHAttr{DLID: 0x1234, SL: 3})
	s.ud = []SendWR{{WRID: 2, Opcode: verbs.WRSend, Flags: verbs.SendSignaled | verbs.SendInline, SGL: inl, AH: ah,
		RemoteQPN: 0x4567, RemoteQKey: 0x11111111}}
	s.recv = []RecvWR{{WRID: 1, SGL: []SGE{lS1}}}
	return s
}

// libmlx5Harness builds the C harness, or skips (fails under GOVERBS_REQUIRE_GOLDEN=1) when the C toolchain,
// the rdma-core headers or libmlx5 are missing.
func libmlx5Harness(t testing.TB) string {
	t.Helper()
	if err := libmlx5emu.Available(); err != nil {
		if os.Getenv("GOVERBS_REQUIRE_GOLDEN") == "1" {
			t.Fatalf("GOVERBS_REQUIRE_GOLDEN=1 but %v", err)
		}
		t.Skipf("cannot compare with libmlx5 (%v)", err)
	}
	bin, err := libmlx5emu.Build(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// libmlx5Dump runs the harness's dump mode: "name value" lines, the value hex bytes or decimal numbers.
func libmlx5Dump(t *testing.T, bin string, env ...string) map[string]string {
	t.Helper()
	return libmlx5Run(t, bin, "dump", env...)
}

// libmlx5Run runs the harness in mode (dump, wrdump) and parses its "name value" lines.
func libmlx5Run(t *testing.T, bin, mode string, env ...string) map[string]string {
	t.Helper()
	m, err := libmlx5emu.Run(bin, mode, env...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func dumpInt(t *testing.T, m map[string]string, k string) int {
	t.Helper()
	v, err := strconv.ParseUint(m[k], 10, 64)
	if err != nil {
		t.Fatalf("harness output %s = %q: %v", k, m[k], err)
	}
	return int(v)
}

func dumpHex(t *testing.T, m map[string]string, k string) []byte {
	t.Helper()
	b, err := hex.DecodeString(m[k])
	if err != nil || m[k] == "" {
		t.Fatalf("harness output %s = %q: %v", k, m[k], err)
	}
	return b
}

// diffBytes describes where got and want differ, 16-byte rows.
func diffBytes(got, want []byte) string {
	var b strings.Builder
	if len(got) != len(want) {
		fmt.Fprintf(&b, "length %d, libmlx5 %d\n", len(got), len(want))
	}
	for off := 0; off < max(len(got), len(want)); off += 16 {
		g, w := got[min(off, len(got)):min(off+16, len(got))], want[min(off, len(want)):min(off+16, len(want))]
		if !bytes.Equal(g, w) {
			fmt.Fprintf(&b, "  +%#04x goverbs %x\n         libmlx5 %x\n", off, g, w)
		}
	}
	return b.String()
}

// TestLibmlx5WQEs posts each stream through goverbs with libmlx5's queue geometry and compares the WQE blocks,
// the doorbell record and the BlueFlame/doorbell register contents with the bytes libmlx5 wrote: once with
// libmlx5's default (MLX5_POST_SEND_PREFER_BF unset: BlueFlame for every single-WQE post that fits) against
// goverbs' default, once with MLX5_POST_SEND_PREFER_BF=0 (BlueFlame for inline WQEs only, the 8-byte doorbell
// otherwise) against SendQueueConfig.BlueFlameInlineOnly.
func TestLibmlx5WQEs(t *testing.T) {
	bin := libmlx5Harness(t)
	t.Run("prefer_bf=default", func(t *testing.T) { compareLibmlx5(t, libmlx5Dump(t, bin), false) })
	t.Run("prefer_bf=0", func(t *testing.T) {
		compareLibmlx5(t, libmlx5Dump(t, bin, "MLX5_POST_SEND_PREFER_BF=0"), true)
	})
}

func compareLibmlx5(t *testing.T, m map[string]string, inlineOnly bool) {

	// The geometry goverbs computes for the harness's caps must be libmlx5's.
	lim := QueueLimits{MaxSQDescSz: 512, MaxRQDescSz: 512, MaxSendWQEBB: 32768, MaxRecvWR: 32768}
	caps := QPCaps{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 4, MaxRecvSGE: 1, MaxInlineData: 128}
	for _, q := range []struct {
		name string
		typ  QPType
	}{{"rc", QPTypeRC}, {"ud", QPTypeUD}} {
		l, err := SizeQP(q.typ, caps, false, lim, 4096)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := l.SQWQECount, dumpInt(t, m, q.name+".sq_wqe_cnt"); got != want {
			t.Errorf("%s: SizeQP sq_wqe_cnt = %d, libmlx5 %d", q.name, got, want)
		}
		c := l.Caps
		if got, want := fmt.Sprint(c.MaxSendWR, c.MaxRecvWR, c.MaxSendSGE, c.MaxRecvSGE, c.MaxInlineData),
			m[q.name+".cap"]; got != want {
			t.Errorf("%s: SizeQP caps (send WR, recv WR, send SGE, recv SGE, inline) = %s, libmlx5 %s", q.name, got, want)
		}
		if q.typ == QPTypeRC {
			if l.RQWQECount != dumpInt(t, m, "rc.rq_wqe_cnt") || 1<<l.RQWQEShift != dumpInt(t, m, "rc.rq_stride") {
				t.Errorf("rc: SizeQP RQ %d x %d bytes, libmlx5 %s x %s", l.RQWQECount, 1<<l.RQWQEShift,
					m["rc.rq_wqe_cnt"], m["rc.rq_stride"])
			}
		}
	}

	regBytes, bf := libmlx5BF(t, dumpInt(t, m, "rc.bf_size"))
	rcSQ, rcRing, rcDBR := libmlx5SQ(t, m, "rc", QPTypeRC, bf, inlineOnly)
	udSQ, udRing, udDBR := libmlx5SQ(t, m, "ud", QPTypeUD, bf, inlineOnly)
	pl := payload()
	s := newLibmlx5Streams(pl, uint32(dumpInt(t, m, "lkey")))

	check := func(name string, got []byte) {
		t.Helper()
		if want := dumpHex(t, m, name); !bytes.Equal(got, want) {
			t.Errorf("%s differs from libmlx5:\n%s", name, diffBytes(got, want))
		}
	}
	for _, st := range []struct {
		name string
		sq   *SendQueue
		ring []byte
		dbr  []byte
		wrs  []SendWR
	}{
		{"inline", rcSQ, rcRing, rcDBR, s.inline},
		{"doorbell", rcSQ, rcRing, rcDBR, s.doorbell},
		{"list16", rcSQ, rcRing, rcDBR, s.list16},
		{"ud_inline", udSQ, udRing, udDBR, s.ud},
	} {
		clear(regBytes)
		from := st.sq.curPost
		if _, status := st.sq.PostSend(st.wrs); status != provider.OK {
			t.Fatalf("%s: PostSend: %v", st.name, status)
		}
		check(st.name+".wqe", st.ring[from*64:st.sq.curPost*64])
		check(st.name+".dbr", st.dbr)
		check(st.name+".bf", regBytes)
	}

	rqN, rqStride := dumpInt(t, m, "rc.rq_wqe_cnt"), dumpInt(t, m, "rc.rq_stride")
	rqRing := aligned(rqN * rqStride)
	d, _ := NewDoorbellRecord(rcDBR) // the QP's record: receive counter in word 0
	rq, err := NewRecvQueue(RecvQueueConfig{Buf: rqRing, WQECount: rqN, WQEShift: bits.TrailingZeros(uint(rqStride)),
		DBR: d, QPN: uint32(dumpInt(t, m, "rc.qpn"))})
	if err != nil {
		t.Fatal(err)
	}
	if _, status := rq.PostRecv(s.recv); status != provider.OK {
		t.Fatalf("PostRecv: %v", status)
	}
	check("recv.wqe", rqRing[:rqStride])
	check("recv.dbr", rcDBR)
}

// TestLibmlx5WRBuilder compares goverbs with libmlx5's extended-QP path: the harness posts chains with
// libibverbs' ibv_wr_start … ibv_wr_complete (libmlx5's mlx5_send_wr_* builders) on QPs created with
// ibv_create_qp_ex and their send_ops_flags, and goverbs posts, through the same SendQueue code its builder
// (uverbs.WRBuilder.Complete → PostSendAll) ends in, the SendWR lists the builder makes for the same calls:
// inline data as one inline SGE of the concatenated bytes, the invalidated rkey in Imm. The WQE blocks, the
// doorbell record and the BlueFlame/doorbell register must be libmlx5's bytes for every chain: a SEND, the
// three-WR chain RDMA WRITE + SEND_WITH_IMM inline + RDMA READ with an SGE list, both atomics, SEND_WITH_INV,
// RDMA WRITE_WITH_IMM from an inline data list, and a UD SEND_WITH_IMM. (LOCAL_INV and BIND_MW are UMR WQEs,
// which goverbs' mlx5 does not build: its QPs refuse those send operations.)
func TestLibmlx5WRBuilder(t *testing.T) {
	bin := libmlx5Harness(t)
	t.Run("prefer_bf=default", func(t *testing.T) { compareLibmlx5WR(t, libmlx5Run(t, bin, "wrdump"), false) })
	t.Run("prefer_bf=0", func(t *testing.T) {
		compareLibmlx5WR(t, libmlx5Run(t, bin, "wrdump", "MLX5_POST_SEND_PREFER_BF=0"), true)
	})
}

func compareLibmlx5WR(t *testing.T, m map[string]string, inlineOnly bool) {
	regBytes, bf := libmlx5BF(t, dumpInt(t, m, "bf_size"))
	rcSQ, rcRing, rcDBR := libmlx5SQ(t, m, "rcx", QPTypeRC, bf, inlineOnly)
	udSQ, udRing, udDBR := libmlx5SQ(t, m, "udx", QPTypeUD, bf, inlineOnly)
	pl := payload()
	const lkey = 0x11223344
	at := func(off uint64, n uint32) []SGE {
		return []SGE{{Addr: 0x00007f0011223340 + off, Length: n, LKey: lkey}}
	}
	inline := func(b []byte) []SGE { return []SGE{{Addr: addrOf(b), Length: uint32(len(b))}} }
	sgeList := []SGE{{Addr: 0x00007f0011223340, Length: 0x100, LKey: lkey}, {Addr: 0x00007f0011225000, Length: 0x80, LKey: 0x11223355}}
	ah := NewIBAH(AHAttr{DLID: 0x1234, SL: 3})
	chains := []struct {
		name string
		sq   *SendQueue
		ring []byte
		dbr  []byte
		wrs  []SendWR
	}{
		{"wr_send", rcSQ, rcRing, rcDBR, []SendWR{{WRID: 1, Opcode: verbs.WRSend, Flags: verbs.SendSignaled, SGL: at(0, 0x1000)}}},
		{"wr_chain3", rcSQ, rcRing, rcDBR, []SendWR{
			{WRID: 11, Opcode: verbs.WRRDMAWrite, RemoteAddr: 0x1000, RKey: 7, SGL: at(0, 0x1000)},
			{WRID: 12, Opcode: verbs.WRSendWithImm, Flags: verbs.SendInline, Imm: 0x1234, SGL: inline(pl[:32])},
			{WRID: 13, Opcode: verbs.WRRDMARead, Flags: verbs.SendSignaled, RemoteAddr: 0x2000, RKey: 7, SGL: sgeList},
		}},
		{"wr_atomics", rcSQ, rcRing, rcDBR, []SendWR{
			{WRID: 21, Opcode: verbs.WRAtomicCmpAndSwp, RemoteAddr: 0x3000, RKey: 9, CompareAdd: 5, Swap: 6, SGL: at(0, 8)},
			{WRID: 22, Opcode: verbs.WRAtomicFetchAndAdd, Flags: verbs.SendSignaled, RemoteAddr: 0x3008, RKey: 9, CompareAdd: 3, SGL: at(8, 8)},
		}},
		{"wr_inv", rcSQ, rcRing, rcDBR, []SendWR{
			{WRID: 31, Opcode: verbs.WRSendWithInv, Flags: verbs.SendSignaled, Imm: 0x77, SGL: at(0, 0x40)},
		}},
		{"wr_write_imm_list", rcSQ, rcRing, rcDBR, []SendWR{{WRID: 41, Opcode: verbs.WRRDMAWriteWithImm,
			Flags: verbs.SendSignaled | verbs.SendSolicited | verbs.SendInline, RemoteAddr: 0x1000, RKey: 7, Imm: 0xabcd, SGL: inline(pl[:40])}}},
		{"wr_ud", udSQ, udRing, udDBR, []SendWR{{WRID: 51, Opcode: verbs.WRSendWithImm, Flags: verbs.SendSignaled, Imm: 0x55,
			AH: ah, RemoteQPN: 0x4567, RemoteQKey: 0x11111111, SGL: at(0, 0x200)}}},
	}
	check := func(name string, got []byte) {
		t.Helper()
		if want := dumpHex(t, m, name); !bytes.Equal(got, want) {
			t.Errorf("%s differs from libmlx5's ibv_wr_*:\n%s", name, diffBytes(got, want))
		}
	}
	for _, c := range chains {
		clear(regBytes)
		from := c.sq.curPost
		if bad, status := c.sq.PostSendAll(c.wrs); status != provider.OK {
			t.Fatalf("%s: PostSendAll: WR %d: %v", c.name, bad, status)
		}
		check(c.name+".wqe", c.ring[from*64:c.sq.curPost*64])
		check(c.name+".dbr", c.dbr)
		check(c.name+".bf", regBytes)
	}
}

// libmlx5BF is the BlueFlame register the harness's QPs share (its kernel gives every QP bfreg 1), over plain
// memory whose bytes the comparisons read.
func libmlx5BF(t *testing.T, bfSize int) ([]byte, *BFReg) {
	t.Helper()
	regBytes := aligned(2 * bfSize)
	reg, err := mmio.RegFromBytes(regBytes)
	if err != nil {
		t.Fatal(err)
	}
	bf, err := NewBFReg(reg, bfSize, false)
	if err != nil {
		t.Fatal(err)
	}
	return regBytes, bf
}

// libmlx5SQ is a SendQueue with the geometry and capabilities the harness reported for its QP name (name.sq_wqe_cnt,
// name.cap, name.qpn), its ring and doorbell record in plain memory; RC QPs take atomics, as the harness's device
// reports HCA atomics.
func libmlx5SQ(t *testing.T, m map[string]string, name string, typ QPType, bf *BFReg, inlineOnly bool) (*SendQueue, []byte, []byte) {
	t.Helper()
	n := dumpInt(t, m, name+".sq_wqe_cnt")
	ring, dbr := aligned(n*64), aligned(8)
	d, _ := NewDoorbellRecord(dbr)
	var c [5]int
	if _, err := fmt.Sscan(m[name+".cap"], &c[0], &c[1], &c[2], &c[3], &c[4]); err != nil {
		t.Fatalf("harness output %s.cap = %q: %v", name, m[name+".cap"], err)
	}
	sq, err := NewSendQueue(SendQueueConfig{Buf: ring, WQECount: n, MaxPost: c[0], MaxSGE: c[2], MaxInline: c[4],
		QPN: uint32(dumpInt(t, m, name+".qpn")), Type: typ, DBR: d, BF: bf, BlueFlameInlineOnly: inlineOnly,
		Atomics: typ == QPTypeRC})
	if err != nil {
		t.Fatal(err)
	}
	return sq, ring, dbr
}
