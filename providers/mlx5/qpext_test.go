package mlx5

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/providers/mlx5/internal/hw"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

// The optional verbs (qpext.go) against the emulated kernel of the glue, and against libmlx5 itself: the
// libmlx5 harness's extdump mode runs Debian's libibverbs and libmlx5 against its fake kernel offering ECE,
// the clock page and the dump-fill mkey, and dumps what libmlx5 sends and answers; the same calls here must
// send the same driver data and answer the same.

// Values of the harness's fake kernel (csrc/harness.c, EXT_*).
const (
	extClockOffset  = 0x7f08
	extDumpFillMkey = 0x1d0f
	extCreateECE    = 0x10000003
	extModifyECE    = 0x00000100
)

// extGlue is a context whose kernel offers what extdump's does, with the clock reading 0x12_3456789a.
func extGlue(t *testing.T) *glue {
	t.Helper()
	clock := make([]byte, 4096)
	binary.BigEndian.PutUint32(clock[extClockOffset&4095:], 0x12)
	binary.BigEndian.PutUint32(clock[extClockOffset&4095+4:], 0x3456789a)
	g := newGlueResp(t, 512, false, func(r *abi.Mlx5IbAllocUcontextResp) {
		r.CompMask = abi.MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET |
			abi.MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_DUMP_FILL_MKEY | abi.MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_ECE
		r.HcaCoreClockOffset = extClockOffset
		r.DumpFillMkey = extDumpFillMkey
	}, clock)
	g.createECE = extCreateECE
	return g
}

// modifyCall is what one ModifyQP call was given.
type modifyCall struct {
	calls    int
	extended bool
	in       []byte
	outLen   int
}

// fakeModify plays the core's MODIFY_QP and the kernel behind it as the harness does: the extended command's
// driver response answers the ECE options asked for with extModifyECE added.
func fakeModify(rec *modifyCall) provider.ModifyQP {
	return func(extended bool, in, out []byte) error {
		rec.calls++
		rec.extended, rec.in, rec.outLen = extended, append([]byte(nil), in...), len(out)
		if !extended && (in != nil || out != nil) {
			return unix.EINVAL
		}
		if len(out) >= int(abi.SizeofMlx5IbModifyQpResp) && len(in) >= int(abi.SizeofMlx5IbModifyQp) {
			var req abi.Mlx5IbModifyQp
			copy(bytesOf(&req), in)
			resp := abi.Mlx5IbModifyQpResp{ResponseLength: uint32(abi.SizeofMlx5IbModifyQpResp)}
			if req.EceOptions != 0 {
				resp.EceOptions = req.EceOptions | extModifyECE
			}
			copy(out, bytesOf(&resp))
		}
		return nil
	}
}

