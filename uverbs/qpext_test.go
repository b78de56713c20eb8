package uverbs

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"golang.org/x/sys/unix"
)

// The core's side of ECE, the rate limit, the clock and the null MR (qpext.go), with fake providers: the
// refusals libibverbs gives for a provider without the op, what reaches a provider with it, and the extended
// MODIFY_QP's core request against libibverbs'. mlx5's side is tested against the emulated kernel and
// libmlx5 in providers/mlx5 (qpext_test.go); rxe's refusals against libibverbs' on the lab device in
// test/conformance (TestRefusalsMatchLibibverbs).

// plainQP is a provider QP with none of the optional operations (rxe, siw).
type plainQP struct{ provider.QP }

// extQP has them all, and records what it was given.
type extQP struct {
	provider.QP
	ece     provider.ECE
	rate    provider.RateLimit
	modErr  error // what modify(false, ...) answered inside SetRateLimit
	setErr  error
	setCall int
}

func (q *extQP) SetECE(e provider.ECE) error { q.setCall++; q.ece = e; return q.setErr }
func (q *extQP) QueryECE() (provider.ECE, error) {
	return provider.ECE{VendorID: q.ece.VendorID, Options: q.ece.Options + 1}, nil
}
func (q *extQP) SetRateLimit(r provider.RateLimit, modify provider.ModifyQP) error {
	q.rate = r
	q.modErr = modify(false, nil, nil)
	return modify(true, []byte{1, 2, 3, 4}, nil)
}

// extProv is a context with the clock and the null MR.
type extProv struct {
	provider.Context
	clock uint64
	key   uint32
}

func (p *extProv) ReadClock() (uint64, error) { return p.clock, nil }
func (p *extProv) NullMRKey() (uint32, error) { return p.key, nil }

// fakeQP is a QP on a fake context whose command fd is not a device (-1: a command that reaches it fails
// with EBADF).
func fakeQP(prov provider.Context, qp provider.QP) *QP {
	c := fakeContext(prov, DriverRXE)
	c.fd = -1
	return &QP{ctx: c, pd: &PD{ctx: c, handle: 1}, prov: qp, qpn: 0x11, handle: 3}
}

// A provider without the ops: every verb answers ErrNotSupported (EOPNOTSUPP, errors.ErrUnsupported) in an
// *Error naming the device, as libibverbs answers for a provider without them (rxe); nothing is counted.
func TestOptionalVerbsNotSupported(t *testing.T) {
	qp := fakeQP(noDomainProv{}, plainQP{})
	c := qp.ctx
	_, errQuery := qp.QueryECE()
	_, errClock := c.QueryRTValues()
	mr, errNull := qp.pd.AllocNullMR()
	for name, err := range map[string]error{
		"set ECE":        qp.SetECE(ECE{VendorID: VendorMellanox, Options: 1}),
		"query ECE":      errQuery,
		"set rate limit": qp.SetRateLimit(RateLimit{Rate: 1000}),
		"query clock":    errClock,
		"alloc null MR":  errNull,
	} {
		var e *Error
		if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) || !errors.Is(err, errors.ErrUnsupported) ||
			!errors.As(err, &e) || e.Device != "fake0" {
			t.Errorf("%s: %v", name, err)
		}
	}
	if mr != nil || c.objects != 0 {
		t.Errorf("null MR %v, %d objects", mr, c.objects)
	}
}

