package rdmacm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// PortSpace is an rdma_cm port space (enum rdma_ucm_port_space): the same
// type as netlinkrdma.PortSpace, which reports the port space of the ids it
// lists.
type PortSpace = netlinkrdma.PortSpace

// Port spaces. TCP gives RC ids, UDP and IPoIB UD ids, IB the QP type asked
// for at creation.
const (
	PortSpaceTCP   = netlinkrdma.PortSpaceTCP
	PortSpaceUDP   = netlinkrdma.PortSpaceUDP
	PortSpaceIB    = netlinkrdma.PortSpaceIB
	PortSpaceIPoIB = netlinkrdma.PortSpaceIPoIB
)

// Private data limits of the CM messages for IP-addressed ids (the kernel
// puts its 36-byte cma header in front of REQ and SIDR_REQ data).
const (
	MaxConnectPrivateData   = 56  // REQ (RC CONNECT)
	MaxAcceptPrivateData    = 196 // REP (RC ACCEPT)
	MaxRejectPrivateData    = 148 // REJ
	MaxUDConnectPrivateData = 180 // SIDR_REQ (UD CONNECT)
	MaxUDAcceptPrivateData  = 136 // SIDR_REP (UD ACCEPT)
)

// lastUID numbers ids (and multicast joins) process-wide: the kernel echoes
// the uid in every event, and it must stay unique when an id migrates to
// another channel. Never a Go pointer.
var lastUID atomic.Uint64

// ID is an rdma_cm identifier (struct rdma_cm_id): the rdma_cm counterpart
// of a socket. Its methods map one to one to librdmacm's rdma_* calls on an
// id; asynchronous ones (ResolveAddr, ResolveRoute, Connect, Listen) report
// through events on the id's Channel.
type ID struct {
	ch     *Channel
	uid    uint64
	kid    uint32
	ps     PortSpace
	qpType uverbs.QPType

	mu        sync.Mutex
	destroyed bool
	passive   bool // created by a CONNECT_REQUEST, not yet accepted/rejected
	listening bool

	// From QUERY ADDR / GID / PATH.
	nodeGUID   uint64 // host order, as uverbs.Device.NodeGUID
	ibdevIndex uint32
	portNum    uint8
	pkey       uint16
	src, dst   netip.AddrPort
	sgid, dgid uverbs.GID
	numPaths   int

	dev *devRef

	// The QP made by CreateQP and what it made for it.
	qp        *uverbs.QP
	sendCQ    *uverbs.CQ
	recvCQ    *uverbs.CQ
	compCh    *uverbs.CompChannel
	ownCQs    bool
	ownedCQs  []*uverbs.CQ
	qpSRQ     bool        // the QP receives through an SRQ (conn_param's srq flag)
	srq       *uverbs.SRQ // made by CreateSRQ; destroyed after the QP
	reqParam  ConnParam   // the CONNECT_REQUEST's parameters (passive ids)
	initDepth uint8       // explicit initiator depth / responder resources of Connect/Accept,
	respRes   uint8       // MaxResources when not given (librdmacm's override of INIT_QP_ATTR)

	mcasts map[uint64]*Multicast

	ownCh bool        // the channel is the id's own (CreateEP): Close closes it, Migrate away from it too
	epQP  *QPInitAttr // a passive CreateEP's QP attributes: GetRequest makes each request's QP with them

	// ResolveAddrInfo's state (librdmacm's resolving_ai and resolved_ai).
	aiResolving bool
	aiResult    []AddrInfo

	// ECE (librdmacm's local_ece / remote_ece): what SetLocalECE set (CreateQP replaces it with the QP's),
	// and what the peer's CONNECT_REQUEST or CONNECT_RESPONSE carried.
	localECE, remoteECE ECE
}

