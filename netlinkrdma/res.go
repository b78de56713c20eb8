package netlinkrdma

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/enumstr"
)

// ResourceCount is one line of a device's resource summary.
type ResourceCount struct {
	Name    string // "pd", "cq", "qp", "cm_id", "mr", "ctx", "srq"
	Current uint64
	// Max is the device's limit for the kind (RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_MAX, Linux 7.3+, sent for
	// pd, cq, qp, mr and srq); HasMax is false where the kernel sent none.
	Max    uint64
	HasMax bool
}

// ResourceSummary counts a device's restrack objects (RDMA_NLDEV_CMD_RES_GET).
type ResourceSummary struct {
	DevIndex uint32
	DevName  string
	Counts   []ResourceCount // in the kernel's order
}

func decodeResourceSummary(b []byte) (ResourceSummary, error) {
	var s ResourceSummary
	var present AttrSet
	err := walk(b, &present, func(ad *attrDecoder) {
		switch ad.Type() {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			s.DevIndex = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			s.DevName = ad.String()
		case abi.RDMA_NLDEV_ATTR_RES_SUMMARY:
			s.Counts = append(s.Counts, decodeTable(ad, abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY, decodeResourceCount)...)
		}
	})
	if err != nil {
		return ResourceSummary{}, err
	}
	if _, ok := present.lacks(abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_DEV_NAME,
		abi.RDMA_NLDEV_ATTR_RES_SUMMARY); ok {
		return ResourceSummary{}, errors.New("netlinkrdma: resource summary lacks device or summary table")
	}
	return s, nil
}

func decodeResourceCount(rc *ResourceCount, e *attrDecoder) error {
	var present AttrSet
	e.each(&present, func(e *attrDecoder) {
		switch e.Type() {
		case abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME:
			rc.Name = e.String()
		case abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR:
			rc.Current = e.Uint64()
		case abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_MAX:
			rc.Max, rc.HasMax = e.Uint64(), true
		}
	})
	if _, ok := present.lacks(abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR); ok {
		return errors.New("netlinkrdma: resource summary entry lacks name or count")
	}
	return nil
}

// ResourceSummary returns the resource counts of one device.
//
// Equivalent to: rdma resource show DEV
func (c *Conn) ResourceSummary(devIndex uint32) (ResourceSummary, error) {
	s, err := get(c, abi.RDMA_NLDEV_CMD_RES_GET, devAttrs(devIndex).Encode(), decodeResourceSummary)
	if err != nil {
		return ResourceSummary{}, opErr("get resource summary of device", fmt.Sprintf("index %d", devIndex), err)
	}
	return s, nil
}

// ResourceSummaries returns the resource counts of every device.
//
// Equivalent to: rdma resource show
func (c *Conn) ResourceSummaries() ([]ResourceSummary, error) {
	out, err := list(c, abi.RDMA_NLDEV_CMD_RES_GET, nil, decodeResourceSummary)
	if err != nil {
		return nil, opErr("list resource summaries", "", err)
	}
	return out, nil
}

// DriverAttrKind is the type of a driver-specific attribute's value.
type DriverAttrKind uint8

// Driver attribute value kinds.
const (
	DriverString DriverAttrKind = iota + 1
	DriverS32
	DriverU32
	DriverS64
	DriverU64
)

var driverAttrKindNames = [...]string{DriverString: "STRING", DriverS32: "S32", DriverU32: "U32", DriverS64: "S64", DriverU64: "U64"}

// String is the kind's name in enum rdma_nldev_print_type's terms ("U32"), or "DriverAttrKind(N)".
func (k DriverAttrKind) String() string {
	return enumstr.Name(driverAttrKindNames[:], uint64(k), "DriverAttrKind")
}

// DriverAttr is one driver-specific key/value pair attached to a resource
// (the RDMA_NLDEV_ATTR_DRIVER table).
type DriverAttr struct {
	Key  string
	Kind DriverAttrKind
	// Hex is set when the driver asked for hexadecimal printing
	// (RDMA_NLDEV_PRINT_TYPE_HEX).
	Hex  bool
	Str  string // DriverString
	Int  int64  // DriverS32, DriverS64
	Uint uint64 // DriverU32, DriverU64
}

