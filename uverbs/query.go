package uverbs

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/enumstr"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

// DeviceAttr are a device's attributes and limits (struct ibv_device_attr_ex), from the kernel's extended
// QUERY_DEVICE. GUIDs are in host order.
type DeviceAttr struct {
	FWVer                      uint64 // raw firmware version number; the printable version is in sysfs (FWVersion)
	NodeGUID                   GUID
	SysImageGUID               GUID
	MaxMRSize                  uint64
	PageSizeCap                uint64
	VendorID                   uint32
	VendorPartID               uint32
	HWVer                      uint32
	MaxQP                      uint32
	MaxQPWR                    uint32
	DeviceCapFlags             DeviceCap // the low 32 bits from the base response, all 64 from device_cap_flags_ex
	MaxSGE                     uint32
	MaxSGERD                   uint32
	MaxCQ                      uint32
	MaxCQE                     uint32
	MaxMR                      uint32
	MaxPD                      uint32
	MaxQPRdAtom                uint32
	MaxEERdAtom                uint32
	MaxResRdAtom               uint32
	MaxQPInitRdAtom            uint32
	MaxEEInitRdAtom            uint32
	AtomicCap                  uint32 // 0 none, 1 HCA, 2 global
	MaxEE                      uint32
	MaxRDD                     uint32
	MaxMW                      uint32
	MaxRawIPv6QP               uint32
	MaxRawEthyQP               uint32
	MaxMcastGrp                uint32
	MaxMcastQPAttach           uint32
	MaxTotalMcastQPAttach      uint32
	MaxAH                      uint32
	MaxFMR                     uint32
	MaxMapPerFMR               uint32
	MaxSRQ                     uint32
	MaxSRQWR                   uint32
	MaxSRQSGE                  uint32
	MaxPKeys                   uint16
	LocalCAAckDelay            uint8
	PhysPortCnt                uint8
	ODPGeneralCaps             ODPGeneralCap   // on-demand paging: ODPSupport, ODPSupportImplicit (see ODP)
	ODPRCCaps                  ODPTransportCap // the RC operations that may use ODP MRs
	ODPUCCaps                  ODPTransportCap
	ODPUDCaps                  ODPTransportCap
	XRCODPCaps                 ODPTransportCap
	TimestampMask              uint64
	HCACoreClock               uint64 // kHz
	RSSSupportedQPTs           uint32
	MaxRWQIndirectionTables    uint32
	MaxRWQIndirectionTableSize uint32
	MaxWQTypeRQ                uint32
	RawPacketCaps              uint32
	TMMaxRndvHdrSize           uint32
	TMMaxNumTags               uint32
	TMFlags                    uint32
	TMMaxOps                   uint32
	TMMaxSGE                   uint32
	MaxCQCount                 uint16 // CQ moderation
	MaxCQPeriod                uint16
	MaxDMSize                  uint64
	// Raw is the kernel's response as received; only the first ResponseLength bytes were written by it.
	Raw            abi.IbUverbsExQueryDeviceResp
	ResponseLength uint32
}

