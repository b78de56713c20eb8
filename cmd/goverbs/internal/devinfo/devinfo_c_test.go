package devinfo

import (
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/golden"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
)

// The C ibv_devinfo cannot query fake devices, so "go test -update" runs it
// with testdata/fakeverbs (an LD_PRELOAD library built here with cc against
// the Reference libibverbs headers, golden.CHeaders) that answers
// ibv_open_device, the context's query_device_ex/query_port,
// ibv_query_gid(_type), ibv_query_port_speed and ibv_query_comp_cntr_caps
// from a spec the test writes from the same Model our renderer gets. The
// goldens are therefore the C tool's own rendering of these models,
// including its failure paths.

// cFields maps DeviceAttr fields to struct ibv_device_attr_ex field names.
var cFields = map[string]string{
	"NodeGUID": "node_guid", "SysImageGUID": "sys_image_guid", "MaxMRSize": "max_mr_size",
	"PageSizeCap": "page_size_cap", "VendorID": "vendor_id", "VendorPartID": "vendor_part_id", "HWVer": "hw_ver",
	"MaxQP": "max_qp", "MaxQPWR": "max_qp_wr", "DeviceCapFlags": "device_cap_flags", "MaxSGE": "max_sge",
	"MaxSGERd": "max_sge_rd", "MaxCQ": "max_cq", "MaxCQE": "max_cqe", "MaxMR": "max_mr", "MaxPD": "max_pd",
	"MaxQPRdAtom": "max_qp_rd_atom", "MaxEERdAtom": "max_ee_rd_atom", "MaxResRdAtom": "max_res_rd_atom",
	"MaxQPInitRdAtom": "max_qp_init_rd_atom", "MaxEEInitRdAtom": "max_ee_init_rd_atom", "AtomicCap": "atomic_cap",
	"MaxEE": "max_ee", "MaxRDD": "max_rdd", "MaxMW": "max_mw", "MaxRawIPv6QP": "max_raw_ipv6_qp",
	"MaxRawEthyQP": "max_raw_ethy_qp", "MaxMcastGrp": "max_mcast_grp", "MaxMcastQPAttach": "max_mcast_qp_attach",
	"MaxTotalMcastQPAttach": "max_total_mcast_qp_attach", "MaxAH": "max_ah", "MaxFMR": "max_fmr",
	"MaxMapPerFMR": "max_map_per_fmr", "MaxSRQ": "max_srq", "MaxSRQWR": "max_srq_wr", "MaxSRQSGE": "max_srq_sge",
	"MaxPkeys": "max_pkeys", "LocalCAAckDelay": "local_ca_ack_delay", "PhysPortCnt": "phys_port_cnt",
	"ODPGeneralCaps": "odp_caps.general_caps", "RCODPCaps": "odp_caps.per_transport_caps.rc_odp_caps",
	"UCODPCaps": "odp_caps.per_transport_caps.uc_odp_caps", "UDODPCaps": "odp_caps.per_transport_caps.ud_odp_caps",
	"XRCODPCaps": "xrc_odp_caps", "CompletionTimestampMask": "completion_timestamp_mask",
	"HCACoreClock": "hca_core_clock", "DeviceCapFlagsEx": "device_cap_flags_ex", "MaxWQTypeRQ": "max_wq_type_rq",
	"RawPacketCaps": "raw_packet_caps", "MaxDMSize": "max_dm_size",
	"TSO.MaxTSO": "tso_caps.max_tso", "TSO.SupportedQPTs": "tso_caps.supported_qpts",
	"RSS.SupportedQPTs": "rss_caps.supported_qpts", "RSS.MaxRWQIndirectionTables": "rss_caps.max_rwq_indirection_tables",
	"RSS.MaxRWQIndirectionTableSize": "rss_caps.max_rwq_indirection_table_size",
	"RSS.RxHashFieldsMask":           "rss_caps.rx_hash_fields_mask", "RSS.RxHashFunction": "rss_caps.rx_hash_function",
	"PacketPacing.QPRateLimitMin": "packet_pacing_caps.qp_rate_limit_min",
	"PacketPacing.QPRateLimitMax": "packet_pacing_caps.qp_rate_limit_max",
	"PacketPacing.SupportedQPTs":  "packet_pacing_caps.supported_qpts",
	"TM.MaxRndvHdrSize":           "tm_caps.max_rndv_hdr_size", "TM.MaxNumTags": "tm_caps.max_num_tags", "TM.Flags": "tm_caps.flags",
	"TM.MaxOps": "tm_caps.max_ops", "TM.MaxSGE": "tm_caps.max_sge",
	"CQMod.MaxCQCount": "cq_mod_caps.max_cq_count", "CQMod.MaxCQPeriod": "cq_mod_caps.max_cq_period",
}