// decodeDriverTable decodes the flat key, [print type], value sequence of a
// RDMA_NLDEV_ATTR_DRIVER table.
func decodeDriverTable(ad *attrDecoder) []DriverAttr {
	var out []DriverAttr
	var cur *DriverAttr
	hex := false
	ad.Nested(func(d *attrDecoder) {
		for d.Next() {
			switch d.Type() {
			case abi.RDMA_NLDEV_ATTR_DRIVER_STRING:
				if cur == nil {
					cur = &DriverAttr{Key: d.String()}
					continue
				}
				cur.Kind, cur.Str = DriverString, d.String()
			case abi.RDMA_NLDEV_ATTR_DRIVER_PRINT_TYPE:
				hex = d.Uint8() == abi.RDMA_NLDEV_PRINT_TYPE_HEX
				continue
			case abi.RDMA_NLDEV_ATTR_DRIVER_S32:
				if cur != nil {
					cur.Kind, cur.Int = DriverS32, int64(int32(d.Uint32()))
				}
			case abi.RDMA_NLDEV_ATTR_DRIVER_U32:
				if cur != nil {
					cur.Kind, cur.Uint = DriverU32, uint64(d.Uint32())
				}
			case abi.RDMA_NLDEV_ATTR_DRIVER_S64:
				if cur != nil {
					cur.Kind, cur.Int = DriverS64, int64(d.Uint64())
				}
			case abi.RDMA_NLDEV_ATTR_DRIVER_U64:
				if cur != nil {
					cur.Kind, cur.Uint = DriverU64, d.Uint64()
				}
			default:
				continue
			}
			if cur != nil && cur.Kind != 0 {
				cur.Hex = hex
				out = append(out, *cur)
				cur, hex = nil, false
			}
		}
	})
	return out
}

// ResBase holds what every resource entry carries: the device, the owner
// and driver details.
type ResBase struct {
	DevIndex uint32
	DevName  string
	// PID is the owning process of a user object; 0 for kernel objects,
	// which have KernelName instead (e.g. "ib_core").
	PID        uint32
	KernelName string
	// Driver holds driver-specific attributes, if any.
	Driver []DriverAttr
	// Raw is the driver's raw dump of the object (RES_*_GET_RAW only).
	Raw []byte
	// Present records which attributes the kernel sent for this entry.
	Present AttrSet
}

func (r *ResBase) res() *ResBase { return r }

// decodeBase decodes the attributes all resource entries share; it reports
// whether it consumed the current attribute.
func (r *ResBase) decodeBase(ad *attrDecoder) bool {
	r.Present.add(ad.Type())
	switch ad.Type() {
	case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
		r.DevIndex = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_DEV_NAME:
		r.DevName = ad.String()
	case abi.RDMA_NLDEV_ATTR_RES_PID:
		r.PID = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_KERN_NAME:
		r.KernelName = ad.String()
	case abi.RDMA_NLDEV_ATTR_DRIVER:
		r.Driver = decodeDriverTable(ad)
	case abi.RDMA_NLDEV_ATTR_RES_RAW:
		r.Raw = ad.Bytes()
	default:
		return false
	}
	return true
}

// resEntry is implemented by the pointer types of the resource entries.
type resEntry interface {
	res() *ResBase
	decodeAttr(ad *attrDecoder)
	check() error
}

// decodeResAttr decodes one attribute of a resource entry: a shared one into
// its ResBase, any other by the entry itself.
func decodeResAttr(p resEntry, ad *attrDecoder) {
	if !p.res().decodeBase(ad) {
		p.decodeAttr(ad)
	}
}

// decodeResEntry decodes and checks one entry of a resource table.
func decodeResEntry[T any, P interface {
	*T
	resEntry
}](v *T, e *attrDecoder) error {
	p := P(v)
	e.each(nil, func(ad *attrDecoder) { decodeResAttr(p, ad) })
	return p.check()
}

// resKind describes one RES_*_GET command.
type resKind struct {
	name  string // "qp", for errors
	cmd   uint16 // RDMA_NLDEV_CMD_RES_QP_GET
	raw   uint16 // RDMA_NLDEV_CMD_RES_QP_GET_RAW, 0 if none
	table uint16 // RDMA_NLDEV_ATTR_RES_QP
	entry uint16 // RDMA_NLDEV_ATTR_RES_QP_ENTRY
	id    uint16 // RDMA_NLDEV_ATTR_RES_LQPN
}

