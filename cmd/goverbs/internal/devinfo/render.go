package devinfo

import (
	"fmt"
	"io"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
)

func transportStr(t int) string {
	switch t {
	case 0:
		return "InfiniBand"
	case 1:
		return "iWARP"
	case 2:
		return "usNIC"
	case 3:
		return "usNIC UDP"
	case 4:
		return "unspecified"
	}
	return "invalid transport"
}

func portStateStr(s int32) string {
	switch s {
	case 1:
		return "PORT_DOWN"
	case 2:
		return "PORT_INIT"
	case 3:
		return "PORT_ARMED"
	case 4:
		return "PORT_ACTIVE"
	}
	return "invalid state"
}

func portPhyStateStr(s uint8) string {
	switch s {
	case 1:
		return "SLEEP"
	case 2:
		return "POLLING"
	case 3:
		return "DISABLED"
	case 4:
		return "PORT_CONFIGURATION TRAINNING"
	case 5:
		return "LINK_UP"
	case 6:
		return "LINK_ERROR_RECOVERY"
	case 7:
		return "PHY TEST"
	}
	return "invalid physical state"
}

func atomicCapStr(a int32) string {
	switch a {
	case 0:
		return "ATOMIC_NONE"
	case 1:
		return "ATOMIC_HCA"
	case 2:
		return "ATOMIC_GLOB"
	}
	return "invalid atomic capability"
}

func mtuStr(m int32) string {
	switch m {
	case 1:
		return "256"
	case 2:
		return "512"
	case 3:
		return "1024"
	case 4:
		return "2048"
	case 5:
		return "4096"
	}
	return "invalid MTU"
}

func widthStr(w uint8) string {
	switch w {
	case 1:
		return "1"
	case 2:
		return "4"
	case 4:
		return "8"
	case 8:
		return "12"
	case 16:
		return "2"
	}
	return "invalid width"
}

func speedStr(s uint32) string {
	switch s {
	case 1:
		return "2.5 Gbps"
	case 2:
		return "5.0 Gbps"
	case 4, 8:
		return "10.0 Gbps"
	case 16:
		return "14.0 Gbps"
	case 32:
		return "25.0 Gbps"
	case 64:
		return "50.0 Gbps"
	case 128:
		return "100.0 Gbps"
	case 256:
		return "200.0 Gbps"
	}
	return "invalid speed"
}

func vlStr(v uint8) string {
	switch v {
	case 1:
		return "1"
	case 2:
		return "2"
	case 3:
		return "4"
	case 4:
		return "8"
	case 5:
		return "15"
	}
	return "invalid value"
}

func linkLayerStr(l uint8) string {
	switch l {
	case LinkLayerUnspecified:
		return "Unspecified"
	case LinkLayerInfiniBand:
		return "InfiniBand"
	case LinkLayerEthernet:
		return "Ethernet"
	}
	return "Unknown"
}

func guidStr(g uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48&0xffff, g>>32&0xffff, g>>16&0xffff, g&0xffff)
}

// flagName is one named bit of a capability mask.
type flagName struct {
	bit  uint64
	name string
}

var deviceCapFlags = []flagName{
	{1 << 0, "RESIZE_MAX_WR"}, {1 << 1, "BAD_PKEY_CNTR"}, {1 << 2, "BAD_QKEY_CNTR"},
	{1 << 3, "RAW_MULTI"}, {1 << 4, "AUTO_PATH_MIG"}, {1 << 5, "CHANGE_PHY_PORT"},
	{1 << 6, "UD_AV_PORT_ENFORCE"}, {1 << 7, "CURR_QP_STATE_MOD"}, {1 << 8, "SHUTDOWN_PORT"},
	{1 << 9, "INIT_TYPE"}, {1 << 10, "PORT_ACTIVE_EVENT"}, {1 << 11, "SYS_IMAGE_GUID"},
	{1 << 12, "RC_RNR_NAK_GEN"}, {1 << 13, "SRQ_RESIZE"}, {1 << 14, "N_NOTIFY_CQ"},
	{1 << 17, "MEM_WINDOW"}, {1 << 18, "UD_IP_CSUM"}, {1 << 20, "XRC"},
	{1 << 21, "MEM_MGT_EXTENSIONS"}, {1 << 23, "MEM_WINDOW_TYPE_2A"}, {1 << 24, "MEM_WINDOW_TYPE_2B"},
	{1 << 25, "RC_IP_CSUM"}, {1 << 26, "RAW_IP_CSUM"}, {1 << 29, "MANAGED_FLOW_STEERING"},
}

