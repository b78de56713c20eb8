package mlx5

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/providers/mlx5/internal/cmd/libmlx5emu"
	"github.com/goverbs/goverbs/providers/mlx5/internal/hw"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

// Receive WQs and indirection tables (wq.go) against libmlx5 itself: the harness's wqdump mode runs
// Debian's libibverbs and libmlx5 against its fake kernel and dumps what libmlx5 sends for ibv_create_wq,
// ibv_modify_wq and ibv_create_rwq_ind_table and what ibv_post_wq_recv writes; the same calls here must send
// the same driver data, size the ring the same, and write the same WQEs and doorbell record.

// The harness's fake kernel's WQ numbers and handles (csrc/harness.c, WQ_*).
const (
	wqHandleBase = 0x21
	wqnBase      = 0x789
)

// wqCall is what the fake WQ_CREATE was given.
type wqCall struct {
	req    abi.Mlx5IbCreateWq
	params provider.WQParams
	outLen int
}

// wq creates a WQ through the driver, the fake kernel answering as the harness's does (max_wr the ring's WQEs,
// max_sge what a WQE holds).
func (g *glue) wq(p provider.WQParams, rec *wqCall) (*wqAdapter, provider.WQResult, error) {
	g.t.Helper()
	w, res, err := g.ctx.CreateWQ(p, func(r provider.WQParams, in, out []byte) (provider.WQResult, error) {
		copy(bytesOf(&rec.req), in)
		rec.params, rec.outLen = r, len(out)
		if len(in) != int(abi.SizeofMlx5IbCreateWq) {
			g.t.Errorf("WQ_CREATE driver request of %d bytes", len(in))
		}
		resp := abi.Mlx5IbCreateWqResp{ResponseLength: uint32(abi.SizeofMlx5IbCreateWqResp)}
		copy(out, bytesOf(&resp))
		return provider.WQResult{MaxWR: rec.req.RqWqeCount, MaxSGE: (1 << rec.req.RqWqeShift) / 16, WQN: wqnBase,
			Handle: wqHandleBase}, nil
	})
	if err != nil {
		return nil, res, err
	}
	return w.(*wqAdapter), res, nil
}