// decodeResDump decodes one dump reply: the device attributes and a table
// of entries.
func decodeResDump[T any, P interface {
	*T
	resEntry
}](b []byte, k resKind) ([]T, error) {
	var out []T
	var devIndex uint32
	var devName string
	var present AttrSet
	err := walk(b, &present, func(ad *attrDecoder) {
		switch ad.Type() {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			devIndex = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			devName = ad.String()
		case k.table:
			out = append(out, decodeTable(ad, k.entry, decodeResEntry[T, P])...)
		}
	})
	if err != nil {
		return nil, err
	}
	if _, ok := present.lacks(abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_DEV_NAME, k.table); ok {
		return nil, fmt.Errorf("netlinkrdma: %s dump reply lacks device or table", k.name)
	}
	for i := range out {
		r := P(&out[i]).res()
		r.DevIndex, r.DevName = devIndex, devName
		r.Present.add(abi.RDMA_NLDEV_ATTR_DEV_INDEX)
		r.Present.add(abi.RDMA_NLDEV_ATTR_DEV_NAME)
	}
	return out, nil
}

// decodeResOne decodes a doit reply: one entry, flat, with its device.
func decodeResOne[T any, P interface {
	*T
	resEntry
}](b []byte, k resKind) (T, error) {
	var v T
	p := P(&v)
	if err := walk(b, nil, func(ad *attrDecoder) { decodeResAttr(p, ad) }); err != nil {
		return v, err
	}
	if _, ok := p.res().Present.lacks(abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_DEV_NAME); ok {
		return v, fmt.Errorf("netlinkrdma: %s reply lacks device", k.name)
	}
	return v, p.check()
}

// ResQuery selects the objects of a resource dump.
type ResQuery struct {
	DevIndex uint32
	// Port restricts QP and CM ID dumps to one port; 0 means all. The kernel
	// ignores it for other objects.
	Port uint32
	// Raw asks for the driver's raw object dump (QP, CQ, MR and SRQ; needs
	// CAP_NET_ADMIN; Linux 6.1 has no raw SRQ dump and answers EINVAL) in
	// ResBase.Raw.
	Raw bool
}

func (q ResQuery) attrs() []byte {
	e := devAttrs(q.DevIndex)
	if q.Port != 0 {
		e.Uint32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, q.Port)
	}
	return e.Encode()
}

func (q ResQuery) object() string {
	if q.Port != 0 {
		return fmt.Sprintf("%d/%d", q.DevIndex, q.Port)
	}
	return fmt.Sprintf("index %d", q.DevIndex)
}

func (q ResQuery) cmd(k resKind) (uint16, error) {
	if !q.Raw {
		return k.cmd, nil
	}
	if k.raw == 0 {
		return 0, fmt.Errorf("no raw dump for %s: %w", k.name, unix.EOPNOTSUPP)
	}
	return k.raw, nil
}

func listRes[T any, P interface {
	*T
	resEntry
}](c *Conn, k resKind, q ResQuery) ([]T, error) {
	cmd, err := q.cmd(k)
	if err != nil {
		return nil, opErr("list "+k.name+" of device", q.object(), err)
	}
	out, err := listTables(c, cmd, q.attrs(), func(b []byte) ([]T, error) { return decodeResDump[T, P](b, k) })
	if err != nil {
		return nil, opErr("list "+k.name+" of device", q.object(), err)
	}
	return out, nil
}

func getRes[T any, P interface {
	*T
	resEntry
}](c *Conn, k resKind, q ResQuery, id uint32) (T, error) {
	var v T
	cmd, err := q.cmd(k)
	if err == nil {
		e := attrEncoder{b: q.attrs()}
		e.Uint32(k.id, id)
		v, err = get(c, cmd, e.Encode(), func(b []byte) (T, error) { return decodeResOne[T, P](b, k) })
	}
	if err != nil {
		return v, opErr("get "+k.name, fmt.Sprintf("%d of device %s", id, q.object()), err)
	}
	return v, nil
}

