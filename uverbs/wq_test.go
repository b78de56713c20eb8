package uverbs

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

// The core's side of work queues and indirection tables (wq.go), with fake providers: libibverbs' refusals
// for a provider without them, the books (a listed WQ cannot be closed), the data path's errors without
// allocation, and the core requests of EX_MODIFY_WQ and EX_CREATE_RWQ_IND_TBL against libibverbs'. mlx5's side
// is tested against libmlx5 in providers/mlx5 (TestLibmlx5WQ); rxe's refusals against libibverbs' on the lab
// device in test/conformance (TestRefusalsMatchLibibverbs).

// wqProv is a context with work queues and indirection tables; each command it is given fails as the fake
// context's (fd -1: EBADF) does.
type wqProv struct {
	provider.Context
	tables int
}

func (p *wqProv) CreateWQ(pr provider.WQParams, create provider.Create[provider.WQParams, provider.WQResult]) (provider.WQ, provider.WQResult, error) {
	res, err := create(pr, nil, nil)
	return nil, res, err
}

func (p *wqProv) CreateRWQIndTable(exec provider.Exec) error { p.tables++; return exec(nil, nil) }

// fakeWQ is a provider WQ whose posts answer st after n requests.
type fakeWQ struct {
	st   provider.Status
	mods []provider.WQModify
}

func (w *fakeWQ) PostRecv(wrs []verbs.RecvWR) (int, provider.Status) {
	if w.st != provider.OK {
		return 0, w.st
	}
	return len(wrs), provider.OK
}

func (w *fakeWQ) Modify(m provider.WQModify, exec provider.Exec) error {
	w.mods = append(w.mods, m)
	return exec(nil, nil)
}

func (w *fakeWQ) Destroyed() {}