func TestLibmlx5WQ(t *testing.T) {
	want := libmlx5Dump(t, "wqdump")
	g := newGlue(t, 512)
	cq, cqn := g.cq(16)
	// The harness made its QPs first: the WQ's user index follows theirs.
	for range want.num(t, "wq.prior_qps") {
		g.qp(verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}, cq, cq, cqn, cqn)
	}
	var rec wqCall
	w, res, err := g.wq(provider.WQParams{MaxWR: 5, MaxSGE: 3, CQ: cq}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Destroyed()
	r := rec.req
	if r.RqWqeCount != uint32(want.num(t, "wq_create.wqe_count")) || r.RqWqeShift != uint32(want.num(t, "wq_create.wqe_shift")) ||
		r.UserIndex != uint32(want.num(t, "wq_create.user_index")) || r.Flags != uint32(want.num(t, "wq_create.flags")) ||
		r.CompMask != uint32(want.num(t, "wq_create.comp_mask")) || r.BufAddr%4096 != want.num(t, "wq_create.buf_page_offset") {
		t.Errorf("WQ_CREATE driver request %+v; libmlx5 %x", r, want.hex(t, "wq_create.drv"))
	}
	if len(want.hex(t, "wq_create.drv")) != int(abi.SizeofMlx5IbCreateWq) || rec.outLen != 8*int(want.num(t, "wq_create.drv_out_words")) {
		t.Errorf("driver request of libmlx5 %d bytes, response %d words; goverbs response buffer %d bytes",
			len(want.hex(t, "wq_create.drv")), want.num(t, "wq_create.drv_out_words"), rec.outLen)
	}
	if rec.params.MaxWR != 5 || rec.params.MaxSGE != 3 || res.MaxWR != uint32(want.num(t, "wq.max_wr")) ||
		res.MaxSGE != uint32(want.num(t, "wq.max_sge")) {
		t.Errorf("core request %+v, result %+v; libibverbs reports max_wr %d max_sge %d", rec.params, res,
			want.num(t, "wq.max_wr"), want.num(t, "wq.max_sge"))
	}
	ring := hostBytes(r.BufAddr, int(r.RqWqeCount)<<r.RqWqeShift)
	if len(w.mem) < len(ring) || addrOf(w.mem) != r.BufAddr || addrOf(w.dbrMem) != r.DbAddr {
		t.Errorf("ring %d bytes at %#x, record at %#x; request %#x, %#x", len(w.mem), addrOf(w.mem), addrOf(w.dbrMem), r.BufAddr, r.DbAddr)
	}

	// The move to RDY: a zeroed mlx5_ib_modify_wq, no response; a wrong expected state is EINVAL, no command.
	var drv []byte
	calls := 0
	exec := func(in, out []byte) error { calls++; drv = append([]byte(nil), in...); return nil }
	if err := w.Modify(provider.WQModify{From: provider.WQStateReset, SetsState: true, To: provider.WQStateReady,
		HasCurState: true, CurState: provider.WQStateReset}, exec); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || !bytes.Equal(drv, want.hex(t, "wq_modify.drv")) || want.num(t, "wq_modify.drv_out_words") != 0 {
		t.Errorf("modify: %d commands, driver request %x; libmlx5 %x", calls, drv, want.hex(t, "wq_modify.drv"))
	}
	err = w.Modify(provider.WQModify{From: provider.WQStateReady, SetsState: true, To: provider.WQStateReady,
		HasCurState: true, CurState: provider.WQStateReset}, exec)
	if !errors.Is(err, unix.EINVAL) || calls != 1 || want["wq_modify_cur.ret"] != "-22" {
		t.Errorf("modify from the wrong state: %v after %d commands; libmlx5 %s (-EINVAL)", err, calls, want["wq_modify_cur.ret"])
	}
	if err := w.Modify(provider.WQModify{From: provider.WQStateReady}, exec); err != nil || !bytes.Equal(drv, want.hex(t, "wq_flags.drv")) {
		t.Errorf("flags modify: %v, driver request %x; libmlx5 %x", err, drv, want.hex(t, "wq_flags.drv"))
	}

	// Three receives, the last with more SGEs than a WQE holds: the same WQEs and doorbell record.
	s := []verbs.SGE{{Addr: 0x10002000, Length: 100, LKey: 0x1111}, {Addr: 0x10003000, Length: 0, LKey: 0x2222},
		{Addr: 0x10004000, Length: 300, LKey: 0x3333}, {Addr: 0x10005000, Length: 64, LKey: 0x4444},
		{Addr: 0x10006000, Length: 8, LKey: 0x5555}}
	wrs := []verbs.RecvWR{{WRID: 1, SGL: s[:3]}, {WRID: 2, SGL: s[3:4]}, {WRID: 3, SGL: s}}
	n, st := w.PostRecv(wrs)
	if n != int(want.num(t, "post.bad"))-1 || st != provider.TooManySGE || want.num(t, "post.ret") != uint64(unix.EINVAL) {
		t.Errorf("PostRecv = %d, %v; libmlx5 %d, bad wr_id %d", n, st, want.num(t, "post.ret"), want.num(t, "post.bad"))
	}
	if !bytes.Equal(ring, want.hex(t, "post.ring")) {
		t.Errorf("ring\n%x\nlibmlx5\n%x", ring, want.hex(t, "post.ring"))
	}
	if db := binary.BigEndian.Uint32(w.dbrMem); db != uint32(want.num(t, "post.dbrec")) {
		t.Errorf("doorbell record %d, libmlx5 %d", db, want.num(t, "post.dbrec"))
	}

	// A receive completion under the WQ's user index retires its WQE with its wr_id.
	putRespCQE(cq, 0, w.uidx, 0, 100)
	wc := make([]verbs.WC, 2)
	if n, st := cq.Poll(wc); n != 1 || st != provider.OK || wc[0].WRID != 1 || wc[0].Opcode != verbs.WCRecv || wc[0].ByteLen != 100 {
		t.Errorf("poll = %d, %v, %+v", n, st, wc[0])
	}

	// The indirection table: no driver data either way.
	var in, out []byte
	calls = 0
	if err := g.ctx.CreateRWQIndTable(func(i, o []byte) error { calls++; in, out = i, o; return nil }); err != nil ||
		calls != 1 || in != nil || out != nil || want.hex(t, "ind_create.core") == nil || want.num(t, "ind_create.drv_out_words") != 0 {
		t.Errorf("CreateRWQIndTable: %v, %d commands, driver data %x, %d-byte response", err, calls, in, len(out))
	}

	// The core requests of the modify and the table are uverbs' golden (TestWQCommandsMatchLibibverbs).
	checkGolden(t, want, "../../uverbs/testdata/libibverbs_wq.txt")
	for k, v := range map[string]uint32{"wq_create.cmd": abi.IB_USER_VERBS_EX_CMD_CREATE_WQ, "wq_modify.cmd": abi.IB_USER_VERBS_EX_CMD_MODIFY_WQ,
		"ind_create.cmd": abi.IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL, "ind_create.out_words": uint32(abi.SizeofIbUverbsExCreateRwqIndTableResp) / 8,
		"wq_modify.out_words": 0, "wq_modify.ex": 1} {
		if uint32(want.num(t, k)) != v {
			t.Errorf("harness %s %d; goverbs sends %d", k, want.num(t, k), v)
		}
	}

	// max_wr 0: EINVAL, as libmlx5 answers, with no command.
	_, _, err = g.ctx.CreateWQ(provider.WQParams{MaxWR: 0, MaxSGE: 1, CQ: cq}, func(provider.WQParams, []byte, []byte) (provider.WQResult, error) {
		t.Error("WQ_CREATE issued for max_wr 0")
		return provider.WQResult{}, nil
	})
	if !errors.Is(err, unix.Errno(want.num(t, "wq_zero.errno"))) {
		t.Errorf("max_wr 0: %v; libmlx5 %v", err, unix.Errno(want.num(t, "wq_zero.errno")))
	}
}