var cPortFields = map[string]string{
	"State": "state", "MaxMTU": "max_mtu", "ActiveMTU": "active_mtu", "GIDTblLen": "gid_tbl_len",
	"PortCapFlags": "port_cap_flags", "MaxMsgSz": "max_msg_sz", "BadPkeyCntr": "bad_pkey_cntr",
	"QkeyViolCntr": "qkey_viol_cntr", "PkeyTblLen": "pkey_tbl_len", "LID": "lid", "SMLID": "sm_lid", "LMC": "lmc",
	"MaxVLNum": "max_vl_num", "SMSL": "sm_sl", "SubnetTimeout": "subnet_timeout", "InitTypeReply": "init_type_reply",
	"ActiveWidth": "active_width", "ActiveSpeed": "active_speed", "PhysState": "phys_state", "LinkLayer": "link_layer",
	"Flags": "flags", "PortCapFlags2": "port_cap_flags2", "ActiveSpeedEx": "active_speed_ex",
}

// intValue is v as an unsigned 64-bit pattern (signed values sign-extend,
// which the C side truncates to the field width).
func intValue(v reflect.Value) uint64 {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return uint64(v.Int())
	}
	return v.Uint()
}

func walk(prefix string, v reflect.Value, names map[string]string, emit func(cname string, val uint64)) {
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		name := prefix + f.Name
		if f.Type.Kind() == reflect.Struct {
			walk(name+".", v.Field(i), names, emit)
			continue
		}
		if f.Type.Kind() == reflect.String {
			continue
		}
		cname, ok := names[name]
		if !ok {
			panic("no C name for " + name)
		}
		emit(cname, intValue(v.Field(i)))
	}
}

// spec writes the fakeverbs description of m and the query failure qerr.
func spec(m *Model, qerr error) string {
	var b strings.Builder
	if qe, ok := qerr.(*QueryError); ok {
		if qe.Stage == StageOpen {
			b.WriteString("openfail\n")
		} else {
			fmt.Fprintf(&b, "queryfail %d\n", cstd.ErrnoOf(qe.Err, unix.EIO))
		}
		if qe.CloseErr != nil {
			b.WriteString("closefail\n")
		}
		return b.String()
	}
	if m.Attr.FWVer != "" {
		fmt.Fprintf(&b, "fw_ver %s\n", m.Attr.FWVer)
	}
	fmt.Fprintf(&b, "ncv %d\n", m.NumCompVectors)
	walk("", reflect.ValueOf(m.Attr), cFields, func(c string, v uint64) { fmt.Fprintf(&b, "%s %d\n", c, v) })
	for i, p := range m.Ports {
		walk("", reflect.ValueOf(p.Attr), cPortFields, func(c string, v uint64) { fmt.Fprintf(&b, "port %d %s %d\n", i+1, c, v) })
		if p.Err != nil {
			fmt.Fprintf(&b, "portfail %d %d\n", i+1, cstd.ErrnoOf(p.Err, unix.EIO))
		}
		for _, g := range p.GIDs {
			fmt.Fprintf(&b, "gid %d %d %x %d\n", i+1, g.Index, g.GID[:], g.Type)
		}
		if p.GIDFailure != nil {
			fmt.Fprintf(&b, "gidfail %d %d\n", i+1, p.GIDFailure.Index)
		}
		if p.EffectiveSpeed != nil {
			fmt.Fprintf(&b, "portspeed %d %d\n", i+1, *p.EffectiveSpeed)
		}
	}
	if cc := m.CompCntr; cc != nil {
		fmt.Fprintf(&b, "compcntr %d %d\n", cc.MaxCounters, cc.SupportedQPAttachOps)
	}
	if m.CloseErr != nil {
		b.WriteString("closefail\n")
	}
	return b.String()
}

