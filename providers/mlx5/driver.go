package mlx5

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/mmio"
	"github.com/goverbs/goverbs/providers/mlx5/internal/hw"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// This file connects the data path to the verbs core (internal/provider): the driver payloads of GET_CONTEXT,
// ALLOC_PD, CQ/QP/SRQ creation and CREATE_AH, UAR mapping, doorbell-record and ring memory. It follows rdma-core's
// defaults on a 6.1 kernel: dynamic UARs (one NC page for CQ doorbells, BlueFlame pages for QPs), CQE version 1,
// scatter-to-CQE enabled. Every system call goes through sysOps so that tests can put an emulated device behind
// it.

func init() { provider.Register(driver{}) }

// driver is the mlx5 provider (RDMA_DRIVER_MLX5, uverbs ABI 1).
type driver struct{}

// Name implements provider.Driver.
func (driver) Name() string { return "mlx5" }

// DriverID implements provider.Driver.
func (driver) DriverID() uint32 { return abi.RDMA_DRIVER_MLX5 }

// ABI implements provider.Driver (MLX5_IB_UVERBS_ABI_VERSION is 1).
func (driver) ABI() (uint32, uint32) { return 1, 1 }

// sysOps are the system calls the provider makes besides the core's commands.
type sysOps interface {
	// mapUAR maps length bytes of the command fd at offset (a UAR page), PROT_WRITE, MAP_SHARED.
	mapUAR(fd int, offset int64, length int) ([]byte, error)
	// mapClock maps length bytes of the command fd at offset (the HCA core clock page), PROT_READ, MAP_SHARED.
	mapClock(fd int, offset int64, length int) ([]byte, error)
	// mapDM maps length bytes of the command fd at offset (MEMIC device memory), PROT_READ|PROT_WRITE,
	// MAP_SHARED.
	mapDM(fd int, offset int64, length int) ([]byte, error)
	// anon returns n bytes of zeroed, page-aligned private memory for rings and doorbell records.
	anon(n int) ([]byte, error)
	unmap(b []byte) error
}

type realSys struct{}