// putRespCQE writes a RESP_SEND CQE at index n of cq's ring (first pass: owner bit 0) naming user index uidx.
func putRespCQE(cq *cqAdapter, n int, uidx uint32, wqeCounter uint16, byteCnt uint32) {
	c := cq.mem[n*hw.CQESize : (n+1)*hw.CQESize]
	clear(c)
	binary.BigEndian.PutUint32(c[32:], uidx&0xffffff)
	binary.BigEndian.PutUint32(c[44:], byteCnt)
	binary.BigEndian.PutUint32(c[56:], wqnBase)
	binary.BigEndian.PutUint16(c[60:], wqeCounter)
	c[63] = hw.CQERespSend << 4
}

// A failed WQ_CREATE returns the ring, the record and the user index; a WQ in a parent domain takes its ring
// from the allocator (MLX5DV_RES_TYPE_RWQ) and counts in the domain; Destroyed returns it all, and a reset to
// RDY rewinds the ring and drops the WQ's completions.
func TestWQLifecycle(t *testing.T) {
	g := newGlue(t, 512)
	cq, _ := g.cq(16)
	_, _, err := g.ctx.CreateWQ(provider.WQParams{MaxWR: 4, MaxSGE: 1, CQ: cq}, func(provider.WQParams, []byte, []byte) (provider.WQResult, error) {
		return provider.WQResult{}, unix.ENOMEM
	})
	if !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("failed create: %v", err)
	}
	var rec wqCall
	w, _, err := g.wq(provider.WQParams{MaxWR: 4, MaxSGE: 1, CQ: cq}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	if rec.req.UserIndex != 0 {
		t.Errorf("user index %d after a failed create: not returned", rec.req.UserIndex)
	}
	sge := []verbs.SGE{{Addr: 0x1000, Length: 8, LKey: 1}}
	if n, st := w.PostRecv([]verbs.RecvWR{{WRID: 7, SGL: sge}, {WRID: 8, SGL: sge}}); n != 2 || st != provider.OK {
		t.Fatalf("post: %d, %v", n, st)
	}
	putRespCQE(cq, 0, w.uidx, 0, 8)
	// From RESET to RDY: the completion is dropped and the ring rewound, as libmlx5's mlx5_modify_wq.
	if err := w.Modify(provider.WQModify{From: provider.WQStateReset, SetsState: true, To: provider.WQStateReady},
		func(in, out []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n, _ := cq.Poll(make([]verbs.WC, 1)); n != 0 || w.q.RQ.Outstanding() != 0 || binary.BigEndian.Uint32(w.dbrMem) != 0 {
		t.Errorf("after the reset: %d completions, %d outstanding, record %d", n, w.q.RQ.Outstanding(), binary.BigEndian.Uint32(w.dbrMem))
	}
	// Fill the ring: the next post is QueueFull.
	full := make([]verbs.RecvWR, 5)
	for i := range full {
		full[i] = verbs.RecvWR{WRID: uint64(i), SGL: sge}
	}
	if n, st := w.PostRecv(full); n != 4 || st != provider.QueueFull {
		t.Errorf("post past the ring: %d, %v", n, st)
	}
	w.Destroyed()

	// In a parent domain with an allocator and a thread domain.
	a := &recAlloc{}
	pdom, err := g.ctx.AllocParentDomain(provider.ParentDomainParams{PD: pd(1), Alloc: a, Mask: provider.ParentDomainAllocators})
	if err != nil {
		t.Fatal(err)
	}
	w, _, err = g.wq(provider.WQParams{MaxWR: 4, MaxSGE: 1, CQ: cq, ParentDomain: pdom}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.allocs) != 1 || a.allocs[0] != resRWQ || rec.req.BufAddr != addrOf(a.bufs[0]) {
		t.Errorf("allocator asked for %v", a.allocs)
	}
	if err := pdom.Close(); !errors.Is(err, unix.EBUSY) {
		t.Errorf("parent domain closed under its WQ: %v", err)
	}
	w.Destroyed()
	if len(a.frees) != 1 || a.frees[0] != resRWQ {
		t.Errorf("allocator got back %v", a.frees)
	}
	if err := pdom.Close(); err != nil {
		t.Errorf("parent domain after its WQ: %v", err)
	}
}

// recAlloc is a parent domain's allocator that records what it was asked for.
type recAlloc struct {
	allocs, frees []provider.ResourceType
	bufs          [][]byte
}

func (a *recAlloc) Alloc(size, alignment int, res provider.ResourceType) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, err
	}
	a.allocs, a.bufs = append(a.allocs, res), append(a.bufs, b)
	return b, nil
}

