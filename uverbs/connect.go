package uverbs

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Endpoint is what a peer needs to reach a QP: exchange it over any channel (a TCP connection, a file, rdma_cm
// private data), then Connect each side to the other's. MarshalBinary gives EndpointSize bytes.
type Endpoint struct {
	QPN  uint32 // QP number (24 bits)
	PSN  uint32 // the first packet sequence number this QP sends (24 bits)
	QKey uint32 // UD: the Q_Key the QP accepts
	LID  uint16 // the port's LID (InfiniBand; 0 on RoCE)
	Port uint8  // the local port the QP uses
	MTU  MTU    // the port's active MTU (Connect uses the smaller of both sides')
	GID  GID    // the source GID (zero when the port needs none: InfiniBand without GRH)
}

// EndpointSize is the length of an Endpoint's binary form.
const EndpointSize = 36

const endpointVersion = 1

// MarshalBinary encodes e in EndpointSize bytes (a version byte, then the fields in network byte order).
func (e Endpoint) MarshalBinary() ([]byte, error) {
	return e.AppendBinary(make([]byte, 0, EndpointSize))
}

// AppendBinary appends e's binary form to b.
func (e Endpoint) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, endpointVersion, e.Port, uint8(e.MTU), 0)
	b = binary.BigEndian.AppendUint32(b, e.QPN)
	b = binary.BigEndian.AppendUint32(b, e.PSN)
	b = binary.BigEndian.AppendUint32(b, e.QKey)
	b = binary.BigEndian.AppendUint16(b, e.LID)
	b = append(b, 0, 0)
	return append(b, e.GID[:]...), nil
}

// UnmarshalBinary decodes an Endpoint written by MarshalBinary.
func (e *Endpoint) UnmarshalBinary(b []byte) error {
	if len(b) != EndpointSize {
		return fmt.Errorf("decode endpoint: %d bytes, want %d: %w", len(b), EndpointSize, unix.EINVAL)
	}
	if b[0] != endpointVersion {
		return fmt.Errorf("decode endpoint: version %d, want %d: %w", b[0], endpointVersion, unix.EINVAL)
	}
	*e = Endpoint{Port: b[1], MTU: MTU(b[2]), QPN: binary.BigEndian.Uint32(b[4:]), PSN: binary.BigEndian.Uint32(b[8:]),
		QKey: binary.BigEndian.Uint32(b[12:]), LID: binary.BigEndian.Uint16(b[16:])}
	copy(e.GID[:], b[20:36])
	if e.QPN > 0xffffff || e.PSN > 0xffffff {
		return fmt.Errorf("decode endpoint: QPN %#x or PSN %#x wider than 24 bits: %w", e.QPN, e.PSN, unix.EINVAL)
	}
	return nil
}

// AutoGIDIndex in EndpointOptions.GIDIndex chooses the source GID as nil options do.
const AutoGIDIndex = -1

// DefaultQKey is the Q_Key ActivateUD and Endpoint use when the options give none (rdma-core's examples use
// the same value).
const DefaultQKey = 0x11111111

// EndpointOptions select the local half of a connection. Nil options mean port 1, AutoGIDIndex, a random PSN
// and DefaultQKey; non-nil options are used as given, except that Port 0 means port 1 and QKey 0 means
// DefaultQKey.
type EndpointOptions struct {
	Port     int    // the local port (1-based)
	GIDIndex int    // the source GID's table index, or AutoGIDIndex: the RoCE v2 IPv4 GID if the port has one, else the first valid GID
	PSN      uint32 // the first send PSN (24 bits)
	QKey     uint32 // UD: the Q_Key to accept
}

// Endpoint returns the local half of a connection for this QP and remembers it for Connect and ActivateUD:
// QP number, PSN, port, LID, active MTU and source GID (see EndpointOptions for the choices nil makes).
func (qp *QP) Endpoint(opts *EndpointOptions) (Endpoint, error) {
	e, err := qp.endpoint(opts)
	if err != nil {
		return Endpoint{}, wrap(fmt.Sprintf("endpoint of QP %#x", qp.qpn), qp.ctx.dev.Name, err)
	}
	return e, nil
}