func (realSys) mapUAR(fd int, offset int64, length int) ([]byte, error) {
	return unix.Mmap(fd, offset, length, unix.PROT_WRITE, unix.MAP_SHARED)
}
func (realSys) mapClock(fd int, offset int64, length int) ([]byte, error) {
	return unix.Mmap(fd, offset, length, unix.PROT_READ, unix.MAP_SHARED)
}
func (realSys) mapDM(fd int, offset int64, length int) ([]byte, error) {
	return unix.Mmap(fd, offset, length, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}
func (realSys) anon(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
}
func (realSys) unmap(b []byte) error { return unix.Munmap(b) }

// AllocContext implements provider.Driver: GET_CONTEXT with rdma-core's request (retried without DEVX, as
// rdma-core does, when the kernel refuses it), then the NC UAR for CQ doorbells.
func (driver) AllocContext(dev *provider.Device, exec provider.Exec) (provider.Context, error) {
	return allocContext(dev, exec, realSys{})
}

func allocContext(dev *provider.Device, exec provider.Exec, sys sysOps) (*mctx, error) {
	req := hw.DefaultAllocUcontextReq(true)
	resp := new(abi.Mlx5IbAllocUcontextResp)
	err := exec(bytesOf(&req), bytesOf(resp))
	if err != nil {
		req.Flags &^= abi.MLX5_IB_ALLOC_UCTX_DEVX
		if err = exec(bytesOf(&req), bytesOf(resp)); err != nil {
			return nil, fmt.Errorf("mlx5: get context on %s: %w", dev.Name, err)
		}
	}
	c := &mctx{dev: *dev, sys: sys, caps: hw.CapsFromResp(resp, dev.PageSize), resp: *resp}
	if resp.TotBfregs != 0 {
		// A kernel that ignored MLX5_LIB_CAP_DYN_UAR hands out static bfregs; this provider only speaks the
		// dynamic scheme rdma-core uses on every kernel since 4.17.
		return nil, fmt.Errorf("mlx5: get context on %s: kernel assigned %d static bfregs: %w", dev.Name,
			resp.TotBfregs, hw.ErrNotSupported)
	}
	if c.caps.UARsPerPage < 1 {
		return nil, fmt.Errorf("mlx5: get context on %s: %d UARs per page: %w", dev.Name, c.caps.UARsPerPage, errInvalid)
	}
	nc, err := c.newUARPage(hw.UARTypeNC)
	if err != nil {
		return nil, err
	}
	c.nc = nc
	c.cqUAR = nc.reg
	regs, err := hw.DynamicBfregs(nc.reg, c.caps.UARsPerPage, 0, true)
	if err != nil {
		return nil, errors.Join(err, c.Close())
	}
	// Without BlueFlame every QP rings one shared NC register, as rdma-core routes them all to its NC UAR.
	c.ncReg, _ = hw.NewBFReg(regs[0].Reg(), 0, true)
	c.setOptional(resp)
	return c, nil
}

// uarPage is one mapped UAR object.
type uarPage struct {
	obj hw.UARObject
	mem []byte
	reg mmio.Reg
}

// mctx is the provider's per-context state.
type mctx struct {
	dev   provider.Device
	sys   sysOps
	caps  hw.Caps
	resp  abi.Mlx5IbAllocUcontextResp
	mu    sync.Mutex
	nc    *uarPage
	cqUAR mmio.Reg
	ncReg *hw.BFReg
	bf    []*uarPage // BlueFlame pages
	free  []bfSlot   // BlueFlame registers not in use
	dbrs  [][]byte   // doorbell-record pages
	dbrFr [][]byte   // free doorbell records
	uidx  uint32     // next user index
	uidxF []uint32   // freed user indexes
	// What the GET_CONTEXT response offers besides the queues (qpext.go): ECE, the HCA core clock (its page
	// mapped, nil without one), the dump-fill mkey of null MRs.
	ece        bool
	clock      *hw.Clock
	clockPage  []byte
	nullKey    uint32
	hasNullKey bool
	// ppBurst: the device has MLX5_IB_PP_SUPPORT_BURST; never set, as the provider does not issue the
	// extended QUERY_DEVICE with its driver response, where libmlx5 learns it.
	ppBurst bool
}

type bfSlot struct {
	reg    *hw.BFReg
	pageID uint32
}

// uarTypeName names a UAR allocation type in errors.
func uarTypeName(typ uint32) string {
	if typ == hw.UARTypeNC {
		return "NC"
	}
	return "BlueFlame"
}

// allocUAR creates a dynamic UAR object (rdma-core mlx5_alloc_dyn_uar) through the core's driver-object hook,
// which counts it and maps a cgroup refusal to the core's limit error.
func (c *mctx) allocUAR(typ uint32) (hw.UARObject, error) {
	if c.dev.Objects == nil {
		return hw.UARObject{}, fmt.Errorf("mlx5: allocate %s UAR on %s: the verbs core offers no driver-object hook: %w",
			uarTypeName(typ), c.dev.Name, hw.ErrNotSupported)
	}
	out := new(hw.UARObject)
	cmd := rawcmd.New(0, 0, 0)
	h := hw.BuildUARAlloc(cmd, typ, out)
	if err := c.dev.Objects(cmd, true); err != nil {
		return hw.UARObject{}, fmt.Errorf("mlx5: allocate %s UAR on %s: %w", uarTypeName(typ), c.dev.Name, err)
	}
	out.Handle = cmd.Handle(h)
	return *out, nil
}

// destroyUAR destroys a UAR object (after its mapping is gone) through the core's driver-object hook.
func (c *mctx) destroyUAR(obj hw.UARObject) error {
	cmd := rawcmd.New(0, 0, 0)
	hw.BuildUARDestroy(cmd, obj.Handle)
	if err := c.dev.Objects(cmd, false); err != nil {
		return fmt.Errorf("mlx5: destroy UAR page %d (handle %d) on %s: %w", obj.PageID, obj.Handle, c.dev.Name, err)
	}
	return nil
}

func (c *mctx) newUARPage(typ uint32) (*uarPage, error) {
	obj, err := c.allocUAR(typ)
	if err != nil {
		return nil, err
	}
	mem, err := c.sys.mapUAR(c.dev.FD, int64(obj.MmapOffset), int(obj.MmapLength))
	if err != nil {
		err = fmt.Errorf("mlx5: map %s UAR page %d on %s: %w", uarTypeName(typ), obj.PageID, c.dev.Name, err)
		return nil, errors.Join(err, c.destroyUAR(obj))
	}
	reg, err := mmio.RegFromBytes(mem)
	if err != nil {
		err = fmt.Errorf("mlx5: map %s UAR page %d on %s: %w: %w", uarTypeName(typ), obj.PageID, c.dev.Name, err, errInvalid)
		return nil, errors.Join(err, c.sys.unmap(mem), c.destroyUAR(obj))
	}
	return &uarPage{obj: obj, mem: mem, reg: reg}, nil
}

// freePage unmaps and destroys a UAR page.
func (c *mctx) freePage(p *uarPage) error {
	var err error
	if e := c.sys.unmap(p.mem); e != nil {
		err = fmt.Errorf("mlx5: unmap UAR page %d on %s: %w", p.obj.PageID, c.dev.Name, e)
	}
	return errors.Join(err, c.destroyUAR(p.obj))
}

// Caps returns what the context reported (BlueFlame availability, CQE version, limits).
func (c *mctx) Caps() hw.Caps { return c.caps }

// mlx5's extended-QP operations per QP type: rdma-core's MLX5_SUPPORTED_SEND_OPS_FLAGS_* less what this
// provider's PostSend does not build (memory-window binds and local invalidation, answered EOPNOTSUPP when
// posted), so that a QP is refused at creation rather than at its first Complete. XRC sends need the remote
// SRQ number, which no work request carries yet, and raw packet QPs (TSO) are not made: none.
const (
	mlx5SendOpsRC = verbs.SendOpSend | verbs.SendOpSendWithInv | verbs.SendOpSendWithImm | verbs.SendOpRDMAWrite |
		verbs.SendOpRDMAWriteWithImm | verbs.SendOpRDMARead | verbs.SendOpAtomicCmpAndSwp | verbs.SendOpAtomicFetchAndAdd
	mlx5SendOpsUC = verbs.SendOpSend | verbs.SendOpSendWithInv | verbs.SendOpSendWithImm | verbs.SendOpRDMAWrite |
		verbs.SendOpRDMAWriteWithImm
	mlx5SendOpsUD = verbs.SendOpSend | verbs.SendOpSendWithImm
)

// SendOps implements provider.SendOpsSupporter.
func (c *mctx) SendOps(t verbs.QPType) verbs.SendOps {
	switch t {
	case verbs.QPTypeRC:
		return mlx5SendOpsRC
	case verbs.QPTypeUC:
		return mlx5SendOpsUC
	case verbs.QPTypeUD:
		return mlx5SendOpsUD
	}
	return 0
}

// takeBF returns a dedicated BlueFlame register and its UAR page id, allocating a new BF page when all are in use;
// without BlueFlame it returns the shared NC register.
func (c *mctx) takeBF() (bfSlot, error) {
	if !c.caps.BlueFlame {
		return bfSlot{reg: c.ncReg, pageID: c.nc.obj.PageID}, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.free) == 0 {
		p, err := c.newUARPage(hw.UARTypeBF)
		if err != nil {
			return bfSlot{}, err
		}
		regs, err := hw.DynamicBfregs(p.reg, c.caps.UARsPerPage, c.caps.BFRegSize, false)
		if err != nil {
			return bfSlot{}, errors.Join(err, c.freePage(p))
		}
		c.bf = append(c.bf, p)
		for _, r := range regs {
			c.free = append(c.free, bfSlot{reg: r, pageID: p.obj.PageID})
		}
	}
	s := c.free[len(c.free)-1]
	c.free = c.free[:len(c.free)-1]
	return s, nil
}

func (c *mctx) putBF(s bfSlot) {
	if s.reg == c.ncReg {
		return
	}
	c.mu.Lock()
	c.free = append(c.free, s)
	c.mu.Unlock()
}

// dbr returns a zeroed 8-byte doorbell record at a cache-line stride in a pinned page (rdma-core dbrec.c).
func (c *mctx) dbr() ([]byte, hw.DoorbellRecord, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.dbrFr) == 0 {
		page, err := c.sys.anon(c.dev.PageSize)
		if err != nil {
			return nil, hw.DoorbellRecord{}, fmt.Errorf("mlx5: allocate doorbell records: %w", err)
		}
		c.dbrs = append(c.dbrs, page)
		stride := max(int(c.resp.CacheLineSize), 64)
		for off := len(page) - stride; off >= 0; off -= stride {
			c.dbrFr = append(c.dbrFr, page[off:off+8:off+8])
		}
	}
	b := c.dbrFr[len(c.dbrFr)-1]
	c.dbrFr = c.dbrFr[:len(c.dbrFr)-1]
	clear(b)
	d, err := hw.NewDoorbellRecord(b)
	return b, d, err
}