func (a *recAlloc) Free(b []byte, res provider.ResourceType) {
	a.frees = append(a.frees, res)
	unix.Munmap(b)
}

// libmlx5Dump builds and runs one of the harness's dump modes, or skips (fails under
// GOVERBS_REQUIRE_GOLDEN=1) where it cannot be built.
func libmlx5Dump(t *testing.T, mode string) extDump {
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
	d, err := libmlx5emu.Run(bin, mode)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkGolden fails t where a "name hex" line of the uverbs golden file at path differs from the harness's
// output: the core requests uverbs compares its own with must be what libibverbs sends.
func checkGolden(t *testing.T, want extDump, path string) {
	t.Helper()
	golden, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, ln := range strings.Split(string(golden), "\n") {
		if k, v, ok := strings.Cut(ln, " "); ok && !strings.HasPrefix(ln, "#") && want[k] != v {
			t.Errorf("%s: %s differs from the harness's:\n%s", path, k, want[k])
		}
	}
}

// Posting to a WQ allocates nothing, a refused post included.
func TestWQPostRecvZeroAllocs(t *testing.T) {
	g := newGlue(t, 512)
	cq, _ := g.cq(16)
	var rec wqCall
	w, _, err := g.wq(provider.WQParams{MaxWR: 4, MaxSGE: 1, CQ: cq}, &rec)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Destroyed()
	wrs := []verbs.RecvWR{{WRID: 1, SGL: []verbs.SGE{{Addr: 0x1000, Length: 8, LKey: 1}}}}
	many := []verbs.RecvWR{{WRID: 2, SGL: make([]verbs.SGE, 2)}}
	if a := testing.AllocsPerRun(100, func() {
		if n, st := w.PostRecv(wrs); n != 1 || st != provider.OK {
			t.Fatalf("post: %d, %v", n, st)
		}
		w.q.RQ.Reset()
		if _, st := w.PostRecv(many); st != provider.TooManySGE {
			t.Fatalf("post of 2 SGEs: %v", st)
		}
	}); a != 0 {
		t.Errorf("post WQ receive: %v allocs/op", a)
	}
}