// QueryDevice returns the device's attributes (ibv_query_device_ex), through the extended QUERY_DEVICE command
// tunnelled over INVOKE_WRITE, as rdma-core does.
func (c *Context) QueryDevice() (*DeviceAttr, error) {
	in := new(abi.IbUverbsExQueryDevice)
	out := new(abi.IbUverbsExQueryDeviceResp)
	err := c.write(&rawcmd.Write{
		Cmd:     abi.IB_USER_VERBS_EX_CMD_QUERY_DEVICE | abi.IB_USER_VERBS_CMD_FLAG_EXTENDED,
		CoreIn:  rawcmd.Bytes(in),
		CoreOut: rawcmd.Bytes(out),
	})
	if err != nil {
		return nil, wrap("query device", c.dev.Name, err)
	}
	b := &out.Base
	a := &DeviceAttr{
		FWVer: b.FwVer, NodeGUID: GUID(beToHost64(b.NodeGuid)), SysImageGUID: GUID(beToHost64(b.SysImageGuid)),
		MaxMRSize: b.MaxMrSize, PageSizeCap: b.PageSizeCap, VendorID: b.VendorId, VendorPartID: b.VendorPartId,
		HWVer: b.HwVer, MaxQP: b.MaxQp, MaxQPWR: b.MaxQpWr, DeviceCapFlags: DeviceCap(b.DeviceCapFlags),
		MaxSGE: b.MaxSge, MaxSGERD: b.MaxSgeRd, MaxCQ: b.MaxCq, MaxCQE: b.MaxCqe, MaxMR: b.MaxMr, MaxPD: b.MaxPd,
		MaxQPRdAtom: b.MaxQpRdAtom, MaxEERdAtom: b.MaxEeRdAtom, MaxResRdAtom: b.MaxResRdAtom,
		MaxQPInitRdAtom: b.MaxQpInitRdAtom, MaxEEInitRdAtom: b.MaxEeInitRdAtom, AtomicCap: b.AtomicCap,
		MaxEE: b.MaxEe, MaxRDD: b.MaxRdd, MaxMW: b.MaxMw, MaxRawIPv6QP: b.MaxRawIpv6Qp,
		MaxRawEthyQP: b.MaxRawEthyQp, MaxMcastGrp: b.MaxMcastGrp, MaxMcastQPAttach: b.MaxMcastQpAttach,
		MaxTotalMcastQPAttach: b.MaxTotalMcastQpAttach, MaxAH: b.MaxAh, MaxFMR: b.MaxFmr,
		MaxMapPerFMR: b.MaxMapPerFmr, MaxSRQ: b.MaxSrq, MaxSRQWR: b.MaxSrqWr, MaxSRQSGE: b.MaxSrqSge,
		MaxPKeys: b.MaxPkeys, LocalCAAckDelay: b.LocalCaAckDelay, PhysPortCnt: b.PhysPortCnt,
		ResponseLength: out.ResponseLength, Raw: *out,
	}
	// Only the fields inside response_length were written by the kernel (rdma-core's CAN_COPY rule).
	has := func(off, size uintptr) bool { return uintptr(out.ResponseLength) >= off+size }
	if has(unsafe.Offsetof(out.OdpCaps), unsafe.Sizeof(out.OdpCaps)) {
		a.ODPGeneralCaps = ODPGeneralCap(out.OdpCaps.GeneralCaps)
		a.ODPRCCaps = ODPTransportCap(out.OdpCaps.PerTransportCaps.RcOdpCaps)
		a.ODPUCCaps = ODPTransportCap(out.OdpCaps.PerTransportCaps.UcOdpCaps)
		a.ODPUDCaps = ODPTransportCap(out.OdpCaps.PerTransportCaps.UdOdpCaps)
	}
	if has(unsafe.Offsetof(out.TimestampMask), 8) {
		a.TimestampMask = out.TimestampMask
	}
	if has(unsafe.Offsetof(out.HcaCoreClock), 8) {
		a.HCACoreClock = out.HcaCoreClock
	}
	if has(unsafe.Offsetof(out.DeviceCapFlagsEx), 8) {
		a.DeviceCapFlags = DeviceCap(out.DeviceCapFlagsEx)
	}
	if has(unsafe.Offsetof(out.RssCaps), unsafe.Sizeof(out.RssCaps)) {
		a.RSSSupportedQPTs = out.RssCaps.SupportedQpts
		a.MaxRWQIndirectionTables = out.RssCaps.MaxRwqIndirectionTables
		a.MaxRWQIndirectionTableSize = out.RssCaps.MaxRwqIndirectionTableSize
	}
	if has(unsafe.Offsetof(out.MaxWqTypeRq), 4) {
		a.MaxWQTypeRQ = out.MaxWqTypeRq
	}
	if has(unsafe.Offsetof(out.RawPacketCaps), 4) {
		a.RawPacketCaps = out.RawPacketCaps
	}
	if has(unsafe.Offsetof(out.TmCaps), unsafe.Sizeof(out.TmCaps)) {
		a.TMMaxRndvHdrSize = out.TmCaps.MaxRndvHdrSize
		a.TMMaxNumTags = out.TmCaps.MaxNumTags
		a.TMFlags = out.TmCaps.Flags
		a.TMMaxOps = out.TmCaps.MaxOps
		a.TMMaxSGE = out.TmCaps.MaxSge
	}
	if has(unsafe.Offsetof(out.CqModerationCaps), unsafe.Sizeof(out.CqModerationCaps)) {
		a.MaxCQCount = out.CqModerationCaps.MaxCqModerationCount
		a.MaxCQPeriod = out.CqModerationCaps.MaxCqModerationPeriod
	}
	if has(unsafe.Offsetof(out.MaxDmSize), 8) {
		a.MaxDMSize = out.MaxDmSize
	}
	if has(unsafe.Offsetof(out.XrcOdpCaps), 4) {
		a.XRCODPCaps = ODPTransportCap(out.XrcOdpCaps)
	}
	return a, nil
}