var odpTransCaps = []flagName{
	{ODPSupportSend, "SUPPORT_SEND"}, {ODPSupportRecv, "SUPPORT_RECV"}, {ODPSupportWrite, "SUPPORT_WRITE"},
	{ODPSupportRead, "SUPPORT_READ"}, {ODPSupportAtomic, "SUPPORT_ATOMIC"}, {ODPSupportSRQRecv, "SUPPORT_SRQ"},
	{ODPSupportFlush, "SUPPORT_FLUSH"}, {ODPSupportAtomicWrite, "SUPPORT_ATOMIC_WRITE"},
}

const (
	flagIndent = "\t\t\t\t\t"
	qptRC      = 2 // IBV_QPT_RC
	qptUD      = 4 // IBV_QPT_UD
	qptRaw     = 8 // IBV_QPT_RAW_PACKET
)

// The QP types whose support tso_caps and rss_caps name, and those
// packet_pacing_caps names (RC since rdma-core 62).
var (
	qptNames       = []flagName{{1 << qptRaw, "SUPPORT_RAW_PACKET"}, {1 << qptUD, "SUPPORT_UD"}}
	pacingQPTNames = []flagName{{1 << qptRaw, "SUPPORT_RAW_PACKET"}, {1 << qptUD, "SUPPORT_UD"}, {1 << qptRC, "SUPPORT_RC"}}
)

// compCntrOps are the IBV_QP_ATTACH_COMP_CNTR_OP_* names.
var compCntrOps = []flagName{
	{1 << 0, "QP_ATTACH_SEND"}, {1 << 1, "QP_ATTACH_RECV"}, {1 << 2, "QP_ATTACH_RDMA_READ"},
	{1 << 3, "QP_ATTACH_REMOTE_RDMA_READ"}, {1 << 4, "QP_ATTACH_RDMA_WRITE"}, {1 << 5, "QP_ATTACH_REMOTE_RDMA_WRITE"},
}

// printFlags prints the name of every known set bit, then the unknown ones
// (within mask) in upper-case hex.
func printFlags(w io.Writer, v uint64, known []flagName, mask uint64) {
	var all uint64
	for _, f := range known {
		all |= f.bit
		if v&f.bit != 0 {
			fmt.Fprintf(w, "%s%s\n", flagIndent, f.name)
		}
	}
	if u := v & ^all & mask; u != 0 {
		fmt.Fprintf(w, "%sUnknown flags: 0x%X\n", flagIndent, u)
	}
}

func printODPTransCaps(w io.Writer, v uint32) {
	if v == 0 {
		fmt.Fprintf(w, "%sNO SUPPORT\n", flagIndent)
		return
	}
	printFlags(w, uint64(v), odpTransCaps, 0xffffffff)
}

func printQPTs(w io.Writer, qpts uint32, names []flagName) {
	fmt.Fprintf(w, "\t\tsupported_qp:\n")
	printFlags(w, uint64(qpts), names, 0xffffffff)
}