// cx5Model is a ConnectX-5 with two InfiniBand ports, one down.
func cx5Model() *Model {
	var gid0, gid1 [16]byte
	copy(gid0[:], []byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0xb8, 0x59, 0x9f, 0x03, 0x00, 0xd4, 0xa7, 0xa0})
	copy(gid1[:], []byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0xb8, 0x59, 0x9f, 0x03, 0x00, 0xd4, 0xa7, 0xb0})
	return &Model{
		Attr: DeviceAttr{
			FWVer: "16.35.2000", NodeGUID: 0xb8599f0300d4a7a0, SysImageGUID: 0xb8599f0300d4a7a0,
			MaxMRSize: 0xffffffffffffffff, PageSizeCap: 0xfffffffffffff000, VendorID: 0x02c9, VendorPartID: 4119,
			HWVer: 0, MaxQP: 262144, MaxQPWR: 32768, DeviceCapFlags: 0xe97e1c36, MaxSGE: 30, MaxSGERd: 30,
			MaxCQ: 16777216, MaxCQE: 4194303, MaxMR: 16777216, MaxPD: 16777216, MaxQPRdAtom: 16, MaxResRdAtom: 4194304,
			MaxQPInitRdAtom: 16, AtomicCap: 1, MaxMW: 16777216, MaxMcastGrp: 2097152, MaxMcastQPAttach: 240,
			MaxTotalMcastQPAttach: 503316480, MaxAH: 2147483647, MaxSRQ: 8388608, MaxSRQWR: 32767, MaxSRQSGE: 31,
			MaxPkeys: 128, LocalCAAckDelay: 16, PhysPortCnt: 2,
			ODPGeneralCaps: ODPSupport | ODPSupportImplicit, RCODPCaps: 0x3f, UCODPCaps: 0x3, UDODPCaps: 0x3, XRCODPCaps: 0x3f,
			CompletionTimestampMask: 0x7fffffffffffffff, HCACoreClock: 156250, DeviceCapFlagsEx: 0x15e97e1c36,
			RSS:         RSSCaps{MaxRWQIndirectionTables: 0, MaxRWQIndirectionTableSize: 0},
			MaxWQTypeRQ: 0, TM: TMCaps{MaxRndvHdrSize: 64, MaxNumTags: 127, Flags: 1, MaxOps: 32768, MaxSGE: 1},
			CQMod: CQModerationCaps{MaxCQCount: 65535, MaxCQPeriod: 4095}, MaxDMSize: 131072,
		},
		NumCompVectors: 63,
		Ports: []Port{
			{Attr: PortAttr{State: 4, MaxMTU: 5, ActiveMTU: 5, GIDTblLen: 8, PortCapFlags: 0xa651e848, MaxMsgSz: 0x40000000,
				PkeyTblLen: 128, LID: 16, SMLID: 1, MaxVLNum: 4, SubnetTimeout: 18, ActiveWidth: 2, ActiveSpeed: 32,
				PhysState: 5, LinkLayer: LinkLayerInfiniBand, PortCapFlags2: 0x32},
				GIDs: []GIDEntry{{Index: 0, GID: gid0, Type: GIDTypeIB}}},
			{Attr: PortAttr{State: 1, MaxMTU: 5, ActiveMTU: 5, GIDTblLen: 8, PortCapFlags: 0xa651e84a, MaxMsgSz: 0x40000000,
				PkeyTblLen: 128, LID: 65535, MaxVLNum: 4, ActiveWidth: 1, ActiveSpeed: 1, PhysState: 3,
				LinkLayer: LinkLayerInfiniBand},
				GIDs: []GIDEntry{{Index: 0, GID: gid1, Type: GIDTypeIB}}},
		},
	}
}