// QP is one queue pair (RDMA_NLDEV_CMD_RES_QP_GET).
type QP struct {
	ResBase
	Port         uint32 // 0 when not bound to a port
	LQPN         uint32
	RQPN         uint32 // RC, UC only
	RQPSN        uint32 // RC, UC only
	SQPSN        uint32
	PathMigState PathMigState // RC, UC, XRC only
	Type         QPType
	State        QPState
	PDN          uint32 // user QPs only
}

func (q *QP) decodeAttr(ad *attrDecoder) {
	switch ad.Type() {
	case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
		q.Port = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_LQPN:
		q.LQPN = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_RQPN:
		q.RQPN = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_RQ_PSN:
		q.RQPSN = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_SQ_PSN:
		q.SQPSN = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE:
		q.PathMigState = PathMigState(ad.Uint8())
	case abi.RDMA_NLDEV_ATTR_RES_TYPE:
		q.Type = QPType(ad.Uint8())
	case abi.RDMA_NLDEV_ATTR_RES_STATE:
		q.State = QPState(ad.Uint8())
	case abi.RDMA_NLDEV_ATTR_RES_PDN:
		q.PDN = ad.Uint32()
	}
}

func (q *QP) check() error {
	if q.Raw != nil {
		return nil
	}
	if t, ok := q.Present.lacks(abi.RDMA_NLDEV_ATTR_RES_LQPN, abi.RDMA_NLDEV_ATTR_RES_SQ_PSN,
		abi.RDMA_NLDEV_ATTR_RES_TYPE, abi.RDMA_NLDEV_ATTR_RES_STATE); ok {
		return fmt.Errorf("netlinkrdma: qp entry lacks attribute %d", t)
	}
	return nil
}

var qpKind = resKind{"qp", abi.RDMA_NLDEV_CMD_RES_QP_GET, abi.RDMA_NLDEV_CMD_RES_QP_GET_RAW,
	abi.RDMA_NLDEV_ATTR_RES_QP, abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY, abi.RDMA_NLDEV_ATTR_RES_LQPN}

// QPs lists the QPs of a device (or of one of its ports).
//
// Equivalent to: rdma resource show qp link DEV[/PORT]
func (c *Conn) QPs(q ResQuery) ([]QP, error) { return listRes[QP](c, qpKind, q) }

// QP returns the QP with number lqpn.
//
// Equivalent to: rdma resource show qp link DEV lqpn LQPN
func (c *Conn) QP(q ResQuery, lqpn uint32) (QP, error) { return getRes[QP](c, qpKind, q, lqpn) }

// CQ is one completion queue (RDMA_NLDEV_CMD_RES_CQ_GET).
type CQ struct {
	ResBase
	CQN   uint32
	CQE   uint32 // capacity
	Users uint64
	// PollCtx is set for kernel CQs only (see Present).
	PollCtx PollCtx
	// AdaptiveModeration is the DIM setting of kernel CQs; nil when not
	// reported (user CQs) or not 0 or 1.
	AdaptiveModeration *bool
	CTXN               uint32 // user CQs only
}

func (q *CQ) decodeAttr(ad *attrDecoder) {
	switch ad.Type() {
	case abi.RDMA_NLDEV_ATTR_RES_CQN:
		q.CQN = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_CQE:
		q.CQE = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_USECNT:
		q.Users = ad.Uint64()
	case abi.RDMA_NLDEV_ATTR_RES_POLL_CTX:
		q.PollCtx = PollCtx(ad.Uint8())
	case abi.RDMA_NLDEV_ATTR_DEV_DIM:
		q.AdaptiveModeration = dimSetting(ad.Uint8())
	case abi.RDMA_NLDEV_ATTR_RES_CTXN:
		q.CTXN = ad.Uint32()
	}
}

func (q *CQ) check() error {
	if q.Raw == nil && (!q.Present.Has(abi.RDMA_NLDEV_ATTR_RES_CQE) || !q.Present.Has(abi.RDMA_NLDEV_ATTR_RES_USECNT)) {
		return errors.New("netlinkrdma: cq entry lacks cqe or users")
	}
	return nil
}

