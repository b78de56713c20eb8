package uverbs

import (
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/enumstr"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// Work queues and RSS indirection tables (ibv_create_wq, ibv_modify_wq, ibv_destroy_wq, ibv_post_wq_recv,
// ibv_create_rwq_ind_table, ibv_destroy_rwq_ind_table).
//
// A WQ is a receive queue of its own, outside any QP: receives are posted to it (WQ.PostRecv) and complete into
// its CQ. An indirection table lists WQs; a raw packet QP made on it spreads the packets it receives over them
// by a hash of their headers (receive-side scaling). The WQ is created in RESET and must be moved to READY
// (WQ.Modify) before the device fills it.
//
// Both are optional provider operations, as in libibverbs: goverbs' mlx5 provider has them, as libmlx5 does;
// rxe and siw have neither (their rdma-core providers have no create_wq or create_rwq_ind_table op), and
// CreateWQ and CreateRWQIndTable answer an error matching ErrNotSupported and unix.EOPNOTSUPP there, before any
// argument is looked at, as libibverbs does.
//
// Lifetime: a WQ cannot be closed while an indirection table lists it (EBUSY, refused by goverbs before the
// kernel, which refuses it too), nor its CQ or PD while it lives (the kernel's EBUSY).

// WQType is a work queue's type (enum ibv_wq_type).
type WQType uint32

// Work queue types.
const (
	WQTypeRQ WQType = abi.IB_UVERBS_WQT_RQ // IBV_WQT_RQ: a receive queue
)

var wqTypeNames = [...]string{"RQ"}

func (t WQType) String() string { return enumstr.Name(wqTypeNames[:], uint64(t), "WQType") }

// WQState is a work queue's state (enum ibv_wq_state).
type WQState uint32

// Work queue states.
const (
	WQStateReset   WQState = WQState(provider.WQStateReset) // IBV_WQS_RESET
	WQStateReady   WQState = WQState(provider.WQStateReady) // IBV_WQS_RDY
	WQStateError   WQState = WQState(provider.WQStateError) // IBV_WQS_ERR
	WQStateUnknown WQState = 3                              // IBV_WQS_UNKNOWN
)

var wqStateNames = [...]string{"RESET", "RDY", "ERR", "UNKNOWN"}

func (s WQState) String() string { return enumstr.Name(wqStateNames[:], uint64(s), "WQState") }

// WQFlags are a work queue's creation and modification flags (enum ibv_wq_flags).
type WQFlags uint32

// Work queue flags.
const (
	WQFlagCVLANStripping     WQFlags = abi.IB_UVERBS_WQ_FLAGS_CVLAN_STRIPPING       // strip the customer VLAN tag
	WQFlagScatterFCS         WQFlags = abi.IB_UVERBS_WQ_FLAGS_SCATTER_FCS           // keep the frame check sequence
	WQFlagDelayDrop          WQFlags = abi.IB_UVERBS_WQ_FLAGS_DELAY_DROP            // hold packets while the WQ is empty
	WQFlagPCIWriteEndPadding WQFlags = abi.IB_UVERBS_WQ_FLAGS_PCI_WRITE_END_PADDING // pad writes to the cache line
	wqFlagsKnown             WQFlags = 1<<4 - 1
)

var wqFlagNames = [...]string{"CVLAN_STRIPPING", "SCATTER_FCS", "DELAY_DROP", "PCI_WRITE_END_PADDING"}

func (f WQFlags) String() string { return enumstr.Flags(wqFlagNames[:], uint64(f)) }

// WQInitAttr is what PD.CreateWQ makes (struct ibv_wq_init_attr; the PD is the method's receiver, wq_context
// has no counterpart, and Flags set is IBV_WQ_INIT_ATTR_FLAGS).
type WQInitAttr struct {
	Type   WQType
	MaxWR  uint32 // at least 1
	MaxSGE uint32
	CQ     *CQ // where its receives complete
	Flags  WQFlags
}

// WQ is a receive work queue (struct ibv_wq).
type WQ struct {
	ctx     *Context
	pd      *PD
	cq      *CQ
	handle  uint32
	uhandle uint64
	wqn     uint32
	attr    WQInitAttr
	state   WQState      // as libibverbs' wq->state: the last state a Modify set
	tables  atomic.Int32 // indirection tables listing it
	prov    provider.WQ
	life
}

// CreateWQ creates a work queue (ibv_create_wq) through WQ_CREATE, in RESET. The attributes come back as
// the kernel granted them (WQ.Attr). A provider without work queues (rxe, siw) answers ErrNotSupported
// (unix.EOPNOTSUPP), as libibverbs does; unknown flags are ErrNotSupported too (libibverbs' answer), a type
// other than WQTypeRQ or a missing CQ unix.EINVAL.
func (pd *PD) CreateWQ(attr WQInitAttr) (*WQ, error) {
	c := pd.ctx
	op := func() string {
		return fmt.Sprintf("create WQ (max_wr %d, max_sge %d, flags %v)", attr.MaxWR, attr.MaxSGE, attr.Flags)
	}
	wc, ok := c.prov.(provider.WQCreator)
	switch {
	case !ok:
		return nil, wrapf(c.dev.Name, fmt.Errorf("goverbs' provider for %v has no work queues: %w", c.dev.DriverID, unix.EOPNOTSUPP), "%s", op())
	case attr.Flags&^wqFlagsKnown != 0:
		return nil, wrapf(c.dev.Name, fmt.Errorf("unknown flags: %w", unix.EOPNOTSUPP), "%s", op())
	case attr.Type != WQTypeRQ || attr.CQ == nil:
		return nil, wrapf(c.dev.Name, fmt.Errorf("a WQ is of type RQ and has a CQ: %w", unix.EINVAL), "%s", op())
	}
	if err := pd.checkOpen(); err != nil {
		return nil, wrapf(c.dev.Name, err, "%s", op())
	}
	if err := attr.CQ.checkOpen(); err != nil {
		return nil, wrapf(c.dev.Name, fmt.Errorf("CQ: %w", err), "%s", op())
	}
	dom, err := pd.enterDomain()
	if err != nil {
		return nil, wrapf(c.dev.Name, err, "%s", op())
	}
	wq, err := pd.createWQIn(wc, attr, dom)
	pd.exitDomain(err == nil)
	if err != nil {
		return nil, wrapf(c.dev.Name, limitErr(c.dev.Name, "hca_object", err), "%s", op())
	}
	return wq, nil
}

func (pd *PD) createWQIn(wc provider.WQCreator, attr WQInitAttr, dom provider.ParentDomain) (*WQ, error) {
	c := pd.ctx
	if err := c.addObject(); err != nil {
		return nil, err
	}
	wq := &WQ{ctx: c, pd: pd, cq: attr.CQ}
	wq.uhandle = c.handles.add(wq)
	p := provider.WQParams{MaxWR: attr.MaxWR, MaxSGE: attr.MaxSGE, CQ: attr.CQ.prov, Flags: uint32(attr.Flags),
		Handle: wq.uhandle, ParentDomain: dom}
	var made wqCreated
	prov, res, err := wc.CreateWQ(p, func(req provider.WQParams, uhwIn, uhwOut []byte) (provider.WQResult, error) {
		var err error
		made, err = c.cmdCreateWQ(pd, attr.CQ, req, uhwIn, uhwOut)
		return provider.WQResult{MaxWR: made.maxWR, MaxSGE: made.maxSGE, WQN: made.wqn, Handle: made.handle}, err
	})
	if err != nil {
		if made.created {
			c.cmdDestroyWQ(made.handle)
		}
		c.handles.del(wq.uhandle)
		c.dropObject()
		return nil, err
	}
	wq.handle, wq.wqn, wq.prov = res.Handle, res.WQN, prov
	wq.attr = WQInitAttr{Type: attr.Type, MaxWR: res.MaxWR, MaxSGE: res.MaxSGE, CQ: attr.CQ, Flags: attr.Flags}
	return wq, nil
}

// WQN is the work queue's number (ibv_wq's wq_num).
func (wq *WQ) WQN() uint32 { return wq.wqn }

// Handle is the kernel's handle.
func (wq *WQ) Handle() uint32 { return wq.handle }

// Attr are the attributes as the kernel granted them at creation.
func (wq *WQ) Attr() WQInitAttr { return wq.attr }

// State is the state the last successful Modify set (RESET after creation), as libibverbs keeps it.
func (wq *WQ) State() WQState {
	wq.mu.Lock()
	defer wq.mu.Unlock()
	return wq.state
}

// String names the WQ.
func (wq *WQ) String() string { return fmt.Sprintf("WQ %#x on %s", wq.wqn, wq.ctx.dev.Name) }

// PostRecv posts receive work requests to the WQ (ibv_post_wq_recv). It returns how many were posted; on error
// wrs[n] is the first request not posted. It allocates nothing.
func (wq *WQ) PostRecv(wrs []RecvWR) (int, error) {
	if !wq.g.Enter() {
		return 0, wq.ctx.dpErrs.get(opPostWQRecv, provider.Destroyed)
	}
	n, st := wq.prov.PostRecv(wrs)
	wq.g.Exit()
	if st != provider.OK {
		return n, wq.ctx.dpErrs.get(opPostWQRecv, st)
	}
	return n, nil
}

// WQAttrMask selects the WQAttr fields WQ.Modify changes (enum ibv_wq_attr_mask).
type WQAttrMask uint32

// WQ attribute mask bits.
const (
	WQAttrState     WQAttrMask = 1 << 0 // IBV_WQ_ATTR_STATE: move to State
	WQAttrCurState  WQAttrMask = 1 << 1 // IBV_WQ_ATTR_CURR_STATE: CurState is the state the WQ is expected in
	WQAttrFlags     WQAttrMask = 1 << 2 // IBV_WQ_ATTR_FLAGS: set the Flags selected by FlagsMask
	wqAttrMaskKnown WQAttrMask = 1<<3 - 1
)

var wqAttrMaskNames = [...]string{"STATE", "CURR_STATE", "FLAGS"}

func (m WQAttrMask) String() string { return enumstr.Flags(wqAttrMaskNames[:], uint64(m)) }

// WQAttr are a WQ modification's attributes (struct ibv_wq_attr; the mask is Modify's argument).
type WQAttr struct {
	State     WQState
	CurState  WQState
	Flags     WQFlags
	FlagsMask WQFlags
}

// Modify changes the WQ's state or flags (ibv_modify_wq) through EX_MODIFY_WQ with the provider's driver data.
// An unknown mask bit is unix.EINVAL and an unknown flag in FlagsMask ErrNotSupported, as libibverbs answers.
// mlx5 (as libmlx5) refuses a move to READY whose CurState is not the WQ's with unix.EINVAL (libmlx5 returns
// -EINVAL, a negative errno, from ibv_modify_wq; goverbs' error is EINVAL), and on a move from RESET to READY
// first drops the WQ's completions from its CQ and rewinds its ring.
func (wq *WQ) Modify(attr WQAttr, mask WQAttrMask) error {
	c := wq.ctx
	op := func() string { return fmt.Sprintf("modify WQ %#x (mask %v, state %v)", wq.wqn, mask, attr.State) }
	if err := wq.enter(); err != nil {
		return wrapf(c.dev.Name, err, "%s", op())
	}
	defer wq.exit()
	if mask&^wqAttrMaskKnown != 0 {
		return wrapf(c.dev.Name, fmt.Errorf("unknown mask bits: %w", unix.EINVAL), "%s", op())
	}
	in := modifyWQIn(wq.handle, attr, mask)
	if mask&WQAttrFlags != 0 && attr.FlagsMask&^wqFlagsKnown != 0 {
		return wrapf(c.dev.Name, fmt.Errorf("unknown flags: %w", unix.EOPNOTSUPP), "%s", op())
	}
	wq.mu.Lock()
	defer wq.mu.Unlock()
	m := provider.WQModify{From: provider.WQState(wq.state), SetsState: mask&WQAttrState != 0,
		To: provider.WQState(attr.State), HasCurState: mask&WQAttrCurState != 0, CurState: provider.WQState(attr.CurState)}
	err := wq.prov.Modify(m, func(uhwIn, uhwOut []byte) error { return c.write(modifyWQWrite(in, uhwIn, uhwOut)) })
	if err != nil {
		return wrapf(c.dev.Name, err, "%s", op())
	}
	if mask&WQAttrState != 0 {
		wq.state = attr.State
	}
	return nil
}

// Close destroys the WQ (ibv_destroy_wq). While an indirection table lists it, Close fails with an error
// matching unix.EBUSY and the WQ stays open.
func (wq *WQ) Close() error {
	if wq == nil {
		return nil
	}
	return wq.life.close(func() error {
		c := wq.ctx
		if n := wq.tables.Load(); n > 0 {
			return wrapf(c.dev.Name, fmt.Errorf("%d indirection tables list it: %w", n, unix.EBUSY), "destroy WQ %#x", wq.wqn)
		}
		if _, err := c.cmdDestroyWQ(wq.handle); err != nil {
			return wrapf(c.dev.Name, err, "destroy WQ %#x", wq.wqn)
		}
		wq.prov.Destroyed()
		c.handles.del(wq.uhandle)
		wq.pd.dropUser()
		c.dropObject()
		return nil
	})
}

// RWQIndTable is a receive work queue indirection table (struct ibv_rwq_ind_table).
type RWQIndTable struct {
	ctx    *Context
	handle uint32
	num    uint32
	wqs    []*WQ
	life
}

// CreateRWQIndTable creates an RSS indirection table listing wqs (ibv_create_rwq_ind_table, whose
// log_ind_tbl_size is log2(len(wqs)) and ind_tbl wqs) through EX_CREATE_RWQ_IND_TBL. len(wqs) must be a power
// of two and every WQ open and of this context (unix.EINVAL otherwise); a WQ may be listed more than once. The
// WQs cannot be closed while the table lists them. A provider without indirection tables (rxe, siw) answers
// ErrNotSupported (unix.EOPNOTSUPP) whatever wqs is, as libibverbs does.
func (c *Context) CreateRWQIndTable(wqs []*WQ) (*RWQIndTable, error) {
	op := func() string { return fmt.Sprintf("create RWQ indirection table of %d WQs", len(wqs)) }
	tc, ok := c.prov.(provider.RWQIndTableCreator)
	if !ok {
		return nil, wrapf(c.dev.Name, fmt.Errorf("goverbs' provider for %v has no indirection tables: %w",
			c.dev.DriverID, unix.EOPNOTSUPP), "%s", op())
	}
	if len(wqs) == 0 || len(wqs)&(len(wqs)-1) != 0 {
		return nil, wrapf(c.dev.Name, fmt.Errorf("the number of WQs is not a power of two: %w", unix.EINVAL), "%s", op())
	}
	// Hold every WQ open (and counted) while the command names its handle.
	held := 0
	release := func() {
		for _, w := range wqs[:held] {
			w.tables.Add(-1)
			w.exit()
		}
	}
	for i, w := range wqs {
		if w == nil || w.ctx != c {
			release()
			return nil, wrapf(c.dev.Name, fmt.Errorf("WQ %d is not of this context: %w", i, unix.EINVAL), "%s", op())
		}
		if err := w.enter(); err != nil {
			release()
			return nil, wrapf(c.dev.Name, fmt.Errorf("WQ %d: %w", i, err), "%s", op())
		}
		w.tables.Add(1)
		held++
	}
	defer func() {
		for _, w := range wqs {
			w.exit()
		}
	}()
	fail := func(err error) (*RWQIndTable, error) {
		for _, w := range wqs {
			w.tables.Add(-1)
		}
		return nil, wrapf(c.dev.Name, limitErr(c.dev.Name, "hca_object", err), "%s", op())
	}
	if err := c.addObject(); err != nil {
		return fail(err)
	}
	in := createRWQIndTableIn(wqs)
	out := new(abi.IbUverbsExCreateRwqIndTableResp)
	created := false
	err := tc.CreateRWQIndTable(func(uhwIn, uhwOut []byte) error {
		err := c.write(&rawcmd.Write{Cmd: abi.IB_USER_VERBS_EX_CMD_CREATE_RWQ_IND_TBL | abi.IB_USER_VERBS_CMD_FLAG_EXTENDED,
			CoreIn: in, CoreOut: rawcmd.Bytes(out), UHWIn: uhwIn, UHWOut: uhwOut})
		created = err == nil
		return err
	})
	if err == nil && out.ResponseLength < uint32(abi.SizeofIbUverbsExCreateRwqIndTableResp) {
		err = fmt.Errorf("short response (%d bytes): %w", out.ResponseLength, unix.EINVAL)
	}
	if err != nil {
		if created {
			c.destroyObject(abi.UVERBS_OBJECT_RWQ_IND_TBL, abi.UVERBS_METHOD_RWQ_IND_TBL_DESTROY,
				abi.UVERBS_ATTR_DESTROY_RWQ_IND_TBL_HANDLE, out.IndTblHandle)
		}
		c.dropObject()
		return fail(err)
	}
	return &RWQIndTable{ctx: c, handle: out.IndTblHandle, num: out.IndTblNum, wqs: append([]*WQ(nil), wqs...)}, nil
}

// createRWQIndTableIn is EX_CREATE_RWQ_IND_TBL's core request for wqs (a power of two of them): comp_mask 0,
// the log of the size, the WQ handles, padded to a multiple of 8 bytes as libibverbs pads it.
func createRWQIndTableIn(wqs []*WQ) []byte {
	hdr := abi.IbUverbsExCreateRwqIndTable{LogIndTblSize: uint32(bits.TrailingZeros(uint(len(wqs))))}
	n := int(abi.SizeofIbUverbsExCreateRwqIndTable) + 4*len(wqs)
	b := make([]byte, (n+7)/8*8)
	copy(b, rawcmd.Bytes(&hdr))
	for i, w := range wqs {
		putNative32(b[int(abi.SizeofIbUverbsExCreateRwqIndTable)+4*i:], w.handle)
	}
	return b
}

// Handle is the kernel's handle of the table (ibv_rwq_ind_table's ind_tbl_handle), the one a QP made on it
// names.
func (t *RWQIndTable) Handle() uint32 { return t.handle }

// Num is the table's number (ind_tbl_num).
func (t *RWQIndTable) Num() uint32 { return t.num }

// WQs are the WQs the table lists, in order.
func (t *RWQIndTable) WQs() []*WQ { return append([]*WQ(nil), t.wqs...) }

// String names the table.
func (t *RWQIndTable) String() string {
	return fmt.Sprintf("RWQ indirection table %#x of %d WQs on %s", t.num, len(t.wqs), t.ctx.dev.Name)
}

// Close destroys the table (ibv_destroy_rwq_ind_table) through RWQ_IND_TBL_DESTROY; its WQs may be closed
// afterwards. The kernel refuses (EBUSY) while a QP uses it.
func (t *RWQIndTable) Close() error {
	if t == nil {
		return nil
	}
	return t.life.close(func() error {
		c := t.ctx
		if err := c.destroyObject(abi.UVERBS_OBJECT_RWQ_IND_TBL, abi.UVERBS_METHOD_RWQ_IND_TBL_DESTROY,
			abi.UVERBS_ATTR_DESTROY_RWQ_IND_TBL_HANDLE, t.handle); err != nil {
			return wrapf(c.dev.Name, err, "destroy RWQ indirection table %#x", t.num)
		}
		for _, w := range t.wqs {
			w.tables.Add(-1)
		}
		c.dropObject()
		return nil
	})
}