// CreateID creates an id on the channel (rdma_create_id). qpType matters
// only for PortSpaceIB; TCP ids are RC and UDP/IPoIB ids are UD.
func (ch *Channel) CreateID(ps PortSpace, qpType uverbs.QPType) (*ID, error) {
	switch ps {
	case PortSpaceTCP:
		qpType = uverbs.QPTypeRC
	case PortSpaceUDP, PortSpaceIPoIB:
		qpType = uverbs.QPTypeUD
	}
	id := &ID{ch: ch, ps: ps, qpType: qpType, initDepth: MaxResources, respRes: MaxResources}
	if err := ch.register(id); err != nil {
		return nil, &Error{Op: "create id", Err: err}
	}
	resp := new(abi.RdmaUcmCreateIdResp)
	req := abi.RdmaUcmCreateId{Uid: id.uid, Response: ptr(unsafe.Pointer(resp)), Ps: uint16(ps), QpType: uint8(qpType)}
	if err := exec(ch, abi.RDMA_USER_CM_CMD_CREATE_ID, &req, unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil {
		ch.unregister(id)
		return nil, &Error{Op: "create id (" + ps.String() + ")", Err: err}
	}
	id.kid = resp.Id
	return id, nil
}

// Channel is the channel the id's events arrive on.
func (id *ID) Channel() *Channel { return id.ch }

// Num is the kernel's number of the id (what "rdma res show cm_id" lists as cm-idn).
func (id *ID) Num() uint32 { return id.kid }

// PortSpace and QPType are the id's port space and QP type.
func (id *ID) PortSpace() PortSpace  { return id.ps }
func (id *ID) QPType() uverbs.QPType { return id.qpType }

// LocalAddr and RemoteAddr are the addresses from the last address query.
func (id *ID) LocalAddr() netip.AddrPort  { id.mu.Lock(); defer id.mu.Unlock(); return id.src }
func (id *ID) RemoteAddr() netip.AddrPort { id.mu.Lock(); defer id.mu.Unlock(); return id.dst }

// SGID and DGID are the source and destination GIDs (QUERY GID).
func (id *ID) SGID() uverbs.GID { id.mu.Lock(); defer id.mu.Unlock(); return id.sgid }
func (id *ID) DGID() uverbs.GID { id.mu.Lock(); defer id.mu.Unlock(); return id.dgid }

// PortNum is the device port the id is bound to (0 before it has a device).
func (id *ID) PortNum() uint8 { id.mu.Lock(); defer id.mu.Unlock(); return id.portNum }

// QP, SendCQ and RecvCQ are what CreateQP made or was given (nil before).
func (id *ID) QP() *uverbs.QP     { id.mu.Lock(); defer id.mu.Unlock(); return id.qp }
func (id *ID) SendCQ() *uverbs.CQ { id.mu.Lock(); defer id.mu.Unlock(); return id.sendCQ }
func (id *ID) RecvCQ() *uverbs.CQ { id.mu.Lock(); defer id.mu.Unlock(); return id.recvCQ }

// CompChannel is the completion channel CreateQP made for its CQs (nil if the caller gave CQs).
func (id *ID) CompChannel() *uverbs.CompChannel { id.mu.Lock(); defer id.mu.Unlock(); return id.compCh }

func (id *ID) check(op string) error {
	if id.destroyed {
		return opErr(op, id.kid, ErrClosed)
	}
	return nil
}

// Bind binds the id to a local address (rdma_bind_addr); a zero port picks
// one. An address of a netdev with an RDMA device binds the id to that device.
func (id *ID) Bind(addr netip.AddrPort) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("bind"); err != nil {
		return err
	}
	req := abi.RdmaUcmBind{Id: id.kid}
	n, err := putSockaddr(&req.Addr, addr)
	if err != nil {
		return opErr("bind "+addr.String(), id.kid, err)
	}
	req.AddrSize = n
	if err := exec(id.ch, abi.RDMA_USER_CM_CMD_BIND, &req, nil, 0); err != nil {
		return opErr("bind "+addr.String(), id.kid, err)
	}
	if err := id.queryAddrLocked(); err != nil {
		return err
	}
	return id.queryGIDLocked()
}

// ResolveAddr resolves dst (and the source, from src or the routing table)
// to RDMA addresses (rdma_resolve_addr); ADDR_RESOLVED or ADDR_ERROR follows.
func (id *ID) ResolveAddr(src, dst netip.AddrPort, timeout time.Duration) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	op := "resolve addr " + dst.String()
	if err := id.check(op); err != nil {
		return err
	}
	req := abi.RdmaUcmResolveAddr{Id: id.kid, TimeoutMs: uint32(timeout.Milliseconds())}
	if src.IsValid() {
		n, err := putSockaddr(&req.SrcAddr, src)
		if err != nil {
			return opErr(op, id.kid, err)
		}
		req.SrcSize = n
	}
	n, err := putSockaddr(&req.DstAddr, dst)
	if err != nil {
		return opErr(op, id.kid, err)
	}
	req.DstSize = n
	return opErr(op, id.kid, exec(id.ch, abi.RDMA_USER_CM_CMD_RESOLVE_ADDR, &req, nil, 0))
}

// ResolveRoute resolves the route to the destination (rdma_resolve_route);
// ROUTE_RESOLVED or ROUTE_ERROR follows.
func (id *ID) ResolveRoute(timeout time.Duration) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("resolve route"); err != nil {
		return err
	}
	req := abi.RdmaUcmResolveRoute{Id: id.kid, TimeoutMs: uint32(timeout.Milliseconds())}
	return opErr("resolve route", id.kid, exec(id.ch, abi.RDMA_USER_CM_CMD_RESOLVE_ROUTE, &req, nil, 0))
}

// AddrQuery is the QUERY ADDR answer. (AddrInfo is GetAddrInfo's result.)
type AddrQuery struct {
	NodeGUID   uint64 // host order; 0 when the id has no device yet
	IBDevIndex uint32
	PortNum    uint8
	PKey       uint16
	Src, Dst   netip.AddrPort
}

// QueryAddr asks the kernel for the id's addresses and device (QUERY, option ADDR).
func (id *ID) QueryAddr() (AddrQuery, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("query addr"); err != nil {
		return AddrQuery{}, err
	}
	if err := id.queryAddrLocked(); err != nil {
		return AddrQuery{}, err
	}
	return AddrQuery{NodeGUID: id.nodeGUID, IBDevIndex: id.ibdevIndex, PortNum: id.portNum, PKey: id.pkey,
		Src: id.src, Dst: id.dst}, nil
}