var cqKind = resKind{"cq", abi.RDMA_NLDEV_CMD_RES_CQ_GET, abi.RDMA_NLDEV_CMD_RES_CQ_GET_RAW,
	abi.RDMA_NLDEV_ATTR_RES_CQ, abi.RDMA_NLDEV_ATTR_RES_CQ_ENTRY, abi.RDMA_NLDEV_ATTR_RES_CQN}

// CQs lists the CQs of a device.
//
// Equivalent to: rdma resource show cq dev DEV
func (c *Conn) CQs(q ResQuery) ([]CQ, error) { return listRes[CQ](c, cqKind, q) }

// CQ returns the CQ with number cqn.
func (c *Conn) CQ(q ResQuery, cqn uint32) (CQ, error) { return getRes[CQ](c, cqKind, q, cqn) }

// MR is one memory region (RDMA_NLDEV_CMD_RES_MR_GET). The kernel sends
// RKey, LKey and IOVA only to callers with CAP_NET_ADMIN (see Present).
type MR struct {
	ResBase
	MRN    uint32
	RKey   uint32
	LKey   uint32
	IOVA   uint64
	Length uint64
	PDN    uint32
}

func (m *MR) decodeAttr(ad *attrDecoder) {
	switch ad.Type() {
	case abi.RDMA_NLDEV_ATTR_RES_MRN:
		m.MRN = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_RKEY:
		m.RKey = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_LKEY:
		m.LKey = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_IOVA:
		m.IOVA = ad.Uint64()
	case abi.RDMA_NLDEV_ATTR_RES_MRLEN:
		m.Length = ad.Uint64()
	case abi.RDMA_NLDEV_ATTR_RES_PDN:
		m.PDN = ad.Uint32()
	}
}

func (m *MR) check() error {
	if m.Raw == nil && !m.Present.Has(abi.RDMA_NLDEV_ATTR_RES_MRLEN) {
		return errors.New("netlinkrdma: mr entry lacks length")
	}
	return nil
}

var mrKind = resKind{"mr", abi.RDMA_NLDEV_CMD_RES_MR_GET, abi.RDMA_NLDEV_CMD_RES_MR_GET_RAW,
	abi.RDMA_NLDEV_ATTR_RES_MR, abi.RDMA_NLDEV_ATTR_RES_MR_ENTRY, abi.RDMA_NLDEV_ATTR_RES_MRN}

// MRs lists the MRs of a device.
//
// Equivalent to: rdma resource show mr dev DEV
func (c *Conn) MRs(q ResQuery) ([]MR, error) { return listRes[MR](c, mrKind, q) }

// MR returns the MR with number mrn.
func (c *Conn) MR(q ResQuery, mrn uint32) (MR, error) { return getRes[MR](c, mrKind, q, mrn) }

// PD is one protection domain (RDMA_NLDEV_CMD_RES_PD_GET). The keys are sent
// only to callers with CAP_NET_ADMIN, and only when in use (see Present).
type PD struct {
	ResBase
	PDN              uint32
	LocalDMALKey     uint32
	UnsafeGlobalRKey uint32
	Users            uint64
	CTXN             uint32 // user PDs only
}

func (p *PD) decodeAttr(ad *attrDecoder) {
	switch ad.Type() {
	case abi.RDMA_NLDEV_ATTR_RES_PDN:
		p.PDN = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY:
		p.LocalDMALKey = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_UNSAFE_GLOBAL_RKEY:
		p.UnsafeGlobalRKey = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_USECNT:
		p.Users = ad.Uint64()
	case abi.RDMA_NLDEV_ATTR_RES_CTXN:
		p.CTXN = ad.Uint32()
	}
}

func (p *PD) check() error {
	if !p.Present.Has(abi.RDMA_NLDEV_ATTR_RES_USECNT) {
		return errors.New("netlinkrdma: pd entry lacks users")
	}
	return nil
}

var pdKind = resKind{"pd", abi.RDMA_NLDEV_CMD_RES_PD_GET, 0,
	abi.RDMA_NLDEV_ATTR_RES_PD, abi.RDMA_NLDEV_ATTR_RES_PD_ENTRY, abi.RDMA_NLDEV_ATTR_RES_PDN}