// SetECE with vendor id 0 is EOPNOTSUPP before the provider is asked (libibverbs' ibv_set_ece); other
// options reach it, and its answer comes back; a provider's refusal is wrapped.
func TestECEReachesProvider(t *testing.T) {
	p := &extQP{}
	qp := fakeQP(noDomainProv{}, p)
	if err := qp.SetECE(ECE{Options: 5}); !errors.Is(err, ErrNotSupported) || p.setCall != 0 {
		t.Errorf("vendor 0: %v, provider called %d times", err, p.setCall)
	}
	if err := qp.SetECE(ECE{VendorID: VendorMellanox, Options: 5}); err != nil || p.ece != (provider.ECE{VendorID: VendorMellanox, Options: 5}) {
		t.Errorf("SetECE: %v, provider got %+v", err, p.ece)
	}
	if e, err := qp.QueryECE(); err != nil || e != (ECE{VendorID: VendorMellanox, Options: 6}) {
		t.Errorf("QueryECE = %+v, %v", e, err)
	}
	p.setErr = unix.EINVAL
	err := qp.SetECE(ECE{VendorID: 7, Options: 1})
	var e *Error
	if !errors.Is(err, unix.EINVAL) || !errors.As(err, &e) || !strings.Contains(err.Error(), "set ECE of QP 0x11") {
		t.Errorf("provider's refusal: %v", err)
	}
	qp.life.close(func() error { return nil })
	if err := qp.SetECE(ECE{VendorID: 1}); !errors.Is(err, ErrClosed) {
		t.Errorf("SetECE after Close: %v", err)
	}
	if _, err := qp.QueryECE(); !errors.Is(err, ErrClosed) {
		t.Errorf("QueryECE after Close: %v", err)
	}
	if err := qp.SetRateLimit(RateLimit{}); !errors.Is(err, ErrClosed) {
		t.Errorf("SetRateLimit after Close: %v", err)
	}
}

// The rate limit reaches the provider whole; the core refuses the legacy command for it (EINVAL, no
// command) and issues the extended one (which the fake fd fails with EBADF, wrapped).
func TestRateLimitReachesProvider(t *testing.T) {
	p := &extQP{}
	qp := fakeQP(noDomainProv{}, p)
	err := qp.SetRateLimit(RateLimit{Rate: 1000, MaxBurstSize: 4096, TypicalPacketSize: 1024})
	if p.rate != (provider.RateLimit{Rate: 1000, MaxBurstSize: 4096, TypicalPacketSize: 1024}) {
		t.Errorf("provider got %+v", p.rate)
	}
	if !errors.Is(p.modErr, unix.EINVAL) {
		t.Errorf("legacy modify for a rate limit: %v", p.modErr)
	}
	if !errors.Is(err, unix.EBADF) || !strings.Contains(err.Error(), "set rate limit of QP 0x11 to 1000 kbit/s") {
		t.Errorf("SetRateLimit: %v", err)
	}
}

// The clock and the null MR: the provider's values; the null MR has no kernel object (Close issues no
// command: the fake fd would fail it), covers every length, cannot be re-registered.
func TestClockAndNullMR(t *testing.T) {
	qp := fakeQP(&extProv{clock: 0x123456789a, key: 0x1d0f}, plainQP{})
	c := qp.ctx
	if v, err := c.QueryRTValues(); err != nil || v.RawClock != 0x123456789a {
		t.Errorf("QueryRTValues = %+v, %v", v, err)
	}
	mr, err := qp.pd.AllocNullMR()
	if err != nil {
		t.Fatal(err)
	}
	if !mr.IsNull() || mr.LKey() != 0x1d0f || mr.RKey() != 0 || mr.Addr() != 0 || mr.Len() != math.MaxInt || c.objects != 1 {
		t.Errorf("null MR: null %v lkey %#x rkey %#x addr %#x len %d; %d objects", mr.IsNull(), mr.LKey(), mr.RKey(),
			mr.Addr(), mr.Len(), c.objects)
	}
	if err := mr.Rereg(ReregAccess, nil, nil, AccessLocalWrite); !errors.Is(err, unix.EINVAL) {
		t.Errorf("Rereg of a null MR: %v", err)
	}
	if err := mr.Close(); err != nil || c.objects != 0 {
		t.Errorf("Close: %v, %d objects", err, c.objects)
	}
	c.closed = true
	if _, err := c.QueryRTValues(); !errors.Is(err, ErrClosed) {
		t.Errorf("QueryRTValues after Close: %v", err)
	}
}