func (id *ID) queryAddrLocked() error {
	resp := new(abi.RdmaUcmQueryAddrResp)
	req := abi.RdmaUcmQuery{Response: ptr(unsafe.Pointer(resp)), Id: id.kid, Option: abi.RDMA_USER_CM_QUERY_ADDR}
	if err := exec(id.ch, abi.RDMA_USER_CM_CMD_QUERY, &req, unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil {
		return opErr("query addr", id.kid, err)
	}
	id.nodeGUID = beToHost64(resp.NodeGuid)
	id.ibdevIndex = resp.IbdevIndex
	id.portNum = resp.PortNum
	id.pkey = resp.Pkey
	id.src = sockaddr(&resp.SrcAddr)
	id.dst = sockaddr(&resp.DstAddr)
	return nil
}

// QueryGID reads the source and destination GIDs (QUERY, option GID).
func (id *ID) QueryGID() (sgid, dgid uverbs.GID, err error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("query gid"); err != nil {
		return sgid, dgid, err
	}
	err = id.queryGIDLocked()
	return id.sgid, id.dgid, err
}

func (id *ID) queryGIDLocked() error {
	resp := new(abi.RdmaUcmQueryAddrResp)
	req := abi.RdmaUcmQuery{Response: ptr(unsafe.Pointer(resp)), Id: id.kid, Option: abi.RDMA_USER_CM_QUERY_GID}
	if err := exec(id.ch, abi.RDMA_USER_CM_CMD_QUERY, &req, unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil {
		return opErr("query gid", id.kid, err)
	}
	// sockaddr_ib: family @0, pkey @2, flowinfo @4, gid @8 (Data[6:22]).
	if resp.SrcAddr.Family == afIB {
		id.sgid = uverbs.GID(resp.SrcAddr.Data[6:22])
	}
	if resp.DstAddr.Family == afIB {
		id.dgid = uverbs.GID(resp.DstAddr.Data[6:22])
	}
	return nil
}

// PathRecord is one path of QUERY PATH: flags (IB_PATH_*) and the 64-byte
// path record in IB SA wire format (struct ibv_path_record, big-endian).
type PathRecord struct {
	Flags  uint32
	Record [64]byte
}

// maxPaths is how many paths librdmacm asks for.
const maxPaths = 6

// QueryPath reads the resolved paths (QUERY, option PATH).
func (id *ID) QueryPath() ([]PathRecord, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("query path"); err != nil {
		return nil, err
	}
	return id.queryPathLocked()
}

func (id *ID) queryPathLocked() ([]PathRecord, error) {
	type pathResp struct {
		hdr   abi.RdmaUcmQueryPathResp
		paths [maxPaths]abi.IbPathRecData
	}
	resp := new(pathResp)
	req := abi.RdmaUcmQuery{Response: ptr(unsafe.Pointer(resp)), Id: id.kid, Option: abi.RDMA_USER_CM_QUERY_PATH}
	if err := exec(id.ch, abi.RDMA_USER_CM_CMD_QUERY, &req, unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil {
		return nil, opErr("query path", id.kid, err)
	}
	n := min(int(resp.hdr.NumPaths), maxPaths)
	id.numPaths = n
	out := make([]PathRecord, n)
	for i := range out {
		out[i].Flags = resp.paths[i].Flags
		copy(out[i].Record[:], unsafe.Slice((*byte)(unsafe.Pointer(&resp.paths[i].PathRec)), 64))
	}
	return out, nil
}

// Listen starts listening for connection requests (rdma_listen); each one
// arrives as a CONNECT_REQUEST event carrying a new id. backlog <= 0 means
// the kernel's maximum (net.rdma_ucm.max_backlog).
func (id *ID) Listen(backlog int) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("listen"); err != nil {
		return err
	}
	req := abi.RdmaUcmListen{Id: id.kid, Backlog: uint32(max(backlog, 0))}
	if err := exec(id.ch, abi.RDMA_USER_CM_CMD_LISTEN, &req, nil, 0); err != nil {
		return opErr("listen", id.kid, err)
	}
	id.listening = true
	return id.queryAddrLocked()
}

// QPInitAttr are the options of CreateQP.
type QPInitAttr struct {
	// PD defaults to the device's PD shared by the channel's ids.
	PD *uverbs.PD
	// SendCQ and RecvCQ: when both are nil CreateQP makes a completion
	// channel and one CQ per direction, sized Cap.MaxSendWR and
	// Cap.MaxRecvWR, and destroys them with the QP.
	SendCQ, RecvCQ *uverbs.CQ
	// SRQ defaults to the id's own (CreateSRQ), if it has one.
	SRQ    *uverbs.SRQ
	Cap    uverbs.QPCap
	SigAll bool
	// SendOps are the operations the QP's work-request builder (QP.StartWR) may post
	// (ibv_qp_init_attr_ex.send_ops_flags of rdma_create_qp_ex); 0 for a QP posted with PostSend only.
	SendOps uverbs.SendOps
}

// Device resolves the id's device (from its bound or resolved address) and
// returns the process's shared context and PD for it (librdmacm's id->verbs
// and id->pd: one per device, whatever the channel), opening them on first
// use. It fails with ENODEV while the id has no device.
func (id *ID) Device() (*uverbs.Context, *uverbs.PD, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("get device"); err != nil {
		return nil, nil, err
	}
	if err := id.acquireDeviceLocked(); err != nil {
		return nil, nil, err
	}
	return id.dev.ctx, id.dev.pd, nil
}

// DeviceAttr is the attributes of the id's device (ibv_query_device on
// id->verbs), queried once per device: what a caller sizes its
// queues and buffers against before creating them.
func (id *ID) DeviceAttr() (*uverbs.DeviceAttr, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("get device"); err != nil {
		return nil, err
	}
	if err := id.acquireDeviceLocked(); err != nil {
		return nil, err
	}
	a := *id.dev.attr
	return &a, nil
}

func (id *ID) acquireDeviceLocked() error {
	if id.dev != nil {
		return nil
	}
	if id.nodeGUID == 0 {
		if err := id.queryAddrLocked(); err != nil {
			return err
		}
		if id.nodeGUID == 0 {
			return opErr("get device", id.kid, fmt.Errorf("id is not bound to an RDMA device: %w", unix.ENODEV))
		}
	}
	d, err := id.ch.acquireDevice(id.nodeGUID, id.ibdevIndex)
	if err != nil {
		return opErr("get device", id.kid, err)
	}
	id.dev = d
	return nil
}

// acquireDevice returns the process's context for the device with node GUID guid and index index, opening
// it (with its PD and attributes) on first use; the id takes a reference, and the channel one the first time
// one of its ids uses the device, which it keeps until it is closed.
func (ch *Channel) acquireDevice(guid uint64, index uint32) (*devRef, error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		return nil, ErrClosed
	}
	devices.mu.Lock()
	defer devices.mu.Unlock()
	key := devKey{guid, index}
	d := devices.m[key]
	if d == nil {
		var err error
		if d, err = openDevice(key); err != nil {
			return nil, err
		}
		devices.m[key] = d
	}
	if ch.devs[key] == nil {
		ch.devs[key] = d
		d.refs++
	}
	d.refs++
	return d, nil
}

// openDevice opens the device's context, queries it and allocates its PD.
func openDevice(key devKey) (*devRef, error) {
	devs, err := uverbs.Devices()
	if err != nil {
		return nil, err
	}
	var pick *uverbs.Device
	for i := range devs {
		if uint64(devs[i].NodeGUID) == key.guid && (pick == nil || devs[i].Index == key.index) {
			pick = &devs[i]
		}
	}
	if pick == nil {
		return nil, fmt.Errorf("no verbs device with node GUID %v: %w", uverbs.GUID(key.guid), unix.ENODEV)
	}
	ctx, err := pick.Open()
	if err != nil {
		return nil, err
	}
	attr, err := ctx.QueryDevice()
	if err != nil {
		ctx.Close()
		return nil, err
	}
	pd, err := ctx.AllocPD()
	if err != nil {
		ctx.Close()
		return nil, err
	}
	return &devRef{key: key, ctx: ctx, pd: pd, attr: attr}, nil
}

// releaseDevice drops one reference (an id's or a channel's); the last one closes the context and its PD,
// as librdmacm keeps its device contexts while they are in use (it keeps them until the process ends).
func releaseDevice(d *devRef) error {
	devices.mu.Lock()
	d.refs--
	last := d.refs == 0
	if last {
		delete(devices.m, d.key)
	}
	devices.mu.Unlock()
	if last {
		return errors.Join(d.pd.Close(), d.ctx.Close())
	}
	return nil
}

// CreateQP creates the id's QP (rdma_create_qp; rdma_create_qp_ex with SendOps) on the id's device and moves
// it to INIT with the attributes the kernel gives (INIT_QP_ATTR); a UD QP is
// taken on to RTS at once, as librdmacm does. The zero QPInitAttr asks for
// the defaults: the id's PD, two new CQs and 16 work requests each way.
// ECE as librdmacm: the id's local ECE becomes the QP's (uverbs.QP.QueryECE),
// and a passive id's QP takes the requester's options (QP.SetECE, applied by
// the move to INIT); a provider without ECE (rxe) leaves both at zero.
func (id *ID) CreateQP(attr QPInitAttr) (*uverbs.QP, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	op := "create QP"
	if err := id.check(op); err != nil {
		return nil, err
	}
	if id.qp != nil {
		return nil, opErr(op, id.kid, errState("id already has QP %#x", id.qp.QPN()))
	}
	a := attr
	if a.Cap.MaxSendWR == 0 && a.Cap.MaxRecvWR == 0 {
		a.Cap = uverbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}
	}
	if err := id.acquireDeviceLocked(); err != nil {
		return nil, err
	}
	pd := a.PD
	if pd == nil {
		pd = id.dev.pd
	}
	if a.SRQ == nil {
		a.SRQ = id.srq
	}
	var made []*uverbs.CQ
	var ch *uverbs.CompChannel
	undo := func(err error) (*uverbs.QP, error) {
		for _, cq := range made {
			cq.Close()
		}
		if ch != nil {
			ch.Close()
		}
		return nil, opErr(op, id.kid, err)
	}
	if a.SendCQ == nil && a.RecvCQ == nil {
		var err error
		ch, err = id.dev.ctx.CreateCompChannel(nil)
		if err != nil {
			return undo(err)
		}
		for _, n := range []uint32{a.Cap.MaxSendWR, a.Cap.MaxRecvWR} {
			cq, err := id.dev.ctx.CreateCQ(uverbs.CQAttr{CQE: int(max(n, 1)), Channel: ch})
			if err != nil {
				return undo(err)
			}
			made = append(made, cq)
		}
		a.SendCQ, a.RecvCQ = made[0], made[1]
	} else if a.SendCQ == nil || a.RecvCQ == nil {
		return undo(fmt.Errorf("give both CQs or none: %w", unix.EINVAL))
	}
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: id.qpType, SendCQ: a.SendCQ, RecvCQ: a.RecvCQ, SRQ: a.SRQ,
		Cap: a.Cap, SigAll: a.SigAll, SendOps: a.SendOps})
	if err != nil {
		return undo(err)
	}
	id.qp, id.sendCQ, id.recvCQ, id.compCh, id.ownedCQs = qp, a.SendCQ, a.RecvCQ, ch, made
	id.qpSRQ = a.SRQ != nil
	err = id.initECELocked()
	if err == nil {
		err = id.initQPLocked()
	}
	if err == nil && id.remoteECE.VendorID != 0 {
		err = id.queryLocalECELocked()
	}
	if err != nil {
		id.destroyQPLocked()
		return nil, opErr(op, id.kid, err)
	}
	return qp, nil
}