func (c *mctx) putDBR(b []byte) {
	c.mu.Lock()
	c.dbrFr = append(c.dbrFr, b)
	c.mu.Unlock()
}

// userIndex allocates a 24-bit user index (CQE version 1) or returns 0xffffff (version 0).
func (c *mctx) userIndex() uint32 {
	if c.caps.CQEVersion == 0 {
		return 0xffffff
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.uidxF); n > 0 {
		u := c.uidxF[n-1]
		c.uidxF = c.uidxF[:n-1]
		return u
	}
	u := c.uidx
	c.uidx++
	return u
}

func (c *mctx) putUserIndex(u uint32) {
	if c.caps.CQEVersion == 0 {
		return
	}
	c.mu.Lock()
	c.uidxF = append(c.uidxF, u)
	c.mu.Unlock()
}

// ring returns page-rounded private memory for a queue buffer.
func (c *mctx) ring(n int) ([]byte, error) {
	ps := c.dev.PageSize
	b, err := c.sys.anon((n + ps - 1) / ps * ps)
	if err != nil {
		return nil, fmt.Errorf("mlx5: allocate %d-byte queue buffer: %w", n, err)
	}
	return b, nil
}

// AllocPD implements provider.Context: the driver response carries the PD number.
func (c *mctx) AllocPD(exec provider.Exec) (provider.PD, error) {
	var resp abi.Mlx5IbAllocPdResp
	if err := exec(nil, bytesOf(&resp)); err != nil {
		return nil, err
	}
	return pd(resp.Pdn), nil
}

type pd uint32

func (p pd) PDN() uint32 { return uint32(p) }