func writeVerboseDevice(w io.Writer, m *Model) {
	a := &m.Attr
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("\tmax_mr_size:\t\t\t0x%x\n", a.MaxMRSize)
	p("\tpage_size_cap:\t\t\t0x%x\n", a.PageSizeCap)
	p("\tmax_qp:\t\t\t\t%d\n", a.MaxQP)
	p("\tmax_qp_wr:\t\t\t%d\n", a.MaxQPWR)
	p("\tdevice_cap_flags:\t\t0x%08x\n", a.DeviceCapFlags)
	printFlags(w, uint64(a.DeviceCapFlags), deviceCapFlags, 0xffffffff)
	p("\tmax_sge:\t\t\t%d\n", a.MaxSGE)
	p("\tmax_sge_rd:\t\t\t%d\n", a.MaxSGERd)
	p("\tmax_cq:\t\t\t\t%d\n", a.MaxCQ)
	p("\tmax_cqe:\t\t\t%d\n", a.MaxCQE)
	p("\tmax_mr:\t\t\t\t%d\n", a.MaxMR)
	p("\tmax_pd:\t\t\t\t%d\n", a.MaxPD)
	p("\tmax_qp_rd_atom:\t\t\t%d\n", a.MaxQPRdAtom)
	p("\tmax_ee_rd_atom:\t\t\t%d\n", a.MaxEERdAtom)
	p("\tmax_res_rd_atom:\t\t%d\n", a.MaxResRdAtom)
	p("\tmax_qp_init_rd_atom:\t\t%d\n", a.MaxQPInitRdAtom)
	p("\tmax_ee_init_rd_atom:\t\t%d\n", a.MaxEEInitRdAtom)
	p("\tatomic_cap:\t\t\t%s (%d)\n", atomicCapStr(a.AtomicCap), a.AtomicCap)
	p("\tmax_ee:\t\t\t\t%d\n", a.MaxEE)
	p("\tmax_rdd:\t\t\t%d\n", a.MaxRDD)
	p("\tmax_mw:\t\t\t\t%d\n", a.MaxMW)
	p("\tmax_raw_ipv6_qp:\t\t%d\n", a.MaxRawIPv6QP)
	p("\tmax_raw_ethy_qp:\t\t%d\n", a.MaxRawEthyQP)
	p("\tmax_mcast_grp:\t\t\t%d\n", a.MaxMcastGrp)
	p("\tmax_mcast_qp_attach:\t\t%d\n", a.MaxMcastQPAttach)
	p("\tmax_total_mcast_qp_attach:\t%d\n", a.MaxTotalMcastQPAttach)
	p("\tmax_ah:\t\t\t\t%d\n", a.MaxAH)
	p("\tmax_fmr:\t\t\t%d\n", a.MaxFMR)
	if a.MaxFMR != 0 {
		p("\tmax_map_per_fmr:\t\t%d\n", a.MaxMapPerFMR)
	}
	p("\tmax_srq:\t\t\t%d\n", a.MaxSRQ)
	if a.MaxSRQ != 0 {
		p("\tmax_srq_wr:\t\t\t%d\n", a.MaxSRQWR)
		p("\tmax_srq_sge:\t\t\t%d\n", a.MaxSRQSGE)
	}
	p("\tmax_pkeys:\t\t\t%d\n", a.MaxPkeys)
	if cc := m.CompCntr; cc != nil {
		p("\tmax_comp_cntr:\t\t\t%d\n", int32(cc.MaxCounters))
		p("\tcomp_cntr_caps:\n")
		for _, f := range compCntrOps {
			if uint64(cc.SupportedQPAttachOps)&f.bit != 0 {
				p("%s%s\n", flagIndent, f.name)
			}
		}
	}
	p("\tlocal_ca_ack_delay:\t\t%d\n", a.LocalCAAckDelay)

	p("\tgeneral_odp_caps:\n")
	printFlags(w, a.ODPGeneralCaps, []flagName{{ODPSupport, "ODP_SUPPORT"}, {ODPSupportImplicit, "ODP_SUPPORT_IMPLICIT"}}, ^uint64(0))
	p("\trc_odp_caps:\n")
	printODPTransCaps(w, a.RCODPCaps)
	p("\tuc_odp_caps:\n")
	printODPTransCaps(w, a.UCODPCaps)
	p("\tud_odp_caps:\n")
	printODPTransCaps(w, a.UDODPCaps)
	p("\txrc_odp_caps:\n")
	printODPTransCaps(w, a.XRCODPCaps)

	if a.CompletionTimestampMask != 0 {
		p("\tcompletion timestamp_mask:\t\t\t0x%016x\n", a.CompletionTimestampMask)
	} else {
		p("\tcompletion_timestamp_mask not supported\n")
	}
	if a.HCACoreClock != 0 {
		p("\thca_core_clock:\t\t\t%dkHZ\n", a.HCACoreClock)
	} else {
		p("\tcore clock not supported\n")
	}
	if a.RawPacketCaps != 0 {
		p("\traw packet caps:\n")
		for _, f := range []flagName{{1 << 0, "C-VLAN stripping offload"}, {1 << 1, "Scatter FCS offload"}, {1 << 2, "IP csum offload"}, {1 << 3, "Delay drop"}} {
			if uint64(a.RawPacketCaps)&f.bit != 0 {
				p("%s%s\n", flagIndent, f.name)
			}
		}
	}
	p("\tdevice_cap_flags_ex:\t\t0x%X\n", a.DeviceCapFlagsEx)
	printFlags(w, a.DeviceCapFlagsEx&0xffffffff00000000, []flagName{{1 << 34, "RAW_SCATTER_FCS"}, {1 << 36, "PCI_WRITE_END_PADDING"}, {1 << 41, "CC_DMA_BOUNCE"}}, ^uint64(0))

	p("\ttso_caps:\n")
	p("\t\tmax_tso:\t\t\t%d\n", int32(a.TSO.MaxTSO))
	if a.TSO.MaxTSO != 0 {
		printQPTs(w, a.TSO.SupportedQPTs, qptNames)
	}
	p("\trss_caps:\n")
	p("\t\tmax_rwq_indirection_tables:\t\t\t%d\n", a.RSS.MaxRWQIndirectionTables)
	p("\t\tmax_rwq_indirection_table_size:\t\t\t%d\n", a.RSS.MaxRWQIndirectionTableSize)
	p("\t\trx_hash_function:\t\t\t\t0x%x\n", a.RSS.RxHashFunction)
	p("\t\trx_hash_fields_mask:\t\t\t\t0x%X\n", a.RSS.RxHashFieldsMask)
	if a.RSS.SupportedQPTs != 0 {
		printQPTs(w, a.RSS.SupportedQPTs, qptNames)
	}
	p("\tmax_wq_type_rq:\t\t\t%d\n", a.MaxWQTypeRQ)
	p("\tpacket_pacing_caps:\n")
	p("\t\tqp_rate_limit_min:\t%dkbps\n", a.PacketPacing.QPRateLimitMin)
	p("\t\tqp_rate_limit_max:\t%dkbps\n", a.PacketPacing.QPRateLimitMax)
	if a.PacketPacing.QPRateLimitMax != 0 {
		printQPTs(w, a.PacketPacing.SupportedQPTs, pacingQPTNames)
	}
	if a.TM.MaxNumTags != 0 {
		p("\tmax_rndv_hdr_size:\t\t%d\n", a.TM.MaxRndvHdrSize)
		p("\tmax_num_tags:\t\t\t%d\n", a.TM.MaxNumTags)
		p("\tmax_ops:\t\t\t%d\n", a.TM.MaxOps)
		p("\tmax_sge:\t\t\t%d\n", a.TM.MaxSGE)
		p("\tflags:\n")
		if a.TM.Flags&1 != 0 {
			p("%sIBV_TM_CAP_RC\n", flagIndent)
		}
	} else {
		p("\ttag matching not supported\n")
	}
	if a.CQMod.MaxCQCount != 0 && a.CQMod.MaxCQPeriod != 0 {
		p("\n\tcq moderation caps:\n")
		p("\t\tmax_cq_count:\t%d\n", a.CQMod.MaxCQCount)
		p("\t\tmax_cq_period:\t%d us\n\n", a.CQMod.MaxCQPeriod)
	}
	if a.MaxDMSize != 0 {
		p("\tmaximum available device memory:\t%dBytes\n\n", a.MaxDMSize)
	}
	p("\tnum_comp_vectors:\t\t%d\n", m.NumCompVectors)
}