// The extended MODIFY_QP's core request is libibverbs' (testdata/libibverbs_modify_qp_ex.txt, dumped by the
// libmlx5 harness, which providers/mlx5's TestLibmlx5OptionalVerbs keeps in step): the ECE-carrying RESET->INIT
// and the rate limit of 1000000 kbit/s, on QP handle 3; a 16-byte response is asked for, the driver data is
// passed as given.
func TestModifyQPExMatchesLibibverbs(t *testing.T) {
	golden := libibverbsGolden(t, "testdata/libibverbs_modify_qp_ex.txt")
	qp := &QP{handle: 3}
	c := &Context{}
	drv := []byte{1, 2, 3, 4}
	out := make([]byte, 16)
	for name, w := range map[string]struct {
		in   *abi.IbUverbsModifyQp
		rate uint32
	}{
		"ece_modify.core": {c.modifyQPIn(qp, &QPAttr{State: QPStateInit, PortNum: 1},
			QPAttrState|QPAttrPKeyIndex|QPAttrPort|QPAttrAccessFlags), 0},
		"rate.core": {c.modifyQPIn(qp, &QPAttr{}, qpAttrRateLimit), 1000000},
	} {
		cmd := modifyQPWrite(w.in, true, w.rate, drv, out)
		if cmd.Cmd != abi.IB_USER_VERBS_EX_CMD_MODIFY_QP|abi.IB_USER_VERBS_CMD_FLAG_EXTENDED || !bytes.Equal(cmd.CoreIn, golden[name]) ||
			len(cmd.CoreOut) != int(abi.SizeofIbUverbsExModifyQpResp) || !bytes.Equal(cmd.UHWIn, drv) || len(cmd.UHWOut) != 16 {
			t.Errorf("%s: command %#x, core %x (libibverbs %x), %d-byte response, driver %x/%d", name, cmd.Cmd, cmd.CoreIn,
				golden[name], len(cmd.CoreOut), cmd.UHWIn, len(cmd.UHWOut))
		}
	}
	legacy := modifyQPWrite(c.modifyQPIn(qp, &QPAttr{State: QPStateInit}, QPAttrState), false, 0, nil, nil)
	if legacy.Cmd != abi.IB_USER_VERBS_CMD_MODIFY_QP || len(legacy.CoreIn) != int(abi.SizeofIbUverbsModifyQp) || legacy.CoreOut != nil {
		t.Errorf("legacy command %#x, %d bytes in, %d out", legacy.Cmd, len(legacy.CoreIn), len(legacy.CoreOut))
	}
	if err := c.cmdModifyQP(c.modifyQPIn(qp, &QPAttr{}, QPAttrState), false, 0, drv, nil); !errors.Is(err, unix.EINVAL) {
		t.Errorf("legacy command with driver data: %v", err)
	}
}

// modQP takes part in MODIFY_QP, sending the extended command with driver data.
type modQP struct {
	plainQP
	calls int
}

func (q *modQP) Modify(modify provider.ModifyQP) error {
	q.calls++
	return modify(true, []byte{9, 9, 9, 9}, make([]byte, 16))
}

// A provider that takes part in MODIFY_QP is asked for every Modify; what it issues reaches the command fd (the
// fake one fails it: EBADF, wrapped with the transition), and a failed modify changes no state.
func TestModifyThroughProvider(t *testing.T) {
	p := &modQP{}
	qp := fakeQP(noDomainProv{}, p)
	err := qp.Modify(QPAttr{State: QPStateInit, PortNum: 1}, QPAttrState|QPAttrPort)
	if p.calls != 1 || !errors.Is(err, unix.EBADF) || !strings.Contains(err.Error(), "modify QP 0x11 RESET->INIT") ||
		qp.State() != QPStateReset {
		t.Errorf("Modify: %d provider calls, %v, state %v", p.calls, err, qp.State())
	}
}