func (qp *QP) endpoint(opts *EndpointOptions) (Endpoint, error) {
	c := qp.ctx
	if err := qp.enter(); err != nil {
		return Endpoint{}, err
	}
	defer qp.exit()
	o := EndpointOptions{Port: 1, GIDIndex: AutoGIDIndex, QKey: DefaultQKey}
	if opts != nil {
		o = *opts
	} else {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return Endpoint{}, err
		}
		o.PSN = binary.LittleEndian.Uint32(b[:])
	}
	if o.Port == 0 {
		o.Port = 1
	}
	if o.QKey == 0 {
		o.QKey = DefaultQKey
	}
	o.PSN &= 0xffffff
	pa, err := c.QueryPort(o.Port)
	if err != nil {
		return Endpoint{}, err
	}
	gid, err := c.endpointGID(o.Port, o.GIDIndex, pa)
	if err != nil {
		return Endpoint{}, err
	}
	e := Endpoint{QPN: qp.qpn, PSN: o.PSN, QKey: o.QKey, LID: pa.LID, Port: uint8(o.Port), MTU: pa.ActiveMTU}
	if gid != nil {
		e.GID = gid.GID
	}
	qp.mu.Lock()
	qp.local, qp.localGID, qp.hasLocal = e, gid, true
	qp.mu.Unlock()
	return e, nil
}

// endpointGID is the source GID for a connection on port: the one at index, or the automatic choice. It is
// nil on an InfiniBand port asked for automatically (connections there need no GRH).
func (c *Context) endpointGID(port, index int, pa *PortAttr) (*GIDEntry, error) {
	if index >= 0 {
		g, err := c.QueryGID(port, index)
		if err != nil {
			return nil, err
		}
		return &g, nil
	}
	table, err := c.QueryGIDTable()
	if err != nil {
		return nil, err
	}
	var first *GIDEntry
	for i := range table {
		g := &table[i]
		if g.Port != port || g.GID.IsZero() {
			continue
		}
		if g.Type == GIDTypeRoCEv2 && g.GID.Addr().Is4In6() {
			return g, nil
		}
		if first == nil {
			first = g
		}
	}
	if pa.LinkLayer != LinkLayerEthernet {
		return nil, nil
	}
	if first == nil {
		return nil, fmt.Errorf("port %d has no valid GID: %w", port, unix.ENODEV)
	}
	return first, nil
}

// ConnectOptions are the attributes Connect applies. Nil options mean DefaultConnectOptions(); non-nil options
// are used as given, except that MTU 0 means the smaller of both ports' active MTU.
type ConnectOptions struct {
	MTU             MTU    // path MTU
	Timeout         uint8  // local ACK timeout: 4.096 µs × 2^Timeout (RC)
	RetryCnt        uint8  // transport retries (RC); rxe treats 7 as unlimited, so there a dead peer gives no RETRY_EXC_ERR
	RNRRetry        uint8  // receiver-not-ready retries, 7 = unlimited (RC)
	MaxRdAtomic     uint8  // RDMA READs and atomics this QP may have outstanding (RC)
	MaxDestRdAtomic uint8  // RDMA READs and atomics it accepts outstanding (RC)
	MinRNRTimer     uint8  // the RNR NAK timer code it sends (RC)
	Access          Access // remote access the QP grants (AccessRemoteWrite, AccessRemoteRead, AccessRemoteAtomic)
	SL              uint8  // service level
	HopLimit        uint8  // GRH hop limit (0 means 1, as rdma-core's examples)
	TrafficClass    uint8  // GRH traffic class
}

// DefaultConnectOptions are rdma-core's test defaults: timeout 14, retry 7, RNR retry 7, one outstanding RDMA
// READ or atomic each way, RNR timer 12, local write and remote read, write and atomic access, automatic MTU.
func DefaultConnectOptions() ConnectOptions {
	return ConnectOptions{Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1, MaxDestRdAtomic: 1, MinRNRTimer: 12,
		Access: AccessLocalWrite | AccessRemoteRead | AccessRemoteWrite | AccessRemoteAtomic, HopLimit: 1}
}