// nullGID is devinfo's null_gid: only the interface id (bytes 8..15) counts.
func nullGID(g *[16]byte) bool {
	for _, b := range g[8:] {
		if b != 0 {
			return false
		}
	}
	return true
}

// writeGID prints one GID line; entries of unknown type print nothing.
func writeGID(w io.Writer, e *GIDEntry, linkLayer uint8) {
	var sysfsType int // enum ibv_gid_type_sysfs: 0 IB/RoCE v1, 1 RoCE v2, 2 invalid
	var typeName string
	switch e.Type {
	case GIDTypeIB, GIDTypeRoCEv1:
		sysfsType, typeName = 0, "RoCE v1"
	case GIDTypeUnknown:
		sysfsType, typeName = 2, "Invalid gid type"
	default:
		sysfsType, typeName = 1, "RoCE v2"
	}
	suffix := ""
	if linkLayer == LinkLayerEthernet {
		suffix = ", " + typeName
	}
	g := &e.GID
	switch sysfsType {
	case 0:
		fmt.Fprintf(w, "\t\t\tGID[%3d]:\t\t%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x%s\n",
			e.Index, g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15], suffix)
	case 1:
		fmt.Fprintf(w, "\t\t\tGID[%3d]:\t\t%s%s\n", e.Index, InetNtop6(*g), suffix)
	}
}

// InetNtop6 formats an IPv6 address exactly like glibc's inet_ntop(AF_INET6) (see cstd.InetNtop6).
func InetNtop6(a [16]byte) string { return cstd.InetNtop6(a) }