// oddModel has out-of-range enums, negative ints, unknown flags and RoCE
// GIDs of every kind.
func oddModel() *Model {
	m := cx5Model()
	a := &m.Attr
	a.FWVer = ""
	a.VendorPartID = 0xffffffff
	a.MaxQP = -5
	a.AtomicCap = 7
	a.MaxFMR, a.MaxMapPerFMR = 4, 7
	a.MaxSRQ = 0
	a.DeviceCapFlags |= 1<<31 | 1<<15
	a.ODPGeneralCaps |= 1 << 40
	a.RCODPCaps = ODPSupportSend | 1<<7
	a.UCODPCaps = 0
	a.CompletionTimestampMask, a.HCACoreClock = 0, 0
	a.RawPacketCaps = 0xf
	a.DeviceCapFlagsEx = 1<<34 | 1<<36 | 1<<40 | 0x1234
	a.TSO = TSOCaps{MaxTSO: 0x80000000, SupportedQPTs: 1<<8 | 1<<4 | 1<<2}
	a.RSS = RSSCaps{SupportedQPTs: 1<<8 | 1<<3, MaxRWQIndirectionTables: 65536, MaxRWQIndirectionTableSize: 2048, RxHashFieldsMask: 0x800000ff, RxHashFunction: 1}
	a.PacketPacing = PacketPacingCaps{QPRateLimitMin: 1, QPRateLimitMax: 100000000, SupportedQPTs: 1 << 4}
	a.TM = TMCaps{}
	a.CQMod = CQModerationCaps{MaxCQCount: 1}
	a.MaxDMSize = 0
	p := &m.Ports[0].Attr
	p.State, p.MaxMTU, p.ActiveMTU, p.ActiveWidth, p.ActiveSpeed, p.MaxVLNum, p.PhysState = 9, 0, 6, 3, 3, 0, 0
	p.LinkLayer, p.LMC, p.GIDTblLen = LinkLayerEthernet, 7, 6
	var v4, v6, zeroIfid, weird [16]byte
	copy(v4[10:], []byte{0xff, 0xff, 192, 168, 1, 2})
	copy(v6[:], []byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1})
	zeroIfid[0], zeroIfid[1] = 0xfe, 0x80
	copy(weird[:], []byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	m.Ports[0].GIDs = []GIDEntry{
		{Index: 0, GID: weird, Type: GIDTypeRoCEv1}, {Index: 1, GID: weird, Type: GIDTypeRoCEv2},
		{Index: 2, GID: v4, Type: GIDTypeRoCEv2}, {Index: 3, GID: zeroIfid, Type: GIDTypeRoCEv2},
		{Index: 4, GID: v6, Type: GIDTypeUnknown}, {Index: 5, GID: v6, Type: GIDTypeRoCEv2},
		{Index: 6, GID: v6, Type: GIDTypeRoCEv2}, // beyond gid_tbl_len
	}
	m.Ports[1].Attr.LinkLayer = 0
	return m
}

// rdma65Model has what rdma-core 65's ibv_devinfo prints beyond 44's: an
// XDR port (active_speed_ex 256), effective speeds, completion counters, the
// FLUSH and ATOMIC_WRITE ODP capabilities, CC_DMA_BOUNCE and packet pacing
// over RC.
func rdma65Model() *Model {
	m := cx5Model()
	a := &m.Attr
	a.RCODPCaps |= ODPSupportFlush | ODPSupportAtomicWrite | 1<<9
	a.UDODPCaps = ODPSupportFlush
	a.DeviceCapFlagsEx |= 1<<41 | 1<<42
	a.PacketPacing = PacketPacingCaps{QPRateLimitMin: 1, QPRateLimitMax: 100000000, SupportedQPTs: 1<<2 | 1<<4 | 1<<8 | 1<<11}
	m.CompCntr = &CompCntrCaps{MaxCounters: 1024, SupportedQPAttachOps: 0x7f}
	m.Ports[0].Attr.ActiveSpeed, m.Ports[0].Attr.ActiveSpeedEx = 0, 256
	m.Ports[0].EffectiveSpeed = new(uint64)
	*m.Ports[0].EffectiveSpeed = 8000
	m.Ports[1].Attr.ActiveSpeedEx = 64
	m.Ports[1].EffectiveSpeed = new(uint64)
	*m.Ports[1].EffectiveSpeed = 25
	return m
}

