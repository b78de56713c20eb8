package umad

import (
	"encoding/binary"
	"fmt"
)

// Sizes of the kernel's and the IB spec's structures.
const (
	HdrSize = 64  // struct ib_user_mad_hdr (ABI 5, with pkey_index)
	MADSize = 256 // a MAD without RMPP
	// MADHdrSize is the common MAD header (struct ib_mad_hdr).
	MADHdrSize = 24
	// PMADataOffset is where a PerfMgt attribute starts in the MAD (after
	// the header and 40 reserved bytes; IB_PC_DATA_OFFS).
	PMADataOffset = 64
)

// Well-known values for addressing and classes.
const (
	QP1      = 1          // the GSI QP
	QP1QKey  = 0x80010000 // IB_DEFAULT_QP1_QKEY
	ClassSMI = 0x01       // subnet management, LID routed
	ClassSA  = 0x03       // subnet administration
	ClassPMA = 0x04       // performance management

	MethodGet     = 0x01
	MethodSet     = 0x02
	MethodGetResp = 0x81

	AttrClassPortInfo        = 0x0001
	AttrPortCounters         = 0x0012
	AttrPortCountersExtended = 0x001D
)

// Addr is where a MAD goes (or came from): the address part of struct
// ib_user_mad_hdr. On a RoCE port there are no LIDs: set GRH with the
// destination GID and the local GID index.
type Addr struct {
	QPN          uint32
	QKey         uint32
	LID          uint16
	SL           uint8
	PathBits     uint8
	GRH          bool
	GIDIndex     uint8
	HopLimit     uint8
	TrafficClass uint8
	GID          [16]byte
	FlowLabel    uint32
	PKeyIndex    uint16
}

// Hdr is struct ib_user_mad_hdr: what precedes each MAD written to or read
// from a umad device.
type Hdr struct {
	AgentID   uint32
	Status    uint32 // on reads: 0, or an errno (ETIMEDOUT) for a failed send
	TimeoutMS uint32
	Retries   uint32
	Length    uint32 // on reads: header plus MAD bytes
	Addr
}

// Marshal encodes h into the kernel's 64-byte layout (host-order counters,
// network-order address fields), as write(2) on a umad device expects.
func (h *Hdr) Marshal() []byte {
	b := make([]byte, HdrSize)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], h.AgentID)
	ne.PutUint32(b[4:], h.Status)
	ne.PutUint32(b[8:], h.TimeoutMS)
	ne.PutUint32(b[12:], h.Retries)
	ne.PutUint32(b[16:], h.Length)
	binary.BigEndian.PutUint32(b[20:], h.QPN)
	binary.BigEndian.PutUint32(b[24:], h.QKey)
	binary.BigEndian.PutUint16(b[28:], h.LID)
	b[30] = h.SL
	b[31] = h.PathBits
	if h.GRH {
		b[32] = 1
	}
	b[33] = h.GIDIndex
	b[34] = h.HopLimit
	b[35] = h.TrafficClass
	copy(b[36:52], h.GID[:])
	binary.BigEndian.PutUint32(b[52:], h.FlowLabel)
	ne.PutUint16(b[56:], h.PKeyIndex)
	return b
}

// ParseHdr decodes the kernel's 64-byte header from the start of b.
func ParseHdr(b []byte) (Hdr, error) {
	if len(b) < HdrSize {
		return Hdr{}, fmt.Errorf("%w: user MAD header of %d bytes, want %d", ErrMalformed, len(b), HdrSize)
	}
	ne := binary.NativeEndian
	h := Hdr{
		AgentID:   ne.Uint32(b[0:]),
		Status:    ne.Uint32(b[4:]),
		TimeoutMS: ne.Uint32(b[8:]),
		Retries:   ne.Uint32(b[12:]),
		Length:    ne.Uint32(b[16:]),
	}
	h.QPN = binary.BigEndian.Uint32(b[20:])
	h.QKey = binary.BigEndian.Uint32(b[24:])
	h.LID = binary.BigEndian.Uint16(b[28:])
	h.SL = b[30]
	h.PathBits = b[31]
	h.GRH = b[32] != 0
	h.GIDIndex = b[33]
	h.HopLimit = b[34]
	h.TrafficClass = b[35]
	copy(h.GID[:], b[36:52])
	h.FlowLabel = binary.BigEndian.Uint32(b[52:])
	h.PKeyIndex = ne.Uint16(b[56:])
	return h, nil
}

// MADHdr is the common MAD header (IB spec 13.4.3).
type MADHdr struct {
	BaseVersion   uint8
	MgmtClass     uint8
	ClassVersion  uint8
	Method        uint8
	Status        uint16
	ClassSpecific uint16
	TID           uint64
	AttrID        uint16
	AttrMod       uint32
}

