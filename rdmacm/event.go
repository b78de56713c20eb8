package rdmacm

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/uverbs"
)

// EventType is an rdma_cm event (enum rdma_cm_event_type).
type EventType uint32

// Event types, numbered as the kernel and librdmacm number them.
const (
	EventAddrResolved EventType = iota
	EventAddrError
	EventRouteResolved
	EventRouteError
	EventConnectRequest
	EventConnectResponse
	EventConnectError
	EventUnreachable
	EventRejected
	EventEstablished
	EventDisconnected
	EventDeviceRemoval
	EventMulticastJoin
	EventMulticastError
	EventAddrChange
	EventTimewaitExit
	EventAddrInfoResolved // RESOLVE_IB_SERVICE's answer (kernels newer than 6.12)
	EventAddrInfoError
	// EventUser is the event an application writes onto a channel with ID.WriteCMEvent; Event.Arg carries
	// its argument.
	EventUser
)

var eventNames = [...]string{"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR", "CONNECT_REQUEST",
	"CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE", "REJECTED", "ESTABLISHED", "DISCONNECTED",
	"DEVICE_REMOVAL", "MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE", "TIMEWAIT_EXIT", "ADDRINFO_RESOLVED",
	"ADDRINFO_ERROR"}

// String is what librdmacm's rdma_event_str returns: "RDMA_CM_EVENT_ESTABLISHED",
// or "UNKNOWN EVENT" (which rdma-core 65 answers for EventUser too).
func (t EventType) String() string {
	if int(t) < len(eventNames) {
		return "RDMA_CM_EVENT_" + eventNames[t]
	}
	return "UNKNOWN EVENT"
}

// ConnParam are the connection parameters of CONNECT, ACCEPT and of the
// events of connected (RC) ids (struct rdma_conn_param).
type ConnParam struct {
	PrivateData []byte
	// ResponderResources and InitiatorDepth: the number of outstanding RDMA
	// READ/atomic operations. MaxResources (0xFF) means the device maximum
	// (on accept: min(request, maximum)).
	ResponderResources uint8
	InitiatorDepth     uint8
	FlowControl        uint8
	RetryCount         uint8 // ignored on accept
	RNRRetryCount      uint8
	SRQ                uint8 // events only; set from the QP on connect/accept
	QPNum              uint32
	QKey               uint32 // AF_IB only
}

// MaxResources asks for the device's maximum responder resources / initiator depth.
const MaxResources = 0xFF

// UDParam are the parameters of events of UD ids and multicast events
// (struct rdma_ud_param).
type UDParam struct {
	PrivateData []byte
	AHAttr      uverbs.AHAttr
	QPNum       uint32
	QKey        uint32
}

// Event is one rdma_cm event (struct rdma_cm_event). It is a copy: it needs
// no acknowledgement and stays valid after the next GetEvent.
type Event struct {
	Type EventType
	// Status: a negative errno for *_ERROR events, the IB CM reject reason
	// for REJECTED (8 = no listener, 28 = consumer reject).
	Status int32
	// ID is the id the event is for. For CONNECT_REQUEST it is the new id
	// of the incoming connection and Listener is the listening id.
	ID       *ID
	Listener *ID
	// Multicast is the join a MULTICAST_JOIN/MULTICAST_ERROR is for (ID is its id).
	Multicast *Multicast
	// Conn is set for connected ids, UD for UD ids and multicast events.
	Conn ConnParam
	UD   UDParam
	// ECE is the enhanced connection establishment data of CONNECT_REQUEST and CONNECT_RESPONSE /
	// ESTABLISHED (zero when the peer set none).
	ECE ECE
	// Arg is the argument of an EventUser (librdmacm's param.arg), as WriteCMEvent wrote it.
	Arg uint64
}

// ECE are enhanced connection establishment options (struct rdma_ucm_ece; librdmacm's struct ibv_ece
// with AttrMod for options): a vendor id and vendor-defined option bits that the IB CM carries in REQ
// (the vendor id field, 24 bits on the wire, and the MAD's attribute modifier) and REP.
type ECE struct {
	VendorID uint32
	AttrMod  uint32 // ibv_ece.options
}

// PrivateData is the event's private data (Conn's or UD's).
func (e *Event) PrivateData() []byte {
	if e.UD.PrivateData != nil {
		return e.UD.PrivateData
	}
	return e.Conn.PrivateData
}

func (e *Event) String() string {
	return fmt.Sprintf("%v status %d", e.Type, e.Status)
}

// rawEvent is a decoded struct rdma_ucm_event_resp, before the ids are looked up.
type rawEvent struct {
	uid    uint64
	id     uint32
	typ    EventType
	status int32
	conn   ConnParam
	ud     UDParam
	ece    [2]uint32
	arg    uint64
}