// initECELocked is librdmacm's init_ece for the id's new QP: the local ECE becomes the QP's (QueryECE; zero
// where the provider has no ECE, rxe), and a QP made for a CONNECT_REQUEST takes the requester's options, or
// none when the vendors differ, which its first Modify applies. A provider without ECE is no error.
func (id *ID) initECELocked() error {
	e, err := id.qp.QueryECE()
	if err = ignoreNoECE(err); err != nil {
		return err
	}
	id.localECE = ECE{VendorID: e.VendorID, AttrMod: e.Options}
	if set, ok := requestECE(id.localECE, id.remoteECE); ok {
		return ignoreNoECE(id.qp.SetECE(set))
	}
	return nil
}

// requestECE is what init_ece applies to a new QP: nothing for a QP not made for a CONNECT_REQUEST (remote
// vendor 0), the requester's options when it is of the local vendor, else the local vendor with no options.
func requestECE(local, remote ECE) (uverbs.ECE, bool) {
	switch {
	case remote.VendorID == 0:
		return uverbs.ECE{}, false
	case remote.VendorID != local.VendorID:
		return uverbs.ECE{VendorID: local.VendorID}, true
	}
	return uverbs.ECE{VendorID: remote.VendorID, Options: remote.AttrMod}, true
}

// setPeerECELocked is librdmacm's ECE step of a CONNECT_RESPONSE before the QP moves: the REP's options, or
// none where the REP carried none (an old peer or kernel), for the next Modify to apply.
func (id *ID) setPeerECELocked(e ECE) error {
	return ignoreNoECE(id.qp.SetECE(replyECE(id.localECE, e)))
}