// PDs lists the PDs of a device.
//
// Equivalent to: rdma resource show pd dev DEV
func (c *Conn) PDs(q ResQuery) ([]PD, error) { return listRes[PD](c, pdKind, q) }

// PD returns the PD with number pdn.
func (c *Conn) PD(q ResQuery, pdn uint32) (PD, error) { return getRes[PD](c, pdKind, q, pdn) }

// CMID is one rdma_cm ID (RDMA_NLDEV_CMD_RES_CM_ID_GET).
type CMID struct {
	ResBase
	Port      uint32 // 0 when not bound
	LQPN      uint32 // when a QP is attached
	Type      QPType // when a QP is attached
	PortSpace PortSpace
	State     CMState
	// SrcAddr and DstAddr are the bound / connected addresses; not valid
	// when absent or of a family other than IPv4 / IPv6.
	SrcAddr, DstAddr netip.AddrPort
	CMIDN            uint32
}

// decodeSockaddr decodes a struct __kernel_sockaddr_storage holding a
// sockaddr_in or sockaddr_in6 (family in host order, port big-endian).
func decodeSockaddr(b []byte) netip.AddrPort {
	if len(b) < 2 {
		return netip.AddrPort{}
	}
	switch binary.NativeEndian.Uint16(b) {
	case unix.AF_INET:
		if len(b) >= 8 {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:4]))
		}
	case unix.AF_INET6:
		if len(b) >= 24 {
			return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), binary.BigEndian.Uint16(b[2:4]))
		}
	}
	return netip.AddrPort{}
}

func (m *CMID) decodeAttr(ad *attrDecoder) {
	switch ad.Type() {
	case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
		m.Port = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_LQPN:
		m.LQPN = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_TYPE:
		m.Type = QPType(ad.Uint8())
	case abi.RDMA_NLDEV_ATTR_RES_PS:
		if v := ad.Uint32(); v <= 0xffff {
			m.PortSpace = PortSpace(v)
		} else {
			ad.fail(fmt.Errorf("port space %#x exceeds 16 bits", v))
		}
	case abi.RDMA_NLDEV_ATTR_RES_STATE:
		m.State = CMState(ad.Uint8())
	case abi.RDMA_NLDEV_ATTR_RES_SRC_ADDR:
		m.SrcAddr = decodeSockaddr(ad.val)
	case abi.RDMA_NLDEV_ATTR_RES_DST_ADDR:
		m.DstAddr = decodeSockaddr(ad.val)
	case abi.RDMA_NLDEV_ATTR_RES_CM_IDN:
		m.CMIDN = ad.Uint32()
	}
}

func (m *CMID) check() error {
	if !m.Present.Has(abi.RDMA_NLDEV_ATTR_RES_STATE) || !m.Present.Has(abi.RDMA_NLDEV_ATTR_RES_PS) {
		return errors.New("netlinkrdma: cm_id entry lacks state or port space")
	}
	return nil
}

var cmIDKind = resKind{"cm_id", abi.RDMA_NLDEV_CMD_RES_CM_ID_GET, 0,
	abi.RDMA_NLDEV_ATTR_RES_CM_ID, abi.RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY, abi.RDMA_NLDEV_ATTR_RES_CM_IDN}

// CMIDs lists the rdma_cm IDs of a device (or one of its ports).
//
// Equivalent to: rdma resource show cm_id link DEV[/PORT]
func (c *Conn) CMIDs(q ResQuery) ([]CMID, error) { return listRes[CMID](c, cmIDKind, q) }

// CMID returns the rdma_cm ID with number cmidn.
func (c *Conn) CMID(q ResQuery, cmidn uint32) (CMID, error) {
	return getRes[CMID](c, cmIDKind, q, cmidn)
}

// Context is one user verbs context (RDMA_NLDEV_CMD_RES_CTX_GET).
type Context struct {
	ResBase
	CTXN uint32
}

func (x *Context) decodeAttr(ad *attrDecoder) {
	if ad.Type() == abi.RDMA_NLDEV_ATTR_RES_CTXN {
		x.CTXN = ad.Uint32()
	}
}

func (x *Context) check() error {
	if !x.Present.Has(abi.RDMA_NLDEV_ATTR_RES_CTXN) {
		return errors.New("netlinkrdma: ctx entry lacks ctxn")
	}
	return nil
}