// FWVersion is the device's printable firmware version (sysfs fw_ver; empty when the device has none).
func (c *Context) FWVersion() string {
	s, _ := readSysfsString(filepath.Join(c.dev.SysfsPath(), "fw_ver"))
	return s
}

// PortState is a port's logical state (IBV_PORT_*); PortPhysState its physical state. They are verbs' (and
// netlinkrdma's) types.
type (
	PortState     = verbs.PortState
	PortPhysState = verbs.PortPhysState
)

// Port states.
const (
	PortNOP         = verbs.PortNOP
	PortDown        = verbs.PortDown
	PortInit        = verbs.PortInit
	PortArmed       = verbs.PortArmed
	PortActive      = verbs.PortActive
	PortActiveDefer = verbs.PortActiveDefer
)

// MTU is an IB MTU enum value (1 = 256 ... 5 = 4096).
type MTU uint8

// MTUs.
const (
	MTU256  MTU = 1
	MTU512  MTU = 2
	MTU1024 MTU = 3
	MTU2048 MTU = 4
	MTU4096 MTU = 5
)

// Bytes is the MTU in bytes (0 for an invalid value).
func (m MTU) Bytes() int {
	if m < MTU256 || m > MTU4096 {
		return 0
	}
	return 128 << m
}

// MTUFromBytes converts 256..4096 to the enum; 0 for other values.
func MTUFromBytes(n int) MTU {
	for m := MTU256; m <= MTU4096; m++ {
		if m.Bytes() == n {
			return m
		}
	}
	return 0
}

// LinkLayer is a port's link layer (enum ibv_link_layer).
type LinkLayer uint8

// Link layers.
const (
	LinkLayerUnspecified LinkLayer = 0
	LinkLayerInfiniBand  LinkLayer = 1
	LinkLayerEthernet    LinkLayer = 2
)

var linkLayerNames = [...]string{"UNSPECIFIED", "INFINIBAND", "ETHERNET"}

// String is the link layer's name ("ETHERNET"); ibv_devinfo's "Ethernet" is the tools' text.
func (l LinkLayer) String() string { return enumstr.Name(linkLayerNames[:], uint64(l), "LinkLayer") }

// PortAttr are a port's attributes (struct ibv_port_attr).
type PortAttr struct {
	State         PortState
	MaxMTU        MTU
	ActiveMTU     MTU
	GIDTblLen     int
	PortCapFlags  uint32
	MaxMsgSz      uint32
	BadPKeyCntr   uint32
	QKeyViolCntr  uint32
	PKeyTblLen    uint16
	LID           uint16
	SMLID         uint16
	LMC           uint8
	MaxVLNum      uint8
	SMSL          uint8
	SubnetTimeout uint8
	InitTypeReply uint8
	ActiveWidth   uint8
	ActiveSpeed   uint8
	PhysState     PortPhysState
	LinkLayer     LinkLayer
	Flags         uint8
	PortCapFlags2 uint16
	// ActiveSpeedEx is the port's speed as the 32-bit IB_SPEED_* value (ibv_port_attr.active_speed_ex,
	// rdma-core 65; needed from XDR on, where ActiveSpeed's 8 bits no longer hold it); 0 from kernels whose
	// QUERY_PORT does not report it.
	ActiveSpeedEx uint32
}