// decodeEvent decodes a GET_EVENT response. ud selects the param union's
// view (the id's QP type decides, as in the kernel; the caller does not know
// the id before decoding, so it is a callback on the uid).
func decodeEvent(b []byte, isUD func(uid uint64) bool) (rawEvent, error) {
	var r abi.RdmaUcmEventResp
	if len(b) < abi.SizeofRdmaUcmEventResp-12 { // the kernel's minimum (324, without reserved and ece)
		return rawEvent{}, fmt.Errorf("event response of %d bytes, want %d", len(b), abi.SizeofRdmaUcmEventResp)
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&r)), abi.SizeofRdmaUcmEventResp), b)
	e := rawEvent{uid: r.Uid, id: r.Id, typ: EventType(r.Event), status: int32(r.Status),
		ece: [2]uint32{r.Ece.VendorId, r.Ece.AttrMod}}
	if e.typ == EventUser || e.typ == abi.RDMA_CM_EVENT_INTERNAL { // the union's arg32[2], one u64 as written
		e.arg = binary.NativeEndian.Uint64(r.Param[:8])
		return e, nil
	}
	if isUD(r.Uid) || e.typ == EventMulticastJoin || e.typ == EventMulticastError {
		u := r.Ud()
		e.ud = UDParam{QPNum: u.QpNum, QKey: u.Qkey, AHAttr: ahAttr(&u.AhAttr),
			PrivateData: privData(u.PrivateData[:], u.PrivateDataLen)}
	} else {
		c := r.Conn()
		e.conn = ConnParam{QPNum: c.QpNum, QKey: c.Qkey, PrivateData: privData(c.PrivateData[:], c.PrivateDataLen),
			SRQ: c.Srq, ResponderResources: c.ResponderResources, InitiatorDepth: c.InitiatorDepth,
			FlowControl: c.FlowControl, RetryCount: c.RetryCount, RNRRetryCount: c.RnrRetryCount}
	}
	return e, nil
}

func privData(b []byte, n uint8) []byte {
	if n == 0 {
		return nil
	}
	out := make([]byte, n)
	copy(out, b)
	return out
}

func ahAttr(a *abi.IbUverbsAhAttr) uverbs.AHAttr {
	return uverbs.AHAttr{
		GRH: uverbs.GlobalRoute{DGID: a.Grh.Dgid, FlowLabel: a.Grh.FlowLabel, SGIDIndex: a.Grh.SgidIndex,
			HopLimit: a.Grh.HopLimit, TrafficClass: a.Grh.TrafficClass},
		DLID: a.Dlid, SL: a.Sl, SrcPathBits: a.SrcPathBits, StaticRate: uverbs.Rate(a.StaticRate),
		IsGlobal: a.IsGlobal != 0, PortNum: a.PortNum,
	}
}

// qpAttr converts an INIT_QP_ATTR response into uverbs' form.
func qpAttr(k *abi.IbUverbsQpAttr) (*uverbs.QPAttr, uverbs.QPAttrMask) {
	a := &uverbs.QPAttr{
		State: uverbs.QPState(k.QpState), CurState: uverbs.QPState(k.CurQpState), PathMTU: uverbs.MTU(k.PathMtu),
		PathMigState: uint8(k.PathMigState), QKey: k.Qkey, RQPSN: k.RqPsn, SQPSN: k.SqPsn, DestQPN: k.DestQpNum,
		AccessFlags: uverbs.Access(k.QpAccessFlags),
		Cap: uverbs.QPCap{MaxSendWR: k.MaxSendWr, MaxRecvWR: k.MaxRecvWr, MaxSendSGE: k.MaxSendSge,
			MaxRecvSGE: k.MaxRecvSge, MaxInlineData: k.MaxInlineData},
		AHAttr: ahAttr(&k.AhAttr), AltAHAttr: ahAttr(&k.AltAhAttr),
		PKeyIndex: k.PkeyIndex, AltPKeyIndex: k.AltPkeyIndex, EnSQDAsyncNotify: k.EnSqdAsyncNotify,
		SQDraining: k.SqDraining, MaxRdAtomic: k.MaxRdAtomic, MaxDestRdAtomic: k.MaxDestRdAtomic,
		MinRNRTimer: k.MinRnrTimer, PortNum: k.PortNum, Timeout: k.Timeout, RetryCnt: k.RetryCnt,
		RNRRetry: k.RnrRetry, AltPortNum: k.AltPortNum, AltTimeout: k.AltTimeout,
	}
	return a, uverbs.QPAttrMask(k.QpAttrMask)
}