var cCases = []struct {
	name  string
	args  string
	model func() *Model
	qerr  error
}{
	{"cx5", "", cx5Model, nil},
	{"cx5_-v", "-v", cx5Model, nil},
	{"cx5_-v_-d_mlx5_1_-i_2", "-v -d mlx5_1 -i 2", cx5Model, nil},
	{"cx5_-i_3", "-i 3", cx5Model, nil},
	{"odd_-v", "-v", oddModel, nil},
	{"rdma65_-v", "-v", rdma65Model, nil},
	{"rdma65", "-i 1", rdma65Model, nil},
	{"no_comp_cntr_ops_-v", "-v -d mlx5_0 -i 2", func() *Model {
		m := rdma65Model()
		m.CompCntr.SupportedQPAttachOps = 0
		m.Ports[1].Attr.ActiveSpeedEx = 0x80000000
		return m
	}, nil},
	{"port2_fails_-v", "-v", func() *Model { m := cx5Model(); m.Ports[1].Err = unix.EPERM; return m }, nil},
	{"port1_fails_-i_2", "-i 2", func() *Model { m := cx5Model(); m.Ports[0].Err = unix.EPERM; return m }, nil},
	{"gid_fails_-v", "-v -d mlx5_0", func() *Model {
		m := cx5Model()
		m.Ports[0].GIDFailure = &GIDFailure{Index: 3, Err: unix.EIO}
		return m
	}, nil},
	{"close_fails", "-d mlx5_1", func() *Model { m := cx5Model(); m.CloseErr = unix.EIO; return m }, nil},
	{"open_fails", "", cx5Model, &QueryError{Stage: StageOpen, Err: unix.EACCES}},
	{"query_fails", "", cx5Model, &QueryError{Stage: StageQueryDevice, Err: unix.EINVAL}},
	{"query_and_close_fail", "-d mlx5_0", cx5Model, &QueryError{Stage: StageQueryDevice, Err: unix.EINVAL, CloseErr: unix.EIO}},
}

// modelSource serves one model (or error) for every device of a tree, with
// the device's own name and board_id.
type modelSource struct {
	SysfsSource
	m    *Model
	qerr error
}

func (s modelSource) Query(d DeviceID) (*Model, error) {
	if s.qerr != nil {
		return nil, s.qerr
	}
	m := *s.m
	m.Name, m.Transport, m.BoardID = d.Name, d.Transport, ReadBoardID(d.Path)
	return &m, nil
}

func TestCRenderedModels(t *testing.T) {
	tree := filepath.Join(trees, "mlx5")
	var shim string
	if *update {
		shim = golden.BuildFakeverbs(t, "ibv_devinfo", "testdata/fakeverbs")
	}
	for _, c := range cCases {
		t.Run(c.name, func(t *testing.T) {
			m := c.model()
			file := filepath.Join("testdata", "golden", "c_"+c.name+".golden")
			args := strings.Fields(c.args)
			if *update {
				golden.RegenerateFakeverbs(t, shim, spec(m, c.qerr), tree, "ibv_devinfo", args, file)
			}
			src := modelSource{SysfsSource: SysfsSource{FS: sysfs.Under(tree)}, m: m, qerr: c.qerr}
			golden.CheckRun(t, file, func(stdout, stderr io.Writer) int {
				return Command{Source: src, Posix: new(bool)}.Run(args, stdout, stderr)
			})
		})
	}
}