// replyECE is what a CONNECT_RESPONSE applies: the REP's options, or the local vendor with none.
func replyECE(local, rep ECE) uverbs.ECE {
	if rep.VendorID == 0 {
		return uverbs.ECE{VendorID: local.VendorID}
	}
	return uverbs.ECE{VendorID: rep.VendorID, Options: rep.AttrMod}
}

// queryLocalECELocked takes the local ECE options from the QP after a Modify applied the peer's (what Accept
// answers; 0 where the provider has no ECE).
func (id *ID) queryLocalECELocked() error {
	e, err := id.qp.QueryECE()
	if err = ignoreNoECE(err); err != nil {
		return err
	}
	id.localECE.AttrMod = e.Options
	return nil
}

// ignoreNoECE is err, but nil for a provider without ECE (EOPNOTSUPP), which librdmacm ignores: ibv_set_ece
// and ibv_query_ece refuse so on rxe, and ibv_set_ece so for vendor id 0.
func ignoreNoECE(err error) error {
	if errors.Is(err, unix.EOPNOTSUPP) {
		return nil
	}
	return err
}

// initQPLocked: RESET -> INIT (RC) or RESET -> INIT -> RTR -> RTS (UD).
func (id *ID) initQPLocked() error {
	if err := id.modifyLocked(uverbs.QPStateInit); err != nil {
		return err
	}
	if id.qpType != uverbs.QPTypeUD {
		return nil
	}
	if err := modifyQP(id.qp, &uverbs.QPAttr{State: uverbs.QPStateRTR}, uverbs.QPAttrState); err != nil {
		return err
	}
	return modifyQP(id.qp, &uverbs.QPAttr{State: uverbs.QPStateRTS, SQPSN: 0}, uverbs.QPAttrState|uverbs.QPAttrSQPSN)
}

// modifyLocked moves the QP to state with the kernel's attributes,
// applying explicit initiator depth / responder resources like librdmacm.
func (id *ID) modifyLocked(state uverbs.QPState) error {
	a, mask, err := id.initQPAttrLocked(state)
	if err != nil {
		return err
	}
	if state == uverbs.QPStateRTR && id.respRes != MaxResources {
		a.MaxDestRdAtomic = id.respRes
	}
	if state == uverbs.QPStateRTS && id.initDepth != MaxResources {
		a.MaxRdAtomic = id.initDepth
	}
	return modifyQP(id.qp, a, mask)
}

// DestroyQP destroys the id's QP and the CQs and completion channel
// CreateQP made for it (rdma_destroy_qp).
func (id *ID) DestroyQP() error {
	id.mu.Lock()
	defer id.mu.Unlock()
	return id.destroyQPLocked()
}

func (id *ID) destroyQPLocked() error {
	var errs []error
	if id.qp != nil {
		errs = append(errs, id.qp.Close())
	}
	for _, cq := range id.ownedCQs {
		errs = append(errs, cq.Close())
	}
	if id.compCh != nil {
		errs = append(errs, id.compCh.Close())
	}
	id.qp, id.sendCQ, id.recvCQ, id.compCh, id.ownedCQs, id.qpSRQ = nil, nil, nil, nil, nil, false
	if err := errors.Join(errs...); err != nil {
		return opErr("destroy QP", id.kid, err)
	}
	return nil
}

// InitQPAttr returns the attributes and mask to move a QP of this id to
// state (rdma_init_qp_attr), as the kernel computes them from the connection.
func (id *ID) InitQPAttr(state uverbs.QPState) (*uverbs.QPAttr, uverbs.QPAttrMask, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("init QP attr"); err != nil {
		return nil, 0, err
	}
	return id.initQPAttrLocked(state)
}