var ctxKind = resKind{"ctx", abi.RDMA_NLDEV_CMD_RES_CTX_GET, 0,
	abi.RDMA_NLDEV_ATTR_RES_CTX, abi.RDMA_NLDEV_ATTR_RES_CTX_ENTRY, abi.RDMA_NLDEV_ATTR_RES_CTXN}

// Contexts lists the user contexts of a device.
//
// Equivalent to: rdma resource show ctx dev DEV
func (c *Conn) Contexts(q ResQuery) ([]Context, error) { return listRes[Context](c, ctxKind, q) }

// Context returns the context with number ctxn.
func (c *Conn) Context(q ResQuery, ctxn uint32) (Context, error) {
	return getRes[Context](c, ctxKind, q, ctxn)
}

// QPNRange is a run of QP numbers attached to an SRQ; Min == Max for a
// single QP the kernel sent as RDMA_NLDEV_ATTR_RES_LQPN.
type QPNRange struct {
	Min, Max uint32
	// Range is set when the kernel sent the run as MIN_RANGE/MAX_RANGE.
	Range bool
}

// SRQ is one shared receive queue (RDMA_NLDEV_CMD_RES_SRQ_GET).
type SRQ struct {
	ResBase
	SRQN uint32
	Type SRQType
	PDN  uint32
	CQN  uint32 // XRC and TM SRQs
	// QPs are the QPs using the SRQ; nil and QPsPresent false when the
	// kernel sent no QP table.
	QPs        []QPNRange
	QPsPresent bool
}

func (s *SRQ) decodeAttr(ad *attrDecoder) {
	switch ad.Type() {
	case abi.RDMA_NLDEV_ATTR_RES_SRQN:
		s.SRQN = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_TYPE:
		s.Type = SRQType(ad.Uint8())
	case abi.RDMA_NLDEV_ATTR_RES_PDN:
		s.PDN = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_CQN:
		s.CQN = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_QP:
		s.QPsPresent = true
		s.QPs = append(s.QPs, decodeTable(ad, abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY, decodeQPNRange)...)
	}
}

func decodeQPNRange(r *QPNRange, e *attrDecoder) error {
	var present AttrSet
	e.each(&present, func(e *attrDecoder) {
		switch e.Type() {
		case abi.RDMA_NLDEV_ATTR_RES_LQPN:
			r.Min = e.Uint32()
			r.Max = r.Min
		case abi.RDMA_NLDEV_ATTR_MIN_RANGE:
			r.Min, r.Range = e.Uint32(), true
		case abi.RDMA_NLDEV_ATTR_MAX_RANGE:
			r.Max, r.Range = e.Uint32(), true
		}
	})
	if _, ok := present.lacks(abi.RDMA_NLDEV_ATTR_MIN_RANGE, abi.RDMA_NLDEV_ATTR_MAX_RANGE); ok &&
		!present.Has(abi.RDMA_NLDEV_ATTR_RES_LQPN) {
		return errors.New("netlinkrdma: srq qp entry lacks lqpn or range")
	}
	return nil
}

func (s *SRQ) check() error {
	if s.Raw == nil && !s.Present.Has(abi.RDMA_NLDEV_ATTR_RES_SRQN) {
		return errors.New("netlinkrdma: srq entry lacks srqn")
	}
	return nil
}

var srqKind = resKind{"srq", abi.RDMA_NLDEV_CMD_RES_SRQ_GET, abi.RDMA_NLDEV_CMD_RES_SRQ_GET_RAW,
	abi.RDMA_NLDEV_ATTR_RES_SRQ, abi.RDMA_NLDEV_ATTR_RES_SRQ_ENTRY, abi.RDMA_NLDEV_ATTR_RES_SRQN}

// SRQs lists the SRQs of a device.
//
// Equivalent to: rdma resource show srq dev DEV
func (c *Conn) SRQs(q ResQuery) ([]SRQ, error) { return listRes[SRQ](c, srqKind, q) }

// SRQ returns the SRQ with number srqn.
func (c *Conn) SRQ(q ResQuery, srqn uint32) (SRQ, error) { return getRes[SRQ](c, srqKind, q, srqn) }