// QueryPort returns the attributes of port (1-based), through the QUERY_PORT ioctl.
func (c *Context) QueryPort(port int) (*PortAttr, error) {
	if port < 1 || port > 255 {
		return nil, wrapf(c.dev.Name, unix.EINVAL, "query port %d", port)
	}
	resp := new(abi.IbUverbsQueryPortRespEx)
	cmd := c.newCmd(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT)
	cmd.ConstIn(abi.UVERBS_ATTR_QUERY_PORT_PORT_NUM, uint64(port))
	cmd.PtrOut(abi.UVERBS_ATTR_QUERY_PORT_RESP, ptr(resp), int(unsafe.Sizeof(*resp)))
	if err := cmd.Invoke(c.fd); err != nil {
		return nil, wrapf(c.dev.Name, err, "query port %d", port)
	}
	r := &resp.LegacyResp
	return &PortAttr{
		State: PortState(r.State), MaxMTU: MTU(r.MaxMtu), ActiveMTU: MTU(r.ActiveMtu), GIDTblLen: int(r.GidTblLen),
		PortCapFlags: r.PortCapFlags, MaxMsgSz: r.MaxMsgSz, BadPKeyCntr: r.BadPkeyCntr,
		QKeyViolCntr: r.QkeyViolCntr, PKeyTblLen: r.PkeyTblLen, LID: r.Lid, SMLID: r.SmLid, LMC: r.Lmc,
		MaxVLNum: r.MaxVlNum, SMSL: r.SmSl, SubnetTimeout: r.SubnetTimeout, InitTypeReply: r.InitTypeReply,
		ActiveWidth: r.ActiveWidth, ActiveSpeed: r.ActiveSpeed, PhysState: PortPhysState(r.PhysState), LinkLayer: LinkLayer(r.LinkLayer),
		Flags: r.Flags, PortCapFlags2: resp.PortCapFlags2,
		// rdma-core 65's header: port_cap_flags2, reserved[2], active_speed_ex, in what the generated (older)
		// header calls reserved[6]; kernels before it zero those bytes.
		ActiveSpeedEx: binary.NativeEndian.Uint32(resp.Reserved[2:6]),
	}, nil
}

// Kernel ABI of UVERBS_METHOD_QUERY_PORT_SPEED (Linux 6.19; rdma-core 65's headers, newer than the ones the abi
// package is generated from).
const (
	methodQueryPortSpeed   = abi.UVERBS_METHOD_QUERY_GID_ENTRY + 1
	attrQueryPortSpeedPort = 0
	attrQueryPortSpeedResp = 1
)

// QueryPortSpeed returns the effective bandwidth of port in units of 100 Mb/s (ibv_query_port_speed; ibv_devinfo
// prints it as Gb/s), through the kernel's QUERY_PORT_SPEED method. The kernel answers for drivers that report
// it (mlx5, efa); elsewhere, and on kernels without the method, it fails with an error matching ErrNotSupported.
// rdma-core 65's providers other than mlx5 and efa refuse without asking the kernel, as goverbs' rxe provider
// does (EOPNOTSUPP, as libibverbs).
func (c *Context) QueryPortSpeed(port int) (uint64, error) {
	if port < 1 || port > 255 {
		return 0, wrapf(c.dev.Name, unix.EINVAL, "query port %d speed", port)
	}
	if s, ok := c.prov.(provider.PortSpeedQuerier); !ok || !s.QueriesPortSpeed() {
		return 0, wrapf(c.dev.Name, unix.EOPNOTSUPP, "query port %d speed (the %v provider has none)", port, c.dev.DriverID)
	}
	var speed uint64
	cmd := c.newCmd(abi.UVERBS_OBJECT_DEVICE, methodQueryPortSpeed)
	cmd.ConstIn(attrQueryPortSpeedPort, uint64(uint32(port)))
	cmd.PtrOut(attrQueryPortSpeedResp, ptr(&speed), 8)
	if err := cmd.Invoke(c.fd); err != nil {
		return 0, wrapf(c.dev.Name, err, "query port %d speed", port)
	}
	return speed, nil
}

// GID is a 128-bit GID.
type GID [16]byte

// String formats the GID as rdma-core does ("fe80:0000:0000:0000:...": eight groups of four hex digits).
func (g GID) String() string {
	var sb strings.Builder
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		fmt.Fprintf(&sb, "%02x%02x", g[i], g[i+1])
	}
	return sb.String()
}

// IsZero reports an all-zero (unused) GID.
func (g GID) IsZero() bool { return g == GID{} }

// Addr is the GID as an IPv6 address (an IPv4-mapped address for RoCE v2 IPv4 GIDs).
func (g GID) Addr() netip.Addr { return netip.AddrFrom16(g) }

// GIDType is the type of a GID table entry.
type GIDType uint32

// GID types (IB_UVERBS_GID_TYPE_*).
const (
	GIDTypeIB     GIDType = 0
	GIDTypeRoCEv1 GIDType = 1
	GIDTypeRoCEv2 GIDType = 2
)