// CreateCQ implements provider.Context: a stamped ring of roundup_pow2(cqe+1) 64-byte CQEs, a doorbell record, and
// the NC UAR page for the arm doorbell.
func (c *mctx) CreateCQ(p provider.CQParams, create provider.Create[provider.CQParams, provider.CQResult]) (provider.CQ, provider.CQResult, error) {
	var res provider.CQResult
	if p.CQE < 1 || p.CQE > 1<<24-1 {
		return nil, res, fmt.Errorf("mlx5: create CQ of %d entries: %w", p.CQE, errInvalid)
	}
	d, err := c.domainOf(p.ParentDomain)
	if err != nil {
		return nil, res, err
	}
	n := roundupPow2(p.CQE + 1)
	buf, ext, err := c.ringFrom(n*hw.CQESize, d, resCQ)
	if err != nil {
		return nil, res, err
	}
	dbrb, dbr, err := c.dbr()
	if err != nil {
		c.freeRing(buf, ext, d, resCQ)
		return nil, res, err
	}
	hw.StampCQBuffer(buf[:n*hw.CQESize])
	p.CQE = n - 1
	req := hw.CreateCQReq(addrOf(buf), addrOf(dbrb), int(c.nc.obj.PageID))
	var resp abi.Mlx5IbCreateCqResp
	if res, err = create(p, bytesOf(&req), bytesOf(&resp)); err != nil {
		c.putDBR(dbrb)
		c.freeRing(buf, ext, d, resCQ)
		return nil, res, err
	}
	cq, err := hw.NewCQ(hw.CQConfig{Buf: buf, CQECount: n, CQN: resp.Cqn, DBR: dbr, UAR: c.cqUAR, CQEVersion: c.caps.CQEVersion})
	if err != nil {
		c.putDBR(dbrb) // the core destroys the kernel hw.CQ
		c.freeRing(buf, ext, d, resCQ)
		return nil, res, err
	}
	if d != nil {
		d.refs.Add(1)
	}
	return &cqAdapter{CQ: cq, ctx: c, mem: buf, ext: ext, dom: d, dbr: dbrb}, res, nil
}

// cqAdapter is a CQ as the verbs core sees it. mu is rdma-core's CQ lock: hw.CQ is not safe for concurrent use,
// and the core calls it from several goroutines at once — Poll from each poller, Attach and Detach when a QP on
// this CQ is created or closed (the core's Close of that QP waits for the QP's own calls, not this CQ's), Arm and
// EventReceived from whoever waits for events.
type cqAdapter struct {
	*hw.CQ
	mu     sync.Mutex
	ctx    *mctx
	mem    []byte
	ext    []byte   // mem as the parent domain's allocator returned it (nil: anonymous memory)
	dom    *pdomain // the parent domain it was made in, or nil
	dbr    []byte
	newMem []byte
}

// Poll implements provider.CQ (nosplit: as qpAdapter.PostSend).
//
//go:nosplit
func (a *cqAdapter) Poll(wc []verbs.WC) (int, provider.Status) {
	a.mu.Lock()
	n, st := a.CQ.Poll(wc)
	a.mu.Unlock()
	return n, st
}

// Attach and Detach record a QP whose completions arrive here (created) or no longer do (destroyed).
func (a *cqAdapter) Attach(qp *hw.QP) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.CQ.Attach(qp)
}

// Detach also removes the QP's completions still in the CQ (rdma-core's mlx5_destroy_qp cleans its CQs), so a
// later Poll does not meet a CQE of a QP it no longer knows.
func (a *cqAdapter) Detach(qp *hw.QP) {
	a.mu.Lock()
	a.CQ.Clean(qp)
	a.CQ.Detach(qp)
	a.mu.Unlock()
}

// Arm implements provider.CQ.
func (a *cqAdapter) Arm(solicitedOnly bool) error {
	a.mu.Lock()
	a.CQ.Arm(solicitedOnly)
	a.mu.Unlock()
	return nil
}

// EventReceived implements provider.CQ.
func (a *cqAdapter) EventReceived() {
	a.mu.Lock()
	a.CQ.Event()
	a.mu.Unlock()
}

// Resize implements provider.CQ (rdma-core mlx5_resize_cq): a new stamped buffer, RESIZE_CQ, then the pending
// CQEs are moved over. The same rounded size is a no-op.
func (a *cqAdapter) Resize(cqe int, resize provider.Create[int, int]) (int, error) {
	if cqe < 1 || cqe > 1<<24-1 {
		return 0, fmt.Errorf("mlx5: resize CQ %#x to %d: %w", a.CQN(), cqe, errInvalid)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n := roundupPow2(cqe + 1)
	if n == a.Entries() {
		return n - 1, nil
	}
	buf, ext, err := a.ctx.ringFrom(n*hw.CQESize, a.dom, resCQ)
	if err != nil {
		return 0, err
	}
	if err := a.BeginResize(buf, n); err != nil {
		a.ctx.freeRing(buf, ext, a.dom, resCQ)
		return 0, err
	}
	req := hw.ResizeCQReq(addrOf(buf))
	got, err := resize(n-1, bytesOf(&req), nil)
	if err != nil {
		a.AbortResize()
		a.ctx.freeRing(buf, ext, a.dom, resCQ)
		return 0, err
	}
	if err := a.CompleteResize(); err != nil {
		return 0, err
	}
	a.ctx.freeRing(a.mem, a.ext, a.dom, resCQ)
	a.mem, a.ext = buf, ext
	return got, nil
}

// Destroyed implements provider.CQ.
func (a *cqAdapter) Destroyed() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ctx.freeRing(a.mem, a.ext, a.dom, resCQ)
	a.ctx.putDBR(a.dbr)
	a.dom.drop()
}