// A provider without them: CreateWQ and CreateRWQIndTable answer ErrNotSupported (EOPNOTSUPP) in an *Error
// naming the device, whatever the arguments (libibverbs asks for the op first); nothing is counted.
func TestWQNotSupported(t *testing.T) {
	c := fakeContext(noDomainProv{}, DriverRXE)
	pd := &PD{ctx: c, handle: 1}
	wq, errWQ := pd.CreateWQ(WQInitAttr{Type: WQTypeRQ, MaxWR: 4, MaxSGE: 1, CQ: &CQ{ctx: c}})
	tbl, errTbl := c.CreateRWQIndTable(nil)
	for name, err := range map[string]error{"create WQ": errWQ, "create RWQ indirection table": errTbl} {
		var e *Error
		if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) || !errors.Is(err, errors.ErrUnsupported) ||
			!errors.As(err, &e) || e.Device != "fake0" || !strings.HasPrefix(e.Op, name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if wq != nil || tbl != nil || c.objects != 0 {
		t.Errorf("made %v, %v; %d objects", wq, tbl, c.objects)
	}
}

// Arguments libibverbs refuses, and a failed command: nothing is left counted.
func TestWQArguments(t *testing.T) {
	c := fakeContext(&wqProv{}, DriverMLX5)
	c.fd, c.handles.m = -1, map[uint64]any{}
	pd := &PD{ctx: c, handle: 1}
	cq := &CQ{ctx: c, handle: 2}
	for name, tc := range map[string]struct {
		attr WQInitAttr
		want error
	}{
		"unknown flag": {WQInitAttr{Type: WQTypeRQ, MaxWR: 1, CQ: cq, Flags: 1 << 4}, ErrNotSupported},
		"no CQ":        {WQInitAttr{Type: WQTypeRQ, MaxWR: 1}, unix.EINVAL},
		"type":         {WQInitAttr{Type: 1, MaxWR: 1, CQ: cq}, unix.EINVAL},
		"command":      {WQInitAttr{Type: WQTypeRQ, MaxWR: 1, CQ: cq}, unix.EBADF},
	} {
		if _, err := pd.CreateWQ(tc.attr); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	w := &WQ{ctx: c, handle: 0x21, wqn: 5}
	other := &WQ{ctx: fakeContext(&wqProv{}, DriverMLX5), handle: 0x22}
	for name, tc := range map[string]struct {
		wqs  []*WQ
		want error
	}{
		"none":          {nil, unix.EINVAL},
		"three":         {[]*WQ{w, w, w}, unix.EINVAL},
		"other context": {[]*WQ{w, other}, unix.EINVAL},
		"nil":           {[]*WQ{nil, w}, unix.EINVAL},
		"command":       {[]*WQ{w, w}, unix.EBADF},
	} {
		if _, err := c.CreateRWQIndTable(tc.wqs); !errors.Is(err, tc.want) || w.tables.Load() != 0 {
			t.Errorf("%s: %v (want %v); the WQ is listed by %d tables", name, err, tc.want, w.tables.Load())
		}
	}
	if c.objects != 0 || len(c.handles.m) != 0 {
		t.Errorf("%d objects, %d user handles left", c.objects, len(c.handles.m))
	}
	w.life.close(func() error { return nil })
	if _, err := c.CreateRWQIndTable([]*WQ{w}); !errors.Is(err, ErrClosed) {
		t.Errorf("table of a closed WQ: %v", err)
	}
}

// A listed WQ refuses Close (EBUSY) and stays usable; Modify reaches the provider with the state the WQ is in
// and records the new one; after Close every verb is ErrClosed; the data path allocates nothing, its errors
// included.
func TestWQBooks(t *testing.T) {
	c := fakeContext(&wqProv{}, DriverMLX5)
	c.fd, c.dpErrs = -1, newDataPathErrors("fake0")
	p := &fakeWQ{}
	w := &WQ{ctx: c, pd: &PD{ctx: c}, handle: 0x21, wqn: 5, prov: p}
	w.tables.Add(1)
	if err := w.Close(); !errors.Is(err, unix.EBUSY) {
		t.Errorf("Close of a listed WQ: %v", err)
	}
	wrs := []RecvWR{{WRID: 1}}
	if n, err := w.PostRecv(wrs); n != 1 || err != nil {
		t.Errorf("PostRecv = %d, %v", n, err)
	}
	noAllocs(t, "post WQ receive", func() { w.PostRecv(wrs) })
	p.st = provider.QueueFull
	if _, err := w.PostRecv(wrs); !errors.Is(err, unix.ENOMEM) || !strings.Contains(err.Error(), "post WQ receive on fake0") {
		t.Errorf("PostRecv on a full queue: %v", err)
	}
	noAllocs(t, "post WQ receive, refused", func() { w.PostRecv(wrs) })

	// The command fails (EBADF) after the provider saw the request: the state stays.
	err := w.Modify(WQAttr{State: WQStateReady, CurState: WQStateReset}, WQAttrState|WQAttrCurState)
	if !errors.Is(err, unix.EBADF) || len(p.mods) != 1 || p.mods[0] != (provider.WQModify{From: provider.WQStateReset,
		SetsState: true, To: provider.WQStateReady, HasCurState: true, CurState: provider.WQStateReset}) || w.State() != WQStateReset {
		t.Errorf("Modify: %v, provider saw %+v, state %v", err, p.mods, w.State())
	}
	if err := w.Modify(WQAttr{}, 1<<3); !errors.Is(err, unix.EINVAL) || len(p.mods) != 1 {
		t.Errorf("unknown mask bit: %v", err)
	}
	if err := w.Modify(WQAttr{FlagsMask: 1 << 4}, WQAttrFlags); !errors.Is(err, ErrNotSupported) || len(p.mods) != 1 {
		t.Errorf("unknown flag: %v", err)
	}
	// Unlisted, Close issues WQ_DESTROY: its failure (EBADF here) leaves the WQ open and usable.
	w.tables.Add(-1)
	if err := w.Close(); !errors.Is(err, unix.EBADF) || !strings.Contains(err.Error(), "destroy WQ 0x5 on fake0") {
		t.Errorf("Close with the command failing: %v", err)
	}
	p.st = provider.OK
	if n, err := w.PostRecv(wrs); n != 1 || err != nil {
		t.Errorf("PostRecv after a failed Close = %d, %v", n, err)
	}
	w.life.close(func() error { return nil })
	if _, err := w.PostRecv(wrs); !errors.Is(err, ErrClosed) {
		t.Errorf("PostRecv after Close: %v", err)
	}
	if err := w.Modify(WQAttr{}, WQAttrState); !errors.Is(err, ErrClosed) {
		t.Errorf("Modify after Close: %v", err)
	}
}

// A table's Close issues RWQ_IND_TBL_DESTROY; while it fails (EBADF here) the table keeps its WQs listed, and
// they refuse Close; once closed, Close is a no-op.
func TestRWQIndTableClose(t *testing.T) {
	c := fakeContext(&wqProv{}, DriverMLX5)
	c.fd = -1
	w := &WQ{ctx: c, handle: 0x21, wqn: 5}
	w.tables.Add(2)
	tbl := &RWQIndTable{ctx: c, handle: 0x31, num: 0xabc, wqs: []*WQ{w, w}}
	if err := tbl.Close(); !errors.Is(err, unix.EBADF) || !strings.Contains(err.Error(), "destroy RWQ indirection table 0xabc") ||
		w.tables.Load() != 2 {
		t.Errorf("Close with the command failing: %v; WQ listed %d times", err, w.tables.Load())
	}
	if err := w.Close(); !errors.Is(err, unix.EBUSY) {
		t.Errorf("Close of a WQ the table still lists: %v", err)
	}
	if got := tbl.WQs(); len(got) != 2 || got[0] != w || tbl.Handle() != 0x31 || tbl.Num() != 0xabc {
		t.Errorf("table %v: WQs %v, handle %#x", tbl, got, tbl.Handle())
	}
}

// EX_MODIFY_WQ's and EX_CREATE_RWQ_IND_TBL's core requests are libibverbs' (testdata/libibverbs_wq.txt, which
// providers/mlx5's TestLibmlx5WQ keeps in step with the libmlx5 harness): WQ handle 0x21.
func TestWQCommandsMatchLibibverbs(t *testing.T) {
	golden := libibverbsGolden(t, "testdata/libibverbs_wq.txt")
	drv := make([]byte, 8)
	for name, in := range map[string]*abi.IbUverbsExModifyWq{
		"wq_modify.core": modifyWQIn(0x21, WQAttr{State: WQStateReady, CurState: WQStateReset}, WQAttrState|WQAttrCurState),
		"wq_flags.core": modifyWQIn(0x21, WQAttr{Flags: WQFlagScatterFCS, FlagsMask: WQFlagScatterFCS | WQFlagCVLANStripping},
			WQAttrFlags),
	} {
		cmd := modifyWQWrite(in, drv, nil)
		if cmd.Cmd != abi.IB_USER_VERBS_EX_CMD_MODIFY_WQ|abi.IB_USER_VERBS_CMD_FLAG_EXTENDED ||
			!bytes.Equal(cmd.CoreIn, golden[name]) || cmd.CoreOut != nil || !bytes.Equal(cmd.UHWIn, drv) {
			t.Errorf("%s: command %#x, core %x (libibverbs %x), response %d bytes", name, cmd.Cmd, cmd.CoreIn, golden[name], len(cmd.CoreOut))
		}
	}
	w := &WQ{handle: 0x21}
	if in := createRWQIndTableIn([]*WQ{w, w}); !bytes.Equal(in, golden["ind_create.core"]) {
		t.Errorf("EX_CREATE_RWQ_IND_TBL core request %x, libibverbs %x", in, golden["ind_create.core"])
	}
	// One entry is padded to 8 bytes, as libibverbs pads it.
	if in := createRWQIndTableIn([]*WQ{w}); len(in) != 16 || !bytes.Equal(in[8:], []byte{0x21, 0, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("one-entry table %x", in)
	}
}

// The flag, state and mask names are verbs.h's.
func TestWQNames(t *testing.T) {
	for got, want := range map[string]string{
		WQTypeRQ.String(): "RQ", WQType(7).String(): "WQType(7)",
		WQStateReady.String(): "RDY", WQStateUnknown.String(): "UNKNOWN",
		(WQFlagScatterFCS | WQFlagDelayDrop).String():            "SCATTER_FCS|DELAY_DROP",
		(WQAttrState | WQAttrFlags).String():                     "STATE|FLAGS",
		AsyncEvent{Type: EventWQFatal, WQ: &WQ{wqn: 5}}.String(): "WQ fatal on WQ 0x5",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}

// goldenLines reads a "name value" golden file of testdata (# lines are comments).
func goldenLines(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden := map[string]string{}
	for _, ln := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(ln, " "); ok && !strings.HasPrefix(ln, "#") {
			golden[k] = v
		}
	}
	return golden
}

// libibverbsGolden is goldenLines with the values hex-decoded.
func libibverbsGolden(t *testing.T, path string) map[string][]byte {
	t.Helper()
	golden := map[string][]byte{}
	for k, v := range goldenLines(t, path) {
		b, err := hex.DecodeString(v)
		if err != nil {
			t.Fatal(err)
		}
		golden[k] = b
	}
	return golden
}

// noAllocs fails t when fn allocates.
func noAllocs(t *testing.T, what string, fn func()) {
	t.Helper()
	if a := testing.AllocsPerRun(100, fn); a != 0 {
		t.Errorf("%s: %v allocs/op", what, a)
	}
}