func (id *ID) initQPAttrLocked(state uverbs.QPState) (*uverbs.QPAttr, uverbs.QPAttrMask, error) {
	resp := new(abi.IbUverbsQpAttr)
	req := abi.RdmaUcmInitQpAttr{Response: ptr(unsafe.Pointer(resp)), Id: id.kid, QpState: uint32(state)}
	if err := exec(id.ch, abi.RDMA_USER_CM_CMD_INIT_QP_ATTR, &req, unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil {
		return nil, 0, opErr("init QP attr ("+stateName(state)+")", id.kid, err)
	}
	a, m := qpAttr(resp)
	return a, m, nil
}

// connParam builds the kernel's conn_param: QP number and SRQ from the id's
// QP, "maximum" resources resolved against the device.
func (id *ID) connParamLocked(p *ConnParam, accept bool) (abi.RdmaUcmConnParam, error) {
	var k abi.RdmaUcmConnParam
	if p == nil {
		p = &ConnParam{ResponderResources: MaxResources, InitiatorDepth: MaxResources, RetryCount: 7, RNRRetryCount: 7}
		if id.qp == nil && id.ps == PortSpaceTCP {
			return k, errState("connection parameters are required for an id without a QP")
		}
	}
	k.QpNum, k.Qkey = p.QPNum, p.QKey
	if id.qp != nil {
		k.QpNum = id.qp.QPN()
	}
	k.Srq = p.SRQ
	if id.qp != nil { // librdmacm: whether the id's QP receives through an SRQ
		k.Srq = 0
		if id.qpSRQ {
			k.Srq = 1
		}
	}
	copy(k.PrivateData[:], p.PrivateData)
	k.PrivateDataLen = uint8(len(p.PrivateData))
	k.FlowControl, k.RetryCount, k.RnrRetryCount = p.FlowControl, p.RetryCount, p.RNRRetryCount
	rr, idp := p.ResponderResources, p.InitiatorDepth
	id.respRes, id.initDepth = rr, idp
	if rr == MaxResources || idp == MaxResources {
		if err := id.acquireDeviceLocked(); err != nil {
			return k, err
		}
		maxRR := uint8(min(id.dev.attr.MaxQPRdAtom, 0xFE))
		maxID := uint8(min(id.dev.attr.MaxQPInitRdAtom, 0xFE))
		if rr == MaxResources {
			rr = maxRR
			if accept {
				rr = min(maxRR, id.reqParam.ResponderResources)
			}
		}
		if idp == MaxResources {
			idp = maxID
			if accept {
				idp = min(maxID, id.reqParam.InitiatorDepth)
			}
		}
	}
	k.ResponderResources, k.InitiatorDepth = rr, idp
	k.Valid = 1
	return k, nil
}

func (id *ID) maxConnectData() int {
	if id.qpType == uverbs.QPTypeUD {
		return MaxUDConnectPrivateData
	}
	return MaxConnectPrivateData
}

func (id *ID) maxAcceptData() int {
	if id.qpType == uverbs.QPTypeUD {
		return MaxUDAcceptPrivateData
	}
	return MaxAcceptPrivateData
}

func privErr(n, limit int) error {
	return fmt.Errorf("%w: %d bytes, the limit is %d: %w", ErrPrivateDataTooLong, n, limit, unix.EINVAL)
}

// Connect starts connecting (rdma_connect): an RC id sends a REQ, a UD id a
// SIDR_REQ. p == nil uses librdmacm's defaults (device maximum resources,
// retry 7, RNR retry 7; only for ids with a QP). The connection completes
// with ESTABLISHED from GetEvent (which, for an id with a QP, has already
// moved it to RTS and sent the RTU), or REJECTED/UNREACHABLE/CONNECT_ERROR.
func (id *ID) Connect(p *ConnParam) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("connect"); err != nil {
		return err
	}
	if p != nil && len(p.PrivateData) > id.maxConnectData() {
		return opErr("connect", id.kid, privErr(len(p.PrivateData), id.maxConnectData()))
	}
	if id.passive || id.listening {
		return opErr("connect", id.kid, errState("connect on a listening or incoming id"))
	}
	k, err := id.connParamLocked(p, false)
	if err != nil {
		return opErr("connect", id.kid, err)
	}
	req := abi.RdmaUcmConnect{ConnParam: k, Id: id.kid,
		Ece: abi.RdmaUcmEce{VendorId: id.localECE.VendorID, AttrMod: id.localECE.AttrMod}}
	return opErr("connect", id.kid, exec(id.ch, abi.RDMA_USER_CM_CMD_CONNECT, &req, nil, 0))
}

// Accept accepts an incoming connection (rdma_accept) on an id from a
// CONNECT_REQUEST. An RC id's QP is moved INIT -> RTR -> RTS first; the
// kernel then sends the REP (SIDR_REP for UD) and ESTABLISHED follows on the
// channel (RC). p == nil accepts with min(request, device maximum) resources.
func (id *ID) Accept(p *ConnParam) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("accept"); err != nil {
		return err
	}
	if p != nil && len(p.PrivateData) > id.maxAcceptData() {
		return opErr("accept", id.kid, privErr(len(p.PrivateData), id.maxAcceptData()))
	}
	if !id.passive {
		return opErr("accept", id.kid, errState("accept on an id that is not an incoming connection"))
	}
	k, err := id.connParamLocked(p, true)
	if err != nil {
		return opErr("accept", id.kid, err)
	}
	if id.qp != nil && id.qpType != uverbs.QPTypeUD {
		if err := id.toRTSLocked(); err != nil {
			return opErr("accept", id.kid, err)
		}
	}
	// The REP answers with the vendor the REQ named and the local options (librdmacm's rule).
	req := abi.RdmaUcmAccept{Uid: id.uid, ConnParam: k, Id: id.kid,
		Ece: abi.RdmaUcmEce{VendorId: id.remoteECE.VendorID, AttrMod: id.localECE.AttrMod}}
	if err := exec(id.ch, abi.RDMA_USER_CM_CMD_ACCEPT, &req, nil, 0); err != nil {
		if id.qp != nil {
			toErr(id.qp)
		}
		return opErr("accept", id.kid, err)
	}
	id.passive = false
	return nil
}

