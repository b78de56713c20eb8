package devinfo

// This file is the data model ibv_devinfo prints, and the Source contract
// that fills it. Field names and C types follow rdma-core 65's struct
// ibv_device_attr_ex and struct ibv_port_attr; int32 fields are C "int" and
// are printed with %d exactly like the C tool (so a kernel value above 2^31
// prints negative there and here).
//
// Where each field comes from (what libibverbs 65 does):
//
//   - DeviceAttr: the EX_QUERY_DEVICE write command (IB_USER_VERBS_EX_CMD_QUERY_DEVICE,
//     struct ib_uverbs_ex_query_device_resp), tunnelled through
//     UVERBS_METHOD_INVOKE_WRITE, falling back to QUERY_DEVICE (struct
//     ib_uverbs_query_device_resp) on EOPNOTSUPP/ENOSYS. Only the first
//     response_length bytes of the ex response are valid; fields beyond it
//     stay 0. Mapping (resp field -> model field):
//     base.fw_ver (u64) -> FWVer, formatted by the provider: rxe and most
//     drivers "%d.%d.%d" of (fw>>32)&0xffff, (fw>>16)&0xffff, fw&0xffff;
//     mlx5 "%d.%d.%04d" of the same three. base.node_guid, base.sys_image_guid
//     (__be64) -> NodeGUID, SysImageGUID as numbers (big-endian decode).
//     base.max_mr_size, page_size_cap, vendor_id, vendor_part_id, hw_ver,
//     max_qp, max_qp_wr, device_cap_flags (low 32 bits; the ex response's
//     device_cap_flags_ex carries all 64 -> DeviceCapFlagsEx), max_sge,
//     max_sge_rd, max_cq, max_cqe, max_mr, max_pd, max_qp_rd_atom,
//     max_ee_rd_atom, max_res_rd_atom, max_qp_init_rd_atom,
//     max_ee_init_rd_atom, atomic_cap, max_ee, max_rdd, max_mw,
//     max_raw_ipv6_qp, max_raw_ethy_qp, max_mcast_grp, max_mcast_qp_attach,
//     max_total_mcast_qp_attach, max_ah, max_fmr, max_map_per_fmr, max_srq,
//     max_srq_wr, max_srq_sge, max_pkeys, local_ca_ack_delay, phys_port_cnt
//     -> the fields of the same names.
//     Ex part: odp_caps.general_caps -> ODPGeneralCaps;
//     odp_caps.per_transport_caps.{rc,uc,ud}_odp_caps -> RC/UC/UDODPCaps;
//     xrc_odp_caps -> XRCODPCaps; timestamp_mask -> CompletionTimestampMask;
//     hca_core_clock -> HCACoreClock; device_cap_flags_ex -> DeviceCapFlagsEx;
//     tso_caps -> TSO; rss_caps -> RSS; max_wq_type_rq -> MaxWQTypeRQ;
//     packet_pacing_caps -> PacketPacing; raw_packet_caps -> RawPacketCaps;
//     tm_caps -> TM (max_rndv_hdr_size, max_num_tags, flags, max_ops,
//     max_sge); cq_moderation_caps -> CQMod (max_cq_moderation_count,
//     max_cq_moderation_period); max_dm_size -> MaxDMSize.
//     rxe's provider adds nothing. mlx5's query_device_ex passes a driver
//     response (struct mlx5_ib_query_device_resp, when the context's
//     cmds_supp_uhw has MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE) and takes from
//     it TSO (max_tso, supported_qpts), RSS.RxHashFieldsMask and
//     RSS.RxHashFunction, and PacketPacing (qp_rate_limit_min/max,
//     supported_qpts); without them those lines print zeros on mlx5.
//   - NumCompVectors: num_comp_vectors of the GET_CONTEXT response (the ioctl
//     UVERBS_ATTR_GET_CONTEXT_NUM_COMP_VECTORS or the write response).
//   - PortAttr: UVERBS_METHOD_QUERY_PORT (struct ib_uverbs_query_port_resp_ex,
//     with port_cap_flags2), falling back to the QUERY_PORT write command
//     (PortCapFlags2 then 0). Fields map by name; link_layer is
//     IBV_LINK_LAYER_* (0 unspecified, 1 InfiniBand, 2 Ethernet);
//     active_speed_ex (after port_cap_flags2 and two reserved bytes; 0 from
//     kernels that predate it) -> ActiveSpeedEx.
//   - Port.EffectiveSpeed: UVERBS_METHOD_QUERY_PORT_SPEED (a recent kernel
//     method), which only the mlx5 and efa providers issue; the others fail
//     with EOPNOTSUPP.
//   - CompCntr: UVERBS_METHOD_QUERY_COMP_CNTR_CAPS, issued by the efa
//     provider only (EOPNOTSUPP elsewhere, so nil on every device goverbs
//     opens).
//   - GIDs: UVERBS_METHOD_QUERY_GID_TABLE (struct ib_uverbs_gid_entry: gid,
//     gid_index, port_num, gid_type, netdev_ifindex) with max_entries =
//     the largest gid_tbl_len, or per index UVERBS_METHOD_QUERY_GID_ENTRY
//     (ENODATA = empty entry), or on kernels without either, sysfs
//     ports/N/gids/I and ports/N/gid_attrs/types/I ("IB/RoCE v1" -> 1 when
//     the port is Ethernet else 0, "RoCE v2" -> 2). Only non-empty entries
//     need to be listed.
//   - BoardID: sysfs <ibdev>/board_id read like ibv_read_sysfs_file (256
//     bytes; see ReadBoardID).
//   - Name and Transport: the device list (Devices).

