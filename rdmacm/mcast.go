package rdmacm

import (
	"net/netip"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/uverbs"
)

// Multicast is one multicast join of an id (rdma_join_multicast).
type Multicast struct {
	id       *ID
	uid      uint64
	kid      uint32
	addr     netip.AddrPort
	sendOnly bool
	// From MULTICAST_JOIN: the group's GID and LID the QP was attached with.
	attached bool
	mgid     uverbs.GID
	mlid     uint16
}

// Addr is the group address.
func (m *Multicast) Addr() netip.AddrPort { return m.addr }

// ID is the id that joined.
func (m *Multicast) ID() *ID { return m.id }

func (ch *Channel) lookupMcast(uid uint64) *Multicast {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.mcasts[uid]
}

func (ch *Channel) unregisterMcast(m *Multicast) {
	ch.mu.Lock()
	delete(ch.mcasts, m.uid)
	ch.mu.Unlock()
}

// JoinMulticast joins the multicast group addr (rdma_join_multicast with
// rdma_join_multicast_ex's flags: sendOnly = SENDONLY_FULLMEMBER). The id
// must have resolved addr with ResolveAddr first. MULTICAST_JOIN (with the
// group's UD parameters) or MULTICAST_ERROR follows; on MULTICAST_JOIN an id
// with a QP has it attached to the group unless sendOnly.
func (id *ID) JoinMulticast(addr netip.AddrPort, sendOnly bool) (*Multicast, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	op := "join multicast " + addr.Addr().String()
	if err := id.check(op); err != nil {
		return nil, err
	}
	m := &Multicast{id: id, uid: lastUID.Add(1), addr: addr, sendOnly: sendOnly}
	resp := new(abi.RdmaUcmCreateIdResp)
	req := abi.RdmaUcmJoinMcast{Response: ptr(unsafe.Pointer(resp)), Uid: m.uid, Id: id.kid}
	n, err := putSockaddr(&req.Addr, addr)
	if err != nil {
		return nil, opErr(op, id.kid, err)
	}
	req.AddrSize = n
	if sendOnly {
		req.JoinFlags = abi.RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
	}
	id.ch.mu.Lock()
	id.ch.mcasts[m.uid] = m
	id.ch.mu.Unlock()
	if err := exec(id.ch, abi.RDMA_USER_CM_CMD_JOIN_MCAST, &req, unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil {
		id.ch.unregisterMcast(m)
		return nil, opErr(op, id.kid, err)
	}
	m.kid = resp.Id
	if id.mcasts == nil {
		id.mcasts = map[uint64]*Multicast{}
	}
	id.mcasts[m.uid] = m
	return m, nil
}

// Leave leaves the group (rdma_leave_multicast), detaching the QP first.
func (m *Multicast) Leave() error {
	id := m.id
	id.mu.Lock()
	defer id.mu.Unlock()
	op := "leave multicast " + m.addr.Addr().String()
	if err := id.check(op); err != nil {
		return err
	}
	if m.attached && id.qp != nil {
		id.qp.DetachMcast(m.mgid, m.mlid)
		m.attached = false
	}
	delete(id.mcasts, m.uid)
	id.ch.unregisterMcast(m)
	resp := new(abi.RdmaUcmDestroyIdResp)
	req := abi.RdmaUcmDestroyId{Response: ptr(unsafe.Pointer(resp)), Id: m.kid}
	return opErr(op, id.kid, exec(id.ch, abi.RDMA_USER_CM_CMD_LEAVE_MCAST, &req, unsafe.Pointer(resp), unsafe.Sizeof(*resp)))
}