// toRTSLocked: INIT -> INIT (with the CM's access flags) -> RTR -> RTS.
func (id *ID) toRTSLocked() error {
	for _, s := range []uverbs.QPState{uverbs.QPStateInit, uverbs.QPStateRTR, uverbs.QPStateRTS} {
		if err := id.modifyLocked(s); err != nil {
			return err
		}
	}
	return nil
}

// Establish sends the RTU for an active id whose application moved its own
// QP to RTS after CONNECT_RESPONSE (rdma_establish: ACCEPT without parameters).
func (id *ID) Establish() error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("establish"); err != nil {
		return err
	}
	return id.establishLocked()
}

func (id *ID) establishLocked() error {
	req := abi.RdmaUcmAccept{Id: id.kid}
	return opErr("establish", id.kid, exec(id.ch, abi.RDMA_USER_CM_CMD_ACCEPT, &req, nil, 0))
}

// Reject refuses an incoming connection (rdma_reject); the peer gets
// REJECTED with status 28 (consumer defined) and the private data.
func (id *ID) Reject(privateData []byte) error {
	return id.reject("reject", privateData, 0)
}

// RejectECE refuses an incoming connection because its ECE options are not acceptable (rdma_reject_ece):
// the REJ carries reason 35 (IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED), which the peer gets as REJECTED's
// status, with the private data.
func (id *ID) RejectECE(privateData []byte) error {
	return id.reject("reject (ECE)", privateData, RejectReasonVendorOptionNotSupported)
}

// Reject reasons of the IB CM that rdma_cm lets a consumer send (REJECTED's Event.Status on the peer).
const (
	RejectReasonConsumer                 = 28 // IB_CM_REJ_CONSUMER_DEFINED: Reject (the kernel's default)
	RejectReasonVendorOptionNotSupported = 35 // IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED: RejectECE
)

func (id *ID) reject(op string, privateData []byte, reason uint8) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check(op); err != nil {
		return err
	}
	if len(privateData) > MaxRejectPrivateData {
		return opErr(op, id.kid, privErr(len(privateData), MaxRejectPrivateData))
	}
	if !id.passive {
		return opErr(op, id.kid, errState("reject on an id that is not an incoming connection"))
	}
	req := abi.RdmaUcmReject{Id: id.kid, PrivateDataLen: uint8(len(privateData)), Reason: reason}
	copy(req.PrivateData[:], privateData)
	if err := exec(id.ch, abi.RDMA_USER_CM_CMD_REJECT, &req, nil, 0); err != nil {
		return opErr(op, id.kid, err)
	}
	id.passive = false
	return nil
}

// SetLocalECE sets the enhanced connection establishment options the id offers (rdma_set_local_ece):
// Connect sends them in the REQ; Accept answers with the requester's vendor id and these options in the
// REP. As in librdmacm, it is for ids whose QP the application manages itself: an id with a QP from
// CreateQP is refused (ErrState; CreateQP sets the local ECE to the QP's, uverbs.QP.QueryECE, zero on a
// device without ECE such as rxe, and applies the requester's to a passive id's QP, as librdmacm does), and
// so is a zero VendorID (EINVAL).
func (id *ID) SetLocalECE(e ECE) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	op := "set local ECE"
	if err := id.check(op); err != nil {
		return err
	}
	if e.VendorID == 0 {
		return opErr(op, id.kid, fmt.Errorf("vendor id 0: %w", unix.EINVAL))
	}
	if id.qp != nil {
		return opErr(op, id.kid, errState("the id has a QP (QP %#x), whose ECE is the provider's", id.qp.QPN()))
	}
	id.localECE = e
	return nil
}

// RemoteECE is the peer's ECE (rdma_get_remote_ece): from the CONNECT_REQUEST of an incoming id, from
// the CONNECT_RESPONSE of an active one. Zero when the peer sent none. Like librdmacm it refuses ids with
// a QP from CreateQP (ErrState): the ECE handshake of those is the provider's.
func (id *ID) RemoteECE() (ECE, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	op := "get remote ECE"
	if err := id.check(op); err != nil {
		return ECE{}, err
	}
	if id.qp != nil {
		return ECE{}, opErr(op, id.kid, errState("the id has a QP (QP %#x), whose ECE is the provider's", id.qp.QPN()))
	}
	return id.remoteECE, nil
}

// Disconnect tears the connection down (rdma_disconnect): the QP goes to ERR
// (flushing outstanding work), then the kernel sends DREQ (or DREP); both
// sides get DISCONNECTED.
func (id *ID) Disconnect() error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("disconnect"); err != nil {
		return err
	}
	if id.qp != nil {
		if err := toErr(id.qp); err != nil {
			return opErr("disconnect", id.kid, err)
		}
	}
	req := abi.RdmaUcmDisconnect{Id: id.kid}
	return opErr("disconnect", id.kid, exec(id.ch, abi.RDMA_USER_CM_CMD_DISCONNECT, &req, nil, 0))
}