// DeviceID is one device of the list, as ibv_get_device_list returns it.
type DeviceID struct {
	// Name is ibv_get_device_name ("rxe0").
	Name string
	// Transport is ibv_device.transport_type (enum ibv_transport_type),
	// derived from the node type: CA/switch/router 0 (InfiniBand), RNIC 1
	// (iWARP), usNIC 2, usNIC UDP 3, unspecified 4, else -1.
	Transport int
	// Path is the device's sysfs directory
	// (/sys/class/infiniband/<name>), for Source implementations.
	Path string
}

// ODP capability bits.
const (
	ODPSupport         = 1 << 0 // IBV_ODP_SUPPORT
	ODPSupportImplicit = 1 << 1 // IBV_ODP_SUPPORT_IMPLICIT

	ODPSupportSend    = 1 << 0 // IBV_ODP_SUPPORT_SEND
	ODPSupportRecv    = 1 << 1
	ODPSupportWrite   = 1 << 2
	ODPSupportRead    = 1 << 3
	ODPSupportAtomic  = 1 << 4
	ODPSupportSRQRecv = 1 << 5
	// Since rdma-core 58.
	ODPSupportFlush       = 1 << 6 // IBV_ODP_SUPPORT_FLUSH
	ODPSupportAtomicWrite = 1 << 7 // IBV_ODP_SUPPORT_ATOMIC_WRITE
)

// TSOCaps is struct ibv_tso_caps.
type TSOCaps struct {
	MaxTSO        uint32
	SupportedQPTs uint32 // bit (1 << enum ibv_qp_type)
}

// RSSCaps is struct ibv_rss_caps.
type RSSCaps struct {
	SupportedQPTs              uint32
	MaxRWQIndirectionTables    uint32
	MaxRWQIndirectionTableSize uint32
	RxHashFieldsMask           uint64
	RxHashFunction             uint8
}

// PacketPacingCaps is struct ibv_packet_pacing_caps.
type PacketPacingCaps struct {
	QPRateLimitMin uint32 // kbps
	QPRateLimitMax uint32 // kbps
	SupportedQPTs  uint32
}