// ECE, the rate limit, the clock and the null MR, each compared with what libmlx5 does for the same calls.
func TestLibmlx5OptionalVerbs(t *testing.T) {
	want := libmlx5ExtDump(t)
	g := extGlue(t)
	cq, cqn := g.cq(16)
	q := g.qp(verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}, cq, cq, cqn, cqn)

	// Creation: the ECE trigger in the request, the answer kept.
	if got := g.lastQPReq.EceOptions; got != uint32(want.num(t, "create.ece_options")) {
		t.Errorf("QP_CREATE ece_options %#x, libmlx5 %#x", got, want.num(t, "create.ece_options"))
	}
	e, _ := q.QueryECE()
	if e.VendorID != uint32(want.num(t, "created.vendor")) || e.Options != uint32(want.num(t, "created.options")) {
		t.Errorf("ECE after creation %+v, libmlx5 vendor %d options %d", e, want.num(t, "created.vendor"), want.num(t, "created.options"))
	}

	// SetECE, then the modify that carries the options, then one without.
	if err := q.SetECE(provider.ECE{VendorID: 0x15b3, Options: 0x10000005}); want.num(t, "set_ece.ret") != 0 || err != nil {
		t.Fatalf("SetECE: %v; libmlx5 %d", err, want.num(t, "set_ece.ret"))
	}
	if e, _ := q.QueryECE(); e.Options != uint32(want.num(t, "pending.options")) {
		t.Errorf("ECE while pending %#x, libmlx5 %#x", e.Options, want.num(t, "pending.options"))
	}
	var m modifyCall
	if err := q.Modify(fakeModify(&m)); err != nil {
		t.Fatal(err)
	}
	if m.calls != 1 || m.extended != (want.num(t, "ece_modify.ex") == 1) || !bytes.Equal(m.in, want.hex(t, "ece_modify.drv")) ||
		m.outLen != 8*int(want.num(t, "ece_modify.drv_out_words")) {
		t.Errorf("modify with ECE pending: %d calls, extended %v, driver request %x (%d-byte response); libmlx5 ex %d, %x (%d words)",
			m.calls, m.extended, m.in, m.outLen, want.num(t, "ece_modify.ex"), want.hex(t, "ece_modify.drv"),
			want.num(t, "ece_modify.drv_out_words"))
	}
	if e, _ := q.QueryECE(); e.Options != uint32(want.num(t, "modified.options")) {
		t.Errorf("ECE after the modify %#x, libmlx5 %#x", e.Options, want.num(t, "modified.options"))
	}
	m = modifyCall{}
	if err := q.Modify(fakeModify(&m)); err != nil {
		t.Fatal(err)
	}
	if m.calls != 1 || m.extended != (want.num(t, "plain_modify.ex") == 1) || m.in != nil || m.outLen != 0 {
		t.Errorf("modify without ECE pending: %+v; libmlx5 ex %d", m, want.num(t, "plain_modify.ex"))
	}
	err := q.SetECE(provider.ECE{VendorID: 0x1234, Options: 1})
	if !errors.Is(err, unix.Errno(want.num(t, "set_ece_vendor.ret"))) {
		t.Errorf("SetECE of another vendor: %v; libmlx5 %v", err, unix.Errno(want.num(t, "set_ece_vendor.ret")))
	}

	// The rate limit: extended, the burst information only; burst sizes refused as libmlx5 refuses them here.
	m = modifyCall{}
	if err := q.SetRateLimit(provider.RateLimit{Rate: 1000000}, fakeModify(&m)); err != nil || want.num(t, "rate.ret") != 0 {
		t.Fatalf("SetRateLimit: %v; libmlx5 %d", err, want.num(t, "rate.ret"))
	}
	if m.calls != 1 || !m.extended || !bytes.Equal(m.in, want.hex(t, "rate.drv")) || m.outLen != 8*int(want.num(t, "rate.drv_out_words")) {
		t.Errorf("rate limit: %+v; libmlx5 driver request %x, %d response words", m, want.hex(t, "rate.drv"), want.num(t, "rate.drv_out_words"))
	}
	for name, r := range map[string]provider.RateLimit{
		"rate_burst.ret":        {Rate: 1000000, MaxBurstSize: 4096, TypicalPacketSize: 1024},
		"rate_burst_norate.ret": {MaxBurstSize: 4096},
	} {
		m = modifyCall{}
		err := q.SetRateLimit(r, fakeModify(&m))
		if !errors.Is(err, unix.Errno(want.num(t, name))) || m.calls != 0 {
			t.Errorf("%s %+v: %v after %d commands; libmlx5 %v", name, r, err, m.calls, unix.Errno(want.num(t, name)))
		}
	}

	// The clock: the page mapped at the clock's offset, both words read, no system call.
	if off := g.emuSys().clockOff; off != hw.ClockMmapOffset(4096) || off != int64(abi.MLX5_IB_MMAP_CORE_CLOCK)<<8*4096 {
		t.Errorf("clock page mapped at offset %#x", off)
	}
	if v, err := g.ctx.ReadClock(); err != nil || v != want.num(t, "clock.nsec") || want.num(t, "clock.sec") != 0 {
		t.Errorf("ReadClock = %#x, %v; libmlx5 %#x", v, err, want.num(t, "clock.nsec"))
	}

	// The null MR: the dump-fill mkey, no command (libmlx5 issues none to make or free it).
	if k, err := g.ctx.NullMRKey(); err != nil || k != uint32(want.num(t, "null.lkey")) || want.num(t, "null.cmds") != 0 ||
		want.num(t, "null_dereg.cmds") != 0 {
		t.Errorf("NullMRKey = %#x, %v; libmlx5 %#x after %d commands", k, err, want.num(t, "null.lkey"), want.num(t, "null.cmds"))
	}

	// The core's extended MODIFY_QP request is checked against libibverbs' in uverbs
	// (TestModifyQPExMatchesLibibverbs): its golden must be what the harness dumps.
	checkGolden(t, want, "../../uverbs/testdata/libibverbs_modify_qp_ex.txt")
}