// SetOption sets an rdma_cm option (rdma_set_option); see SetTOS and friends.
func (id *ID) SetOption(level, name uint32, val []byte) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	op := fmt.Sprintf("set option %d/%d", level, name)
	if err := id.check(op); err != nil {
		return err
	}
	if len(val) == 0 {
		return opErr(op, id.kid, unix.EINVAL)
	}
	buf := make([]byte, len(val)) // heap: the kernel reads it through optval
	copy(buf, val)
	req := abi.RdmaUcmSetOption{Optval: ptr(unsafe.Pointer(&buf[0])), Id: id.kid, Level: level, Optname: name,
		Optlen: uint32(len(buf))}
	return opErr(op, id.kid, exec(id.ch, abi.RDMA_USER_CM_CMD_SET_OPTION, &req, unsafe.Pointer(&buf[0]), 0))
}

// SetTOS sets the type of service (RDMA_OPTION_ID_TOS).
func (id *ID) SetTOS(tos uint8) error {
	return id.SetOption(abi.RDMA_OPTION_ID, abi.RDMA_OPTION_ID_TOS, []byte{tos})
}

// SetReuseAddr allows reusing a bound address (RDMA_OPTION_ID_REUSEADDR).
func (id *ID) SetReuseAddr(on bool) error { return id.setInt(abi.RDMA_OPTION_ID_REUSEADDR, on) }

// SetAFOnly restricts an IPv6 listener to IPv6 (RDMA_OPTION_ID_AFONLY).
func (id *ID) SetAFOnly(on bool) error { return id.setInt(abi.RDMA_OPTION_ID_AFONLY, on) }

// SetAckTimeout sets the QP's local ACK timeout exponent (RDMA_OPTION_ID_ACK_TIMEOUT).
func (id *ID) SetAckTimeout(t uint8) error {
	return id.SetOption(abi.RDMA_OPTION_ID, abi.RDMA_OPTION_ID_ACK_TIMEOUT, []byte{t})
}

func (id *ID) setInt(name uint32, on bool) error {
	var b [4]byte
	if on {
		binary.NativeEndian.PutUint32(b[:], 1)
	}
	return id.SetOption(abi.RDMA_OPTION_ID, name, b[:])
}

// Notify tells the CM about a QP asynchronous event (rdma_notify), e.g.
// uverbs.EventCommEst when data arrives before ESTABLISHED. The kernel acts
// on EventCommEst and EventPathMig.
func (id *ID) Notify(event uverbs.AsyncEventType) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("notify"); err != nil {
		return err
	}
	req := abi.RdmaUcmNotify{Id: id.kid, Event: uint32(event)}
	return opErr("notify", id.kid, exec(id.ch, abi.RDMA_USER_CM_CMD_NOTIFY, &req, nil, 0))
}

// Migrate moves the id and its pending events to another channel (rdma_migrate_id). An id of CreateEP
// leaves its own channel closed behind, as librdmacm closes a synchronous id's.
func (id *ID) Migrate(to *Channel) error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if err := id.check("migrate id"); err != nil {
		return err
	}
	if to == id.ch {
		return nil
	}
	if err := to.adopt(id); err != nil {
		return opErr("migrate id", id.kid, err)
	}
	resp := new(abi.RdmaUcmMigrateResp)
	req := abi.RdmaUcmMigrateId{Response: ptr(unsafe.Pointer(resp)), Id: id.kid, Fd: uint32(id.ch.FD())}
	if err := exec(to, abi.RDMA_USER_CM_CMD_MIGRATE_ID, &req, unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil {
		to.unregister(id)
		return opErr("migrate id", id.kid, err)
	}
	id.ch.unregister(id)
	old := id.ch
	id.ch = to
	if id.ownCh { // librdmacm closes a synchronous id's channel when the id leaves it
		id.ownCh = false
		return opErr("migrate id", id.kid, old.Close())
	}
	return nil
}

// Close destroys the id (rdma_destroy_id; rdma_destroy_ep for CreateEP's ids, whose channel it closes
// too), and with it the QP and CQs CreateQP made, then the SRQ CreateSRQ made, and the id's multicast
// joins. A connected id sends DREQ.
// Events already fetched stay valid; events still queued for it are dropped.
// A second Close returns an error that matches ErrClosed.
func (id *ID) Close() error {
	id.mu.Lock()
	defer id.mu.Unlock()
	if id.destroyed {
		return opErr("destroy id", id.kid, ErrClosed)
	}
	errs := []error{id.destroyQPLocked()}
	if err := id.destroySRQLocked(); err != nil { // after the QP that uses it
		errs = append(errs, err)
	}
	for _, m := range id.mcasts {
		id.ch.unregisterMcast(m)
	}
	id.mcasts = nil
	resp := new(abi.RdmaUcmDestroyIdResp)
	req := abi.RdmaUcmDestroyId{Response: ptr(unsafe.Pointer(resp)), Id: id.kid}
	if err := exec(id.ch, abi.RDMA_USER_CM_CMD_DESTROY_ID, &req, unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil &&
		!errors.Is(err, ErrClosed) {
		errs = append(errs, opErr("destroy id", id.kid, err))
	}
	id.destroyed = true
	id.ch.unregister(id)
	if id.dev != nil {
		errs = append(errs, releaseDevice(id.dev))
		id.dev = nil
	}
	if id.ownCh { // CreateEP's channel: nothing else is on it
		errs = append(errs, id.ch.Close())
	}
	return errors.Join(errs...)
}

func beToHost64(v uint64) uint64 {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	return binary.BigEndian.Uint64(b[:])
}