// Put encodes h into the first 24 bytes of b (network order).
func (h *MADHdr) Put(b []byte) {
	_ = b[MADHdrSize-1]
	b[0] = h.BaseVersion
	b[1] = h.MgmtClass
	b[2] = h.ClassVersion
	b[3] = h.Method
	binary.BigEndian.PutUint16(b[4:], h.Status)
	binary.BigEndian.PutUint16(b[6:], h.ClassSpecific)
	binary.BigEndian.PutUint64(b[8:], h.TID)
	binary.BigEndian.PutUint16(b[16:], h.AttrID)
	b[18], b[19] = 0, 0
	binary.BigEndian.PutUint32(b[20:], h.AttrMod)
}

// ParseMADHdr decodes the common MAD header at the start of b.
func ParseMADHdr(b []byte) (MADHdr, error) {
	if len(b) < MADHdrSize {
		return MADHdr{}, fmt.Errorf("%w: MAD of %d bytes, shorter than its %d-byte header", ErrMalformed, len(b), MADHdrSize)
	}
	return MADHdr{
		BaseVersion:   b[0],
		MgmtClass:     b[1],
		ClassVersion:  b[2],
		Method:        b[3],
		Status:        binary.BigEndian.Uint16(b[4:]),
		ClassSpecific: binary.BigEndian.Uint16(b[6:]),
		TID:           binary.BigEndian.Uint64(b[8:]),
		AttrID:        binary.BigEndian.Uint16(b[16:]),
		AttrMod:       binary.BigEndian.Uint32(b[20:]),
	}, nil
}

// NewPMAGet builds a 256-byte PerfMgt GET for attr with the port select
// field set (libibmad's pma_query_via: the request carries PortSelect in
// its data).
func NewPMAGet(tid uint64, attr uint16, portSelect uint8) []byte {
	m := make([]byte, MADSize)
	h := MADHdr{BaseVersion: 1, MgmtClass: ClassPMA, ClassVersion: 1, Method: MethodGet, TID: tid, AttrID: attr}
	h.Put(m)
	if attr != AttrClassPortInfo {
		m[PMADataOffset+1] = portSelect
	}
	return m
}

// PMAClassPortInfo is the part of PerfMgt ClassPortInfo perfquery reads.
type PMAClassPortInfo struct {
	BaseVersion  uint8
	ClassVersion uint8
	CapMask      uint16 // host order; bit 8 AllPortSelect, bit 9 extended width, ...
	CapMask2     uint32 // the 27-bit CapabilityMask2
	RespTime     uint8  // the 5-bit RespTimeValue
}

// ParsePMAClassPortInfo decodes ClassPortInfo from a whole MAD.
func ParsePMAClassPortInfo(mad []byte) (PMAClassPortInfo, error) {
	if len(mad) < PMADataOffset+8 {
		return PMAClassPortInfo{}, fmt.Errorf("%w: ClassPortInfo MAD of %d bytes", ErrMalformed, len(mad))
	}
	d := mad[PMADataOffset:]
	w := binary.BigEndian.Uint32(d[4:])
	return PMAClassPortInfo{
		BaseVersion:  d[0],
		ClassVersion: d[1],
		CapMask:      binary.BigEndian.Uint16(d[2:]),
		CapMask2:     w >> 5,
		RespTime:     uint8(w & 0x1f),
	}, nil
}

// PortCounters is the PerfMgt PortCounters attribute (IB spec 16.1.3.5).
type PortCounters struct {
	PortSelect                   uint8
	CounterSelect                uint16
	SymbolErrorCounter           uint16
	LinkErrorRecoveryCounter     uint8
	LinkDownedCounter            uint8
	PortRcvErrors                uint16
	PortRcvRemotePhysicalErrors  uint16
	PortRcvSwitchRelayErrors     uint16
	PortXmitDiscards             uint16
	PortXmitConstraintErrors     uint8
	PortRcvConstraintErrors      uint8
	CounterSelect2               uint8
	LocalLinkIntegrityErrors     uint8 // 4 bits
	ExcessiveBufferOverrunErrors uint8 // 4 bits
	QP1Dropped                   uint16
	VL15Dropped                  uint16
	PortXmitData                 uint32
	PortRcvData                  uint32
	PortXmitPkts                 uint32
	PortRcvPkts                  uint32
	PortXmitWait                 uint32
}

// fields is c's layout in the attribute area: byte 0 is reserved, and byte 19 holds the two 4-bit counters,
// which Parse and Put pack by hand.
func (c *PortCounters) fields() []beField {
	return []beField{
		{1, &c.PortSelect}, {2, &c.CounterSelect}, {4, &c.SymbolErrorCounter},
		{6, &c.LinkErrorRecoveryCounter}, {7, &c.LinkDownedCounter}, {8, &c.PortRcvErrors},
		{10, &c.PortRcvRemotePhysicalErrors}, {12, &c.PortRcvSwitchRelayErrors}, {14, &c.PortXmitDiscards},
		{16, &c.PortXmitConstraintErrors}, {17, &c.PortRcvConstraintErrors}, {18, &c.CounterSelect2},
		{20, &c.QP1Dropped}, {22, &c.VL15Dropped}, {24, &c.PortXmitData}, {28, &c.PortRcvData},
		{32, &c.PortXmitPkts}, {36, &c.PortRcvPkts}, {40, &c.PortXmitWait},
	}
}