// TMCaps is struct ibv_tm_caps.
type TMCaps struct {
	MaxRndvHdrSize uint32
	MaxNumTags     uint32
	Flags          uint32 // IBV_TM_CAP_RC = 1
	MaxOps         uint32
	MaxSGE         uint32
}

// CQModerationCaps is struct ibv_cq_moderation_caps.
type CQModerationCaps struct {
	MaxCQCount  uint16
	MaxCQPeriod uint16 // microseconds
}

// DeviceAttr is struct ibv_device_attr_ex (with its orig_attr flattened).
type DeviceAttr struct {
	FWVer                   string // provider-formatted, "" = not printed
	NodeGUID                uint64
	SysImageGUID            uint64
	MaxMRSize               uint64
	PageSizeCap             uint64
	VendorID                uint32
	VendorPartID            uint32
	HWVer                   uint32
	MaxQP                   int32
	MaxQPWR                 int32
	DeviceCapFlags          uint32 // enum ibv_device_cap_flags (low 32 bits)
	MaxSGE                  int32
	MaxSGERd                int32
	MaxCQ                   int32
	MaxCQE                  int32
	MaxMR                   int32
	MaxPD                   int32
	MaxQPRdAtom             int32
	MaxEERdAtom             int32
	MaxResRdAtom            int32
	MaxQPInitRdAtom         int32
	MaxEEInitRdAtom         int32
	AtomicCap               int32 // enum ibv_atomic_cap: 0 none, 1 HCA, 2 global
	MaxEE                   int32
	MaxRDD                  int32
	MaxMW                   int32
	MaxRawIPv6QP            int32
	MaxRawEthyQP            int32
	MaxMcastGrp             int32
	MaxMcastQPAttach        int32
	MaxTotalMcastQPAttach   int32
	MaxAH                   int32
	MaxFMR                  int32
	MaxMapPerFMR            int32
	MaxSRQ                  int32
	MaxSRQWR                int32
	MaxSRQSGE               int32
	MaxPkeys                uint16
	LocalCAAckDelay         uint8
	PhysPortCnt             uint8
	ODPGeneralCaps          uint64
	RCODPCaps               uint32
	UCODPCaps               uint32
	UDODPCaps               uint32
	XRCODPCaps              uint32
	CompletionTimestampMask uint64
	HCACoreClock            uint64 // kHz
	DeviceCapFlagsEx        uint64
	TSO                     TSOCaps
	RSS                     RSSCaps
	MaxWQTypeRQ             uint32
	PacketPacing            PacketPacingCaps
	RawPacketCaps           uint32 // enum ibv_raw_packet_caps
	TM                      TMCaps
	CQMod                   CQModerationCaps
	MaxDMSize               uint64
}

// PortAttr is struct ibv_port_attr.
type PortAttr struct {
	State         int32 // enum ibv_port_state: 1 down .. 4 active
	MaxMTU        int32 // enum ibv_mtu: 1 = 256 .. 5 = 4096
	ActiveMTU     int32
	GIDTblLen     int32
	PortCapFlags  uint32
	MaxMsgSz      uint32
	BadPkeyCntr   uint32
	QkeyViolCntr  uint32
	PkeyTblLen    uint16
	LID           uint16
	SMLID         uint16
	LMC           uint8
	MaxVLNum      uint8
	SMSL          uint8
	SubnetTimeout uint8
	InitTypeReply uint8
	ActiveWidth   uint8
	ActiveSpeed   uint8
	PhysState     uint8
	LinkLayer     uint8 // 0 unspecified, 1 InfiniBand, 2 Ethernet
	Flags         uint8
	PortCapFlags2 uint16
	// ActiveSpeedEx is the port's speed as a 32-bit value (rdma-core 49+;
	// 0 when the kernel does not report it), which ibv_devinfo
	// prints instead of ActiveSpeed when it is not 0 (XDR is 256).
	ActiveSpeedEx uint32
}