// Connect brings an RC or UC QP from RESET through INIT and RTR to RTS towards remote (the peer's Endpoint),
// with the local half from the last Endpoint call (or nil EndpointOptions if there was none). This is the
// INIT→RTR→RTS sequence of rdma-core's examples; use Modify for anything else.
func (qp *QP) Connect(remote Endpoint, opts *ConnectOptions) error {
	c := qp.ctx
	op := fmt.Sprintf("connect QP %#x to QP %#x", qp.qpn, remote.QPN)
	if qp.typ != QPTypeRC && qp.typ != QPTypeUC {
		return wrap(op, c.dev.Name, fmt.Errorf("%v QP: Connect is for RC and UC (UD: ActivateUD): %w", qp.typ, unix.EINVAL))
	}
	o := DefaultConnectOptions()
	if opts != nil {
		o = *opts
	}
	local, gid, err := qp.localEndpoint()
	if err != nil {
		return wrap(op, c.dev.Name, err)
	}
	if o.MTU == 0 {
		o.MTU = local.MTU
		if remote.MTU != 0 && remote.MTU < o.MTU {
			o.MTU = remote.MTU
		}
	}
	if o.HopLimit == 0 {
		o.HopLimit = 1
	}
	access := o.Access
	if qp.typ == QPTypeUC {
		access &= AccessLocalWrite | AccessRemoteWrite // UC has neither RDMA READ nor atomics
	}
	init := QPAttr{State: QPStateInit, PortNum: local.Port, AccessFlags: access}
	if err := qp.Modify(init, QPAttrState|QPAttrPKeyIndex|QPAttrPort|QPAttrAccessFlags); err != nil {
		return err
	}
	rtr := QPAttr{State: QPStateRTR, PathMTU: o.MTU, DestQPN: remote.QPN, RQPSN: remote.PSN,
		AHAttr: AHAttr{DLID: remote.LID, SL: o.SL, PortNum: local.Port}}
	if gid != nil {
		rtr.AHAttr.IsGlobal = true
		rtr.AHAttr.GRH = GlobalRoute{DGID: remote.GID, SGIDIndex: uint8(gid.Index), HopLimit: o.HopLimit,
			TrafficClass: o.TrafficClass}
	}
	mask := QPAttrState | QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN
	if qp.typ == QPTypeRC {
		rtr.MaxDestRdAtomic, rtr.MinRNRTimer = o.MaxDestRdAtomic, o.MinRNRTimer
		mask |= QPAttrMaxDestRdAtomic | QPAttrMinRNRTimer
	}
	if err := qp.Modify(rtr, mask); err != nil {
		return err
	}
	rts := QPAttr{State: QPStateRTS, SQPSN: local.PSN}
	mask = QPAttrState | QPAttrSQPSN
	if qp.typ == QPTypeRC {
		rts.Timeout, rts.RetryCnt, rts.RNRRetry, rts.MaxRdAtomic = o.Timeout, o.RetryCnt, o.RNRRetry, o.MaxRdAtomic
		mask |= QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry | QPAttrMaxQPRdAtomic
	}
	return qp.Modify(rts, mask)
}

// UDOptions are ActivateUD's attributes. Nil options mean the Endpoint's port, Q_Key and PSN and P_Key index 0.
type UDOptions struct {
	PKeyIndex uint16
}

// ActivateUD brings a UD QP from RESET through INIT and RTR to RTS, with the port, Q_Key and send PSN of the last
// Endpoint call (or nil EndpointOptions if there was none). Address each send with an AH (CreateAH with
// AHAttrTo of the peer's Endpoint) and the peer's QPN and Q_Key.
func (qp *QP) ActivateUD(opts *UDOptions) error {
	c := qp.ctx
	op := fmt.Sprintf("activate UD QP %#x", qp.qpn)
	if qp.typ != QPTypeUD {
		return wrap(op, c.dev.Name, fmt.Errorf("%v QP: ActivateUD is for UD (RC, UC: Connect): %w", qp.typ, unix.EINVAL))
	}
	var o UDOptions
	if opts != nil {
		o = *opts
	}
	local, _, err := qp.localEndpoint()
	if err != nil {
		return wrap(op, c.dev.Name, err)
	}
	init := QPAttr{State: QPStateInit, PKeyIndex: o.PKeyIndex, PortNum: local.Port, QKey: local.QKey}
	if err := qp.Modify(init, QPAttrState|QPAttrPKeyIndex|QPAttrPort|QPAttrQKey); err != nil {
		return err
	}
	if err := qp.Modify(QPAttr{State: QPStateRTR}, QPAttrState); err != nil {
		return err
	}
	return qp.Modify(QPAttr{State: QPStateRTS, SQPSN: local.PSN}, QPAttrState|QPAttrSQPSN)
}

// AHAttrTo is the address vector from this QP's endpoint to remote, for CreateAH (UD sends).
func (qp *QP) AHAttrTo(remote Endpoint) (AHAttr, error) {
	local, gid, err := qp.localEndpoint()
	if err != nil {
		return AHAttr{}, wrap(fmt.Sprintf("address of QP %#x", remote.QPN), qp.ctx.dev.Name, err)
	}
	a := AHAttr{DLID: remote.LID, PortNum: local.Port}
	if gid != nil {
		a.IsGlobal = true
		a.GRH = GlobalRoute{DGID: remote.GID, SGIDIndex: uint8(gid.Index), HopLimit: 1}
	}
	return a, nil
}

// localEndpoint is the endpoint of the last Endpoint call, made with nil options if there was none.
func (qp *QP) localEndpoint() (Endpoint, *GIDEntry, error) {
	qp.mu.Lock()
	e, g, ok := qp.local, qp.localGID, qp.hasLocal
	qp.mu.Unlock()
	if ok {
		return e, g, nil
	}
	e, err := qp.endpoint(nil)
	if err != nil {
		return Endpoint{}, nil, err
	}
	qp.mu.Lock()
	g = qp.localGID
	qp.mu.Unlock()
	return e, g, nil
}