// CreateQP implements provider.Context: rdma-core's sizing, one buffer with the RQ first, a doorbell record, a
// dedicated BlueFlame register (or the shared NC one), a user index, and MLX5_QP_FLAG_SCATTER_CQE.
func (c *mctx) CreateQP(p provider.QPParams, create provider.Create[provider.QPParams, provider.QPResult]) (provider.QP, provider.QPResult, error) {
	var res provider.QPResult
	var t hw.QPType
	switch p.Type {
	case verbs.QPTypeRC:
		t = hw.QPTypeRC
	case verbs.QPTypeUC:
		t = hw.QPTypeUC
	case verbs.QPTypeUD:
		t = hw.QPTypeUD
	default:
		return nil, res, fmt.Errorf("mlx5: create QP of type %v: %w", p.Type, hw.ErrNotSupported)
	}
	// A QP on an SRQ has no receive queue of its own; its receive completions retire WQEs through the SRQ's
	// wr_id table and free list (rdma-core: the CQE names the QP, whose ibv_qp.srq is used).
	var srq *srqAdapter
	if p.HasSRQ {
		s, ok := p.SRQ.(*srqAdapter)
		if !ok || s == nil || s.SRQ == nil {
			return nil, res, fmt.Errorf("mlx5: create QP on an SRQ: SRQ %T is not an mlx5 SRQ: %w", p.SRQ, errInvalid)
		}
		srq = s
	} else if p.SRQ != nil {
		return nil, res, fmt.Errorf("mlx5: create QP: SRQ given without HasSRQ: %w", errInvalid)
	}
	d, err := c.domainOf(p.ParentDomain)
	if err != nil {
		return nil, res, err
	}
	scq, ok1 := p.SendCQ.(*cqAdapter)
	rcq, ok2 := p.RecvCQ.(*cqAdapter)
	if !ok1 || !ok2 {
		return nil, res, fmt.Errorf("mlx5: create QP: completion queues of another provider: %w", errInvalid)
	}
	caps := hw.QPCaps{MaxSendWR: int(p.Cap.MaxSendWR), MaxRecvWR: int(p.Cap.MaxRecvWR), MaxSendSGE: int(p.Cap.MaxSendSGE),
		MaxRecvSGE: int(p.Cap.MaxRecvSGE), MaxInlineData: int(p.Cap.MaxInlineData)}
	l, err := hw.SizeQP(t, caps, srq != nil, c.caps.Limits, c.dev.PageSize)
	if err != nil {
		return nil, res, err
	}
	q := &qpAdapter{ctx: c, scq: scq, rcq: rcq}
	q.dom, q.res = d, resQP
	if q.mem, q.ext, err = c.ringFrom(max(l.BufSize, c.dev.PageSize), d, resQP); err != nil {
		return nil, res, err
	}
	if q.dbrMem, q.dbr, err = c.dbr(); err != nil {
		q.release()
		return nil, res, err
	}
	if td := d.threadDomain(); td != nil {
		// mlx5_create_qp: a QP in a thread domain rings the TD's register, and its queues take no lock.
		q.bf, q.tdBF, q.single = td.bf, true, true
	} else if q.bf, err = c.takeBF(); err != nil {
		q.release()
		return nil, res, err
	}
	q.uidx = c.userIndex()
	p.Cap.MaxInlineData = uint32(l.Caps.MaxInlineData)
	req := hw.CreateQPReq(l, addrOf(q.mem), addrOf(q.dbrMem), q.uidx, int(q.bf.pageID), true)
	if c.ece {
		req.EceOptions = hw.ECECreateTrigger // mlx5_create_qp: start ECE negotiation at version 1
	}
	var resp abi.Mlx5IbCreateQpResp
	if res, err = create(p, bytesOf(&req), bytesOf(&resp)); err != nil {
		q.release()
		return nil, res, err
	}
	q.getECE.Store(resp.EceOptions)
	qpn := res.QPN
	sq, err := hw.NewSendQueue(hw.SendQueueConfig{Buf: q.mem[l.SQOffset:], WQECount: l.SQWQECount, MaxPost: l.SQMaxPost,
		MaxSGE: l.Caps.MaxSendSGE, MaxInline: l.Caps.MaxInlineData, QPN: qpn, Type: t, DBR: q.dbr, BF: q.bf.reg,
		SignalAll: p.SigAll, Atomics: t == hw.QPTypeRC})
	if err != nil {
		q.release()
		return nil, res, err
	}
	q.QP = &hw.QP{QPN: qpn, UserIndex: q.uidx, SQ: sq}
	if srq != nil {
		q.QP.SRQ = srq.SRQ
	} else if l.RQWQECount > 0 {
		if q.RQ, err = hw.NewRecvQueue(hw.RecvQueueConfig{Buf: q.mem[:l.SQOffset], WQECount: l.RQWQECount,
			WQEShift: l.RQWQEShift, MaxPost: l.RQMaxPost, DBR: q.dbr, QPN: qpn}); err != nil {
			q.release()
			return nil, res, err
		}
	}
	q.post.Store(postBits(verbs.QPStateReset, q.RQ != nil))
	if err := scq.Attach(q.QP); err != nil {
		q.release()
		return nil, res, err
	}
	if rcq != scq {
		if err := rcq.Attach(q.QP); err != nil {
			scq.Detach(q.QP)
			q.release()
			return nil, res, err
		}
	}
	res.Cap = verbs.QPCap{MaxSendWR: uint32(l.Caps.MaxSendWR), MaxRecvWR: uint32(l.Caps.MaxRecvWR),
		MaxSendSGE: uint32(l.Caps.MaxSendSGE), MaxRecvSGE: uint32(l.Caps.MaxRecvSGE),
		MaxInlineData: uint32(l.Caps.MaxInlineData)}
	if d != nil {
		d.refs.Add(1)
	}
	return q, res, nil
}