// Link layers (IBV_LINK_LAYER_*).
const (
	LinkLayerUnspecified = 0
	LinkLayerInfiniBand  = 1
	LinkLayerEthernet    = 2
)

// GIDType is the kernel's GID type (enum ibv_gid_type / IB_UVERBS_GID_TYPE_*).
type GIDType uint8

// GID types. GIDTypeUnknown records that the type query failed, which makes
// ibv_devinfo skip the entry.
const (
	GIDTypeIB      GIDType = 0
	GIDTypeRoCEv1  GIDType = 1
	GIDTypeRoCEv2  GIDType = 2
	GIDTypeUnknown GIDType = 0xff
)

// GIDEntry is one non-empty GID table entry.
type GIDEntry struct {
	Index int
	GID   [16]byte
	Type  GIDType
}

// GIDFailure records that querying GID Index failed; ibv_devinfo -v prints
// the entries before it, an error, and stops.
type GIDFailure struct {
	Index int
	Err   error
}

// Port is one port's query results.
type Port struct {
	// Err is the ibv_query_port failure (wrapping a unix.Errno, which
	// becomes the exit status), or nil.
	Err  error
	Attr PortAttr
	// GIDs lists the non-empty entries in index order; absent indexes are
	// empty (all zero) entries.
	GIDs []GIDEntry
	// GIDFailure, if set, is the first index whose query failed.
	GIDFailure *GIDFailure
	// EffectiveSpeed is ibv_query_port_speed's answer, the port's
	// effective bandwidth in units of 100 Mb/s (rdma-core 65), or nil when
	// the verb fails (on rxe it always does: only mlx5 and efa implement
	// it); ibv_devinfo -v prints it as effective_speed.
	EffectiveSpeed *uint64
}

// CompCntrCaps is struct ibv_comp_cntr_caps (rdma-core 65's completion
// counters), as much of it as ibv_devinfo prints.
type CompCntrCaps struct {
	MaxCounters          uint32
	SupportedQPAttachOps uint32 // enum ibv_qp_attach_comp_cntr_op bits
}

// Model is everything ibv_devinfo prints for one device.
type Model struct {
	Name           string
	Transport      int
	BoardID        string // "" = no board_id line
	Attr           DeviceAttr
	NumCompVectors int32
	// Ports[i] is port i+1; there must be Attr.PhysPortCnt entries.
	Ports []Port
	// CompCntr is ibv_query_comp_cntr_caps' answer, nil when it fails (in
	// rdma-core 65 only the efa provider implements it).
	CompCntr *CompCntrCaps
	// CloseErr is a failure to close the device after querying it.
	CloseErr error
}

// QueryStage says which step of Source.Query failed.
type QueryStage int

// Stages of Query, which ibv_devinfo reports differently.
const (
	StageOpen        QueryStage = 1 // "Failed to open device", status 1
	StageQueryDevice QueryStage = 2 // "Failed to query device props", status 2
)

// QueryError is the error Source.Query returns when a device cannot be
// opened or queried. A failure to close after a failed query is CloseErr.
type QueryError struct {
	Stage    QueryStage
	Err      error
	CloseErr error
}

func (e *QueryError) Error() string {
	op := "open device"
	if e.Stage == StageQueryDevice {
		op = "query device"
	}
	return op + ": " + e.Err.Error()
}

func (e *QueryError) Unwrap() error { return e.Err }

// Source provides the device list and the per-device query results.
// UverbsSource is the real system; SysfsSource lists a (fake) sysfs tree
// without opening devices; tests supply fixed Models.
type Source interface {
	// Devices is ibv_get_device_list. Errors must wrap a unix.Errno (it is
	// printed like perror: "Failed to get IB devices list: <strerror>").
	Devices() ([]DeviceID, error)
	// Query opens dev, queries device, ports and GID tables, and closes
	// it. A failure to open or to query the device is a *QueryError (any
	// other error counts as a failure to open); port and GID failures are
	// recorded in the Model.
	Query(dev DeviceID) (*Model, error)
}