func (t GIDType) String() string {
	switch t {
	case GIDTypeIB:
		return "IB"
	case GIDTypeRoCEv1:
		return "RoCE v1"
	case GIDTypeRoCEv2:
		return "RoCE v2"
	}
	return fmt.Sprintf("gid-type(%d)", uint32(t))
}

// GIDEntry is one valid entry of a port's GID table.
type GIDEntry struct {
	GID           GID
	Index         int
	Port          int
	Type          GIDType
	NetdevIfindex int // 0 when no netdev is associated
}

// QueryGIDTable returns every valid GID entry of every port (ibv_query_gid_table), through the
// QUERY_GID_TABLE ioctl.
func (c *Context) QueryGIDTable() ([]GIDEntry, error) {
	var max int
	for p := 1; p <= int(c.dev.NumPorts) || (c.dev.NumPorts == 0 && p == 1); p++ {
		pa, err := c.QueryPort(p)
		if err != nil {
			return nil, wrap("query GID table", c.dev.Name, err)
		}
		max += pa.GIDTblLen
	}
	if max == 0 {
		return nil, nil
	}
	entries := make([]abi.IbUverbsGidEntry, max)
	num := new(uint64)
	cmd := c.newCmd(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_TABLE)
	cmd.ConstIn(abi.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, uint64(unsafe.Sizeof(entries[0])))
	cmd.U32In(abi.UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, 0)
	cmd.PtrOut(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, unsafe.Pointer(&entries[0]), len(entries)*int(unsafe.Sizeof(entries[0])))
	cmd.PtrOut(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, ptr(num), 8)
	if err := cmd.Invoke(c.fd); err != nil {
		return nil, wrap("query GID table", c.dev.Name, err)
	}
	out := make([]GIDEntry, 0, *num)
	for _, e := range entries[:*num] {
		out = append(out, gidEntry(&e))
	}
	return out, nil
}

// QueryGID returns one GID table entry (ibv_query_gid_ex), through the QUERY_GID_ENTRY ioctl. An empty entry
// is the kernel's ENODATA.
func (c *Context) QueryGID(port, index int) (GIDEntry, error) {
	e := new(abi.IbUverbsGidEntry)
	cmd := c.newCmd(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_ENTRY)
	cmd.ConstIn(abi.UVERBS_ATTR_QUERY_GID_ENTRY_PORT, uint64(port))
	cmd.ConstIn(abi.UVERBS_ATTR_QUERY_GID_ENTRY_GID_INDEX, uint64(index))
	cmd.U32In(abi.UVERBS_ATTR_QUERY_GID_ENTRY_FLAGS, 0)
	cmd.PtrOut(abi.UVERBS_ATTR_QUERY_GID_ENTRY_RESP_ENTRY, ptr(e), int(unsafe.Sizeof(*e)))
	if err := cmd.Invoke(c.fd); err != nil {
		return GIDEntry{}, wrapf(c.dev.Name, err, "query GID %d of port %d", index, port)
	}
	return gidEntry(e), nil
}

func gidEntry(e *abi.IbUverbsGidEntry) GIDEntry {
	var g GID
	// The GID travels as two __aligned_u64 holding the raw 16 bytes in network order.
	binary.NativeEndian.PutUint64(g[0:8], e.Gid[0])
	binary.NativeEndian.PutUint64(g[8:16], e.Gid[1])
	return GIDEntry{GID: g, Index: int(e.GidIndex), Port: int(e.PortNum), Type: GIDType(e.GidType),
		NetdevIfindex: int(e.NetdevIfindex)}
}

// QueryPKey returns entry index of port's P_Key table (ibv_query_pkey), read from sysfs as rdma-core does.
func (c *Context) QueryPKey(port, index int) (uint16, error) {
	p := filepath.Join(c.dev.SysfsPath(), "ports", strconv.Itoa(port), "pkeys", strconv.Itoa(index))
	s, err := readSysfsString(p)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, wrapf(c.dev.Name, unix.EINVAL, "query pkey %d of port %d", index, port)
		}
		return 0, wrapf(c.dev.Name, err, "query pkey %d of port %d", index, port)
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 16)
	if err != nil {
		return 0, wrapf(c.dev.Name, err, "query pkey %d of port %d: parse %q", index, port, s)
	}
	return uint16(v), nil
}

func beToHost64(v uint64) uint64 {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	return binary.BigEndian.Uint64(b[:])
}