// qpAdapter is a QP as the verbs core sees it; posting is gated on the state as rdma-core does (receives from
// INIT, sends from RTS).
//
// sqMu and rqMu are rdma-core's sq.lock and rq.lock: the core lets any number of goroutines post to one QP, and
// hw's queues leave serialization to the caller. The CQs that retire the queues' WQEs take their own lock (the
// queues' tails are shared through hw's atomic tail). Lock order: sqMu, rqMu, then the CQs by CQ number. A QP
// made in a thread domain (single) posts without them: the TD promises one thread (libmlx5
// mlx5_spinlock_init_pd); StateChanged still takes them.
type qpAdapter struct {
	*hw.QP
	ctx      *mctx
	scq, rcq *cqAdapter
	queueMem
	dbr  hw.DoorbellRecord
	bf   bfSlot
	tdBF bool // bf is the thread domain's: not returned to the free list
	uidx uint32
	// post is what the QP's state allows (postSend, postRecv) and whether it has a receive queue of its own
	// (postHasRQ): one load answers a post's checks. Modify's StateChanged writes it while posts read it.
	post atomic.Uint32
	sqMu sync.Mutex
	rqMu sync.Mutex
	// single: the QP is in a thread domain and posts without sqMu and rqMu.
	single bool
	// ECE (qpext.go): the options SetECE set, which the next modify sends (0: none pending), and the options
	// the device last answered (libmlx5's set_ece and get_ece).
	setECE, getECE atomic.Uint32
}

// The bits of qpAdapter.post.
const (
	postSend  = 1 << iota // the state is RTS or SQD: sends may be posted
	postRecv              // the state is not RESET: receives may be posted
	postHasRQ             // the QP has a receive queue of its own (not an SRQ's)
)

// postBits is qpAdapter.post for a QP in state s, with a receive queue of its own or not.
func postBits(s verbs.QPState, hasRQ bool) uint32 {
	var b uint32
	if s == verbs.QPStateRTS || s == verbs.QPStateSQD {
		b |= postSend
	}
	if s != verbs.QPStateReset {
		b |= postRecv
	}
	if hasRQ {
		b |= postHasRQ
	}
	return b
}

// PostSend implements provider.QP. One request goes to hw's PostOne directly (hw's PostSend would call it): one
// call level less on the latency path. The calls are written out in both branches so that PostSend stays one
// frame (a helper holding them would not be inlined).
//
// nosplit, as hw's post path (sq.go): a small frame, so the stack-bound check is left out (2 instructions a
// call); the linker verifies that the frame fits the stack guard, and the callees have their own checks.
//
//go:nosplit
func (q *qpAdapter) PostSend(wrs []hw.SendWR) (int, provider.Status) {
	if q.post.Load()&postSend == 0 {
		return 0, provider.NotReady
	}
	if q.single {
		if len(wrs) == 1 {
			return q.SQ.PostOne(&wrs[0])
		}
		return q.SQ.PostSend(wrs)
	}
	var n int
	var st provider.Status
	q.sqMu.Lock()
	if len(wrs) == 1 {
		n, st = q.SQ.PostOne(&wrs[0])
	} else {
		n, st = q.SQ.PostSend(wrs)
	}
	q.sqMu.Unlock()
	return n, st
}