// ParsePortCounters decodes PortCounters from a whole MAD.
func ParsePortCounters(mad []byte) (PortCounters, error) {
	if len(mad) < PMADataOffset+44 {
		return PortCounters{}, fmt.Errorf("%w: PortCounters MAD of %d bytes", ErrMalformed, len(mad))
	}
	d := mad[PMADataOffset:]
	var c PortCounters
	getBE(d, c.fields())
	c.LocalLinkIntegrityErrors, c.ExcessiveBufferOverrunErrors = d[19]>>4, d[19]&0xf
	return c, nil
}

// Put encodes c into the attribute area of a whole MAD.
func (c *PortCounters) Put(mad []byte) {
	d := mad[PMADataOffset : PMADataOffset+44]
	d[0] = 0
	putBE(d, c.fields())
	d[19] = c.LocalLinkIntegrityErrors<<4 | c.ExcessiveBufferOverrunErrors&0xf
}

// PortCountersExtended is the PerfMgt PortCountersExtended attribute
// (64-bit data and packet counters).
type PortCountersExtended struct {
	PortSelect            uint8
	CounterSelect         uint16
	CounterSelect2        uint32
	PortXmitData          uint64
	PortRcvData           uint64
	PortXmitPkts          uint64
	PortRcvPkts           uint64
	PortUnicastXmitPkts   uint64
	PortUnicastRcvPkts    uint64
	PortMulticastXmitPkts uint64
	PortMulticastRcvPkts  uint64
}

// fields is c's layout in the attribute area (byte 0 is reserved).
func (c *PortCountersExtended) fields() []beField {
	return []beField{
		{1, &c.PortSelect}, {2, &c.CounterSelect}, {4, &c.CounterSelect2},
		{8, &c.PortXmitData}, {16, &c.PortRcvData}, {24, &c.PortXmitPkts}, {32, &c.PortRcvPkts},
		{40, &c.PortUnicastXmitPkts}, {48, &c.PortUnicastRcvPkts},
		{56, &c.PortMulticastXmitPkts}, {64, &c.PortMulticastRcvPkts},
	}
}

// ParsePortCountersExtended decodes PortCountersExtended from a whole MAD.
func ParsePortCountersExtended(mad []byte) (PortCountersExtended, error) {
	if len(mad) < PMADataOffset+72 {
		return PortCountersExtended{}, fmt.Errorf("%w: PortCountersExtended MAD of %d bytes", ErrMalformed, len(mad))
	}
	var c PortCountersExtended
	getBE(mad[PMADataOffset:], c.fields())
	return c, nil
}

// Put encodes c into the attribute area of a whole MAD.
func (c *PortCountersExtended) Put(mad []byte) {
	d := mad[PMADataOffset : PMADataOffset+72]
	d[0] = 0
	putBE(d, c.fields())
}

// beField is one network-order field of a MAD attribute: its offset and a pointer to the *uint8, *uint16,
// *uint32 or *uint64 that holds it. A table of them is an attribute's layout, which decoding and encoding share.
type beField struct {
	off int
	p   any
}

// getBE decodes the fields from d.
func getBE(d []byte, fs []beField) {
	for _, f := range fs {
		switch p := f.p.(type) {
		case *uint8:
			*p = d[f.off]
		case *uint16:
			*p = binary.BigEndian.Uint16(d[f.off:])
		case *uint32:
			*p = binary.BigEndian.Uint32(d[f.off:])
		case *uint64:
			*p = binary.BigEndian.Uint64(d[f.off:])
		}
	}
}

// putBE encodes the fields into d.
func putBE(d []byte, fs []beField) {
	for _, f := range fs {
		switch p := f.p.(type) {
		case *uint8:
			d[f.off] = *p
		case *uint16:
			binary.BigEndian.PutUint16(d[f.off:], *p)
		case *uint32:
			binary.BigEndian.PutUint32(d[f.off:], *p)
		case *uint64:
			binary.BigEndian.PutUint64(d[f.off:], *p)
		}
	}
}

// String renders h for diagnostics.
func (h MADHdr) String() string {
	return fmt.Sprintf("class 0x%02x v%d method 0x%02x status 0x%04x tid 0x%016x attr 0x%04x mod 0x%08x",
		h.MgmtClass, h.ClassVersion, h.Method, h.Status, h.TID, h.AttrID, h.AttrMod)
}