// Without ECE, the clock or the dump-fill mkey in the GET_CONTEXT response: no ECE trigger at creation, the
// query answers the vendor and 0, SetECE is EOPNOTSUPP (after the vendor check), and the clock and the null
// MR are EOPNOTSUPP; a clock page the kernel refuses to map leaves the context without a clock, as libmlx5.
func TestOptionalVerbsAbsent(t *testing.T) {
	g := newGlueResp(t, 512, false, func(r *abi.Mlx5IbAllocUcontextResp) {
		r.CompMask = abi.MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_CORE_CLOCK_OFFSET
	}, nil)
	cq, cqn := g.cq(16)
	q := g.qp(verbs.QPTypeRC, verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}, cq, cq, cqn, cqn)
	if g.lastQPReq.EceOptions != 0 {
		t.Errorf("QP_CREATE asks for ECE %#x on a device without it", g.lastQPReq.EceOptions)
	}
	if e, err := q.QueryECE(); err != nil || e != (provider.ECE{VendorID: 0x15b3}) {
		t.Errorf("QueryECE = %+v, %v", e, err)
	}
	if err := q.SetECE(provider.ECE{VendorID: 0x15b3, Options: 1}); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("SetECE without ECE support: %v", err)
	}
	if err := q.SetECE(provider.ECE{VendorID: 7, Options: 1}); !errors.Is(err, unix.EINVAL) {
		t.Errorf("SetECE of another vendor without ECE support: %v (libmlx5 checks the vendor first)", err)
	}
	var m modifyCall
	if err := q.Modify(fakeModify(&m)); err != nil || m.extended {
		t.Errorf("modify after a refused SetECE: %v, %+v", err, m)
	}
	if _, err := g.ctx.ReadClock(); !errors.Is(err, unix.EOPNOTSUPP) || g.ctx.clockPage != nil {
		t.Errorf("ReadClock without a mapped clock page: %v", err)
	}
	if _, err := g.ctx.NullMRKey(); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Errorf("NullMRKey without a dump-fill mkey: %v", err)
	}
}

// A failed modify leaves the ECE options pending and the last answer as it was, as libmlx5 keeps set_ece
// until a modify succeeds.
func TestECEFailedModifyKeepsPending(t *testing.T) {
	g := extGlue(t)
	cq, cqn := g.cq(16)
	q := g.qp(verbs.QPTypeUD, verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}, cq, cq, cqn, cqn)
	if err := q.SetECE(provider.ECE{VendorID: 0x15b3, Options: 0x10000001}); err != nil {
		t.Fatal(err)
	}
	calls := 0
	err := q.Modify(func(ext bool, in, out []byte) error { calls++; return unix.EINVAL })
	if !errors.Is(err, unix.EINVAL) || calls != 1 || q.setECE.Load() != 0x10000001 || q.getECE.Load() != 0 {
		t.Errorf("failed modify: %v after %d calls; pending %#x, answered %#x", err, calls, q.setECE.Load(), q.getECE.Load())
	}
	var m modifyCall
	if err := q.Modify(fakeModify(&m)); err != nil || !m.extended {
		t.Fatalf("retry: %v, %+v", err, m)
	}
	if e, _ := q.QueryECE(); e.Options != 0x10000001|extModifyECE {
		t.Errorf("ECE after the retried modify %#x", e.Options)
	}
}

// extDump is the harness's extdump output.
type extDump map[string]string

func (d extDump) num(t *testing.T, k string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(d[k], 10, 64)
	if err != nil {
		t.Fatalf("harness output %s = %q: %v", k, d[k], err)
	}
	return v
}

func (d extDump) hex(t *testing.T, k string) []byte {
	t.Helper()
	b, err := hex.DecodeString(d[k])
	if err != nil || d[k] == "" {
		t.Fatalf("harness output %s = %q: %v", k, d[k], err)
	}
	return b
}

// libmlx5ExtDump builds and runs the harness's extdump mode, or skips (fails under GOVERBS_REQUIRE_GOLDEN=1)
// where it cannot be built.
func libmlx5ExtDump(t *testing.T) extDump {
	t.Helper()
	return libmlx5Dump(t, "extdump")
}

// mlx5 has every optional op libmlx5 has.
func TestOptionalOps(t *testing.T) {
	got := provider.OptionalOps((*mctx)(nil), (*qpAdapter)(nil))
	if strings.Join(got, " ") != "QPModifier ECEQP RateLimiter ClockReader NullMRAllocator WQCreator RWQIndTableCreator DMAllocator DMImporter DmabufMRRegistrar" {
		t.Errorf("mlx5 implements %v", got)
	}
}