// PostSendAll implements provider.QP (nosplit: as PostSend). A chain of one request (the builder's single-WR
// Complete) goes straight to PostOne, as PostSend sends it: one request is posted whole or not at all.
//
//go:nosplit
func (q *qpAdapter) PostSendAll(wrs []hw.SendWR) (int, provider.Status) {
	if q.post.Load()&postSend == 0 {
		return 0, provider.NotReady
	}
	if q.single {
		if len(wrs) == 1 {
			return q.SQ.PostOne(&wrs[0])
		}
		return q.SQ.PostSendAll(wrs)
	}
	var n int
	var st provider.Status
	q.sqMu.Lock()
	if len(wrs) == 1 {
		n, st = q.SQ.PostOne(&wrs[0])
	} else {
		n, st = q.SQ.PostSendAll(wrs)
	}
	q.sqMu.Unlock()
	return n, st
}

// PostRecv implements provider.QP (nosplit: as PostSend).
//
//go:nosplit
func (q *qpAdapter) PostRecv(wrs []hw.RecvWR) (int, provider.Status) {
	if q.post.Load()&(postRecv|postHasRQ) != postRecv|postHasRQ {
		return 0, q.recvRefused()
	}
	if q.single {
		return q.RQ.PostRecv(wrs)
	}
	q.rqMu.Lock()
	n, st := q.RQ.PostRecv(wrs)
	q.rqMu.Unlock()
	return n, st
}

// recvRefused is why PostRecv refused: no receive queue of its own before the state.
func (q *qpAdapter) recvRefused() provider.Status {
	if q.RQ == nil {
		return provider.NoRecvQueue
	}
	return provider.NotReady
}

// StateChanged implements provider.QP: a transition to RESET removes the QP's completions from its CQs (and
// returns its SRQ receives) and zeroes the indices and doorbell records, with the queues and the CQs locked
// (rdma-core mlx5_modify_qp).
func (q *qpAdapter) StateChanged(s verbs.QPState) {
	q.post.Store(postBits(s, q.RQ != nil))
	if s != verbs.QPStateReset {
		return
	}
	q.sqMu.Lock()
	q.rqMu.Lock()
	first, second := q.rcq, q.scq
	if second.CQN() < first.CQN() {
		first, second = second, first
	}
	first.mu.Lock()
	if second != first {
		second.mu.Lock()
	}
	q.rcq.CQ.Clean(q.QP)
	if q.scq != q.rcq {
		q.scq.CQ.Clean(q.QP)
	}
	q.SQ.Reset()
	if q.RQ != nil {
		q.RQ.Reset()
	}
	if second != first {
		second.mu.Unlock()
	}
	first.mu.Unlock()
	q.rqMu.Unlock()
	q.sqMu.Unlock()
}

// Destroyed implements provider.QP.
func (q *qpAdapter) Destroyed() {
	q.scq.Detach(q.QP)
	q.rcq.Detach(q.QP)
	q.release()
	q.dom.drop()
}

func (q *qpAdapter) release() {
	q.queueMem.free(q.ctx)
	if q.bf.reg != nil {
		if !q.tdBF {
			q.ctx.putBF(q.bf)
		}
		q.bf = bfSlot{}
		q.ctx.putUserIndex(q.uidx)
	}
}

// CreateSRQ implements provider.Context.
func (c *mctx) CreateSRQ(p provider.SRQParams, create provider.Create[provider.SRQParams, provider.SRQResult]) (provider.SRQ, provider.SRQResult, error) {
	var res provider.SRQResult
	d, err := c.domainOf(p.ParentDomain)
	if err != nil {
		return nil, res, err
	}
	l, err := hw.SizeSRQ(int(p.MaxWR), int(p.MaxSGE), hw.QueueLimits{MaxRecvWR: int(c.resp.MaxSrqRecvWr),
		MaxRQDescSz: c.caps.Limits.MaxRQDescSz})
	if err != nil {
		return nil, res, err
	}
	s := &srqAdapter{ctx: c}
	s.dom, s.res = d, resSRQ
	if s.mem, s.ext, err = c.ringFrom(l.WQECount<<l.WQEShift, d, resSRQ); err != nil {
		return nil, res, err
	}
	var dbr hw.DoorbellRecord
	if s.dbrMem, dbr, err = c.dbr(); err != nil {
		c.freeRing(s.mem, s.ext, d, resSRQ)
		return nil, res, err
	}
	if s.SRQ, err = hw.NewSRQ(hw.SRQConfig{Buf: s.mem, WQECount: l.WQECount, WQEShift: l.WQEShift, DBR: dbr}); err != nil {
		s.Destroyed()
		return nil, res, err
	}
	s.uidx = c.userIndex()
	p.MaxWR, p.MaxSGE = uint32(l.MaxWR), uint32(l.MaxSGE)
	req := hw.CreateSRQReq(addrOf(s.mem), addrOf(s.dbrMem), s.uidx)
	var resp abi.Mlx5IbCreateSrqResp
	if res, err = create(p, bytesOf(&req), bytesOf(&resp)); err != nil {
		s.Destroyed()
		return nil, res, err
	}
	s.SetSRQN(resp.Srqn)
	res.MaxWR, res.MaxSGE, res.SRQN = uint32(l.MaxWR), uint32(l.MaxSGE), resp.Srqn
	if d != nil {
		d.refs.Add(1)
		s.counted = true
	}
	return s, res, nil
}

type srqAdapter struct {
	*hw.SRQ
	ctx *mctx
	queueMem
	uidx    uint32
	counted bool // made: counted in its parent domain
}

// Modify implements provider.SRQ (only the limit can change; there is no driver data).
func (s *srqAdapter) Modify(maxWR uint32, exec provider.Exec) error { return exec(nil, nil) }

// Destroyed implements provider.SRQ.
func (s *srqAdapter) Destroyed() {
	if s.queueMem.free(s.ctx) {
		s.ctx.putUserIndex(s.uidx)
	}
	if s.counted {
		s.dom.drop()
		s.counted = false
	}
}

// queueMem is the memory of a QP's or SRQ's work queue: its ring and its doorbell record.
type queueMem struct {
	mem    []byte
	ext    []byte                // mem as the parent domain's allocator returned it (nil: anonymous memory)
	dom    *pdomain              // the parent domain the queue is made in, or nil
	res    provider.ResourceType // what mem is, for the allocator
	dbrMem []byte
}

// free unmaps the ring and returns the doorbell record, each once; it reports whether there was a doorbell
// record to return.
func (m *queueMem) free(c *mctx) bool {
	if m.mem != nil {
		c.freeRing(m.mem, m.ext, m.dom, m.res)
		m.mem, m.ext = nil, nil
	}
	if m.dbrMem == nil {
		return false
	}
	c.putDBR(m.dbrMem)
	m.dbrMem = nil
	return true
}

// CreateAH implements provider.Context: on InfiniBand the address vector is built in userspace with no kernel
// object; on RoCE the kernel's CREATE_AH response supplies the destination MAC (when the context reports
// MLX5_USER_CMDS_SUPP_UHW_CREATE_AH; neighbour resolution is not implemented).
func (c *mctx) CreateAH(p provider.AHParams, create provider.Create[provider.AHParams, provider.AHResult]) (*verbs.AHData, error) {
	attr := hw.AHAttr{DLID: p.DLID, SL: p.SL, SrcPathBits: p.SrcPathBits, StaticRate: p.StaticRate, IsGlobal: p.IsGlobal,
		GRH: hw.GRH{DGID: p.DGID, FlowLabel: p.FlowLabel, SGIDIndex: p.SGIDIndex, HopLimit: p.HopLimit,
			TrafficClass: p.TrafficClass}}
	if !p.Ethernet {
		return hw.NewIBAH(attr), nil
	}
	if c.resp.CmdsSuppUhw&abi.MLX5_USER_CMDS_SUPP_UHW_CREATE_AH == 0 {
		return nil, fmt.Errorf("mlx5: create RoCE AH: kernel does not return the destination MAC: %w", hw.ErrNotSupported)
	}
	var resp abi.Mlx5IbCreateAhResp
	res, err := create(p, nil, bytesOf(&resp))
	if err != nil {
		return nil, err
	}
	// Without a flow label rdma-core picks a random RoCE v2 source port in [0xC000, 0xFFFF].
	ah, err := hw.NewRoCEAH(attr, resp.Dmac, p.RoCEv2, hw.RoCEUDPPortMin+uint16(rand.IntN(hw.RoCEUDPPortMax-hw.RoCEUDPPortMin+1)))
	if err != nil {
		return nil, err
	}
	ah.Handle = res.Handle
	return ah, nil
}

// Close implements provider.Context: unmap and destroy the UAR pages, free the doorbell-record pages.
func (c *mctx) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, p := range c.bf {
		errs = append(errs, c.freePage(p))
	}
	c.bf, c.free = nil, nil
	if c.nc != nil {
		errs = append(errs, c.freePage(c.nc))
		c.nc = nil
	}
	for _, p := range c.dbrs {
		if err := c.sys.unmap(p); err != nil {
			errs = append(errs, fmt.Errorf("mlx5: unmap doorbell-record page on %s: %w", c.dev.Name, err))
		}
	}
	c.dbrs, c.dbrFr = nil, nil
	if c.clockPage != nil {
		if err := c.sys.unmap(c.clockPage); err != nil {
			errs = append(errs, fmt.Errorf("mlx5: unmap HCA core clock page on %s: %w", c.dev.Name, err))
		}
		c.clockPage, c.clock = nil, nil
	}
	return errors.Join(errs...)
}

// errInvalid is the errno rdma-core's mlx5 provider returns for a request it refuses as malformed.
var errInvalid = unix.EINVAL

// roundupPow2 returns the smallest power of two >= n (n >= 1).
func roundupPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// bytesOf views a driver struct as the bytes the kernel reads or writes.
func bytesOf[T any](p *T) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p)) }

// addrOf is the address of b's first byte, as the kernel is told it.
func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// QueriesPortSpeed: the kernel's mlx5 reports a port's effective speed (QUERY_PORT_SPEED), which libmlx5's
// query_port_speed asks for.
func (*mctx) QueriesPortSpeed() bool { return true }
