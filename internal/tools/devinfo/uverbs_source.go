package devinfo

import (
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/uverbs"
)

func init() {
	DefaultSource = func(stderr io.Writer) Source { return UverbsSource{SysfsSource: SysfsSource{Stderr: stderr}} }
}

// UverbsSource lists devices like libibverbs (SysfsSource) and queries them through goverbs' uverbs package:
// the extended QUERY_DEVICE, QUERY_PORT per port, and the GID table (QUERY_GID_TABLE), as rdma-core 44's
// ibv_devinfo gets them through ibv_query_device_ex, ibv_query_port and ibv_query_gid(_type).
type UverbsSource struct {
	SysfsSource
}

// Query implements Source.
func (s UverbsSource) Query(dev DeviceID) (*Model, error) {
	ctx, err := uverbs.Open(dev.Name)
	if err != nil {
		return nil, &QueryError{Stage: StageOpen, Err: err}
	}
	da, err := ctx.QueryDevice()
	if err != nil {
		return nil, &QueryError{Stage: StageQueryDevice, Err: err, CloseErr: ctx.Close()}
	}
	m := &Model{Name: dev.Name, Transport: dev.Transport, BoardID: ReadBoardID(dev.Path),
		NumCompVectors: int32(ctx.NumCompVectors())}
	m.Attr = DeviceAttr{
		FWVer: ctx.FWVersionString(da.FWVer), NodeGUID: uint64(da.NodeGUID), SysImageGUID: uint64(da.SysImageGUID),
		MaxMRSize: da.MaxMRSize, PageSizeCap: da.PageSizeCap, VendorID: da.VendorID, VendorPartID: da.VendorPartID,
		HWVer: da.HWVer, MaxQP: int32(da.MaxQP), MaxQPWR: int32(da.MaxQPWR), DeviceCapFlags: uint32(da.DeviceCapFlags),
		MaxSGE: int32(da.MaxSGE), MaxSGERd: int32(da.MaxSGERD), MaxCQ: int32(da.MaxCQ), MaxCQE: int32(da.MaxCQE),
		MaxMR: int32(da.MaxMR), MaxPD: int32(da.MaxPD), MaxQPRdAtom: int32(da.MaxQPRdAtom),
		MaxEERdAtom: int32(da.MaxEERdAtom), MaxResRdAtom: int32(da.MaxResRdAtom),
		MaxQPInitRdAtom: int32(da.MaxQPInitRdAtom), MaxEEInitRdAtom: int32(da.MaxEEInitRdAtom),
		AtomicCap: int32(da.AtomicCap), MaxEE: int32(da.MaxEE), MaxRDD: int32(da.MaxRDD), MaxMW: int32(da.MaxMW),
		MaxRawIPv6QP: int32(da.MaxRawIPv6QP), MaxRawEthyQP: int32(da.MaxRawEthyQP), MaxMcastGrp: int32(da.MaxMcastGrp),
		MaxMcastQPAttach: int32(da.MaxMcastQPAttach), MaxTotalMcastQPAttach: int32(da.MaxTotalMcastQPAttach),
		MaxAH: int32(da.MaxAH), MaxFMR: int32(da.MaxFMR), MaxMapPerFMR: int32(da.MaxMapPerFMR), MaxSRQ: int32(da.MaxSRQ),
		MaxSRQWR: int32(da.MaxSRQWR), MaxSRQSGE: int32(da.MaxSRQSGE), MaxPkeys: da.MaxPKeys,
		LocalCAAckDelay: da.LocalCAAckDelay, PhysPortCnt: da.PhysPortCnt,
		ODPGeneralCaps: da.ODPGeneralCaps, RCODPCaps: da.ODPRCCaps, UCODPCaps: da.ODPUCCaps, UDODPCaps: da.ODPUDCaps,
		XRCODPCaps: da.XRCODPCaps, CompletionTimestampMask: da.TimestampMask, HCACoreClock: da.HCACoreClock,
		DeviceCapFlagsEx: da.DeviceCapFlags,
		RSS: RSSCaps{SupportedQPTs: da.RSSSupportedQPTs, MaxRWQIndirectionTables: da.MaxRWQIndirectionTables,
			MaxRWQIndirectionTableSize: da.MaxRWQIndirectionTableSize},
		MaxWQTypeRQ: da.MaxWQTypeRQ, RawPacketCaps: da.RawPacketCaps,
		TM: TMCaps{MaxRndvHdrSize: da.TMMaxRndvHdrSize, MaxNumTags: da.TMMaxNumTags, Flags: da.TMFlags,
			MaxOps: da.TMMaxOps, MaxSGE: da.TMMaxSGE},
		CQMod:     CQModerationCaps{MaxCQCount: da.MaxCQCount, MaxCQPeriod: da.MaxCQPeriod},
		MaxDMSize: da.MaxDMSize,
	}
	table, tableErr := ctx.QueryGIDTable()
	for p := 1; p <= int(da.PhysPortCnt); p++ {
		var port Port
		pa, err := ctx.QueryPort(p)
		if err != nil {
			port.Err = err
			m.Ports = append(m.Ports, port)
			continue
		}
		port.Attr = PortAttr{State: int32(pa.State), MaxMTU: int32(pa.MaxMTU), ActiveMTU: int32(pa.ActiveMTU),
			GIDTblLen: int32(pa.GIDTblLen), PortCapFlags: pa.PortCapFlags, MaxMsgSz: pa.MaxMsgSz,
			BadPkeyCntr: pa.BadPKeyCntr, QkeyViolCntr: pa.QKeyViolCntr, PkeyTblLen: pa.PKeyTblLen, LID: pa.LID,
			SMLID: pa.SMLID, LMC: pa.LMC, MaxVLNum: pa.MaxVLNum, SMSL: pa.SMSL, SubnetTimeout: pa.SubnetTimeout,
			InitTypeReply: pa.InitTypeReply, ActiveWidth: pa.ActiveWidth, ActiveSpeed: pa.ActiveSpeed,
			PhysState: pa.PhysState, LinkLayer: pa.LinkLayer, Flags: pa.Flags, PortCapFlags2: pa.PortCapFlags2}
		switch {
		case tableErr == nil:
			// One QUERY_GID_TABLE answers what ibv_devinfo asks index by index; indexes absent from the
			// table are empty entries, which it does not print.
			for _, e := range table {
				if e.Port == p && e.Index < pa.GIDTblLen {
					port.GIDs = append(port.GIDs, GIDEntry{Index: e.Index, GID: e.GID, Type: GIDType(e.Type)})
				}
			}
			sortGIDs(port.GIDs)
		default:
			for i := 0; i < pa.GIDTblLen; i++ {
				e, err := ctx.QueryGID(p, i)
				if errors.Is(err, unix.ENODATA) {
					continue
				}
				if err != nil {
					port.GIDFailure = &GIDFailure{Index: i, Err: err}
					break
				}
				port.GIDs = append(port.GIDs, GIDEntry{Index: i, GID: e.GID, Type: GIDType(e.Type)})
			}
		}
		m.Ports = append(m.Ports, port)
	}
	if err := ctx.Close(); err != nil {
		m.CloseErr = fmt.Errorf("close %s: %w", dev.Name, err)
	}
	return m, nil
}

func sortGIDs(g []GIDEntry) {
	for i := 1; i < len(g); i++ {
		for j := i; j > 0 && g[j].Index < g[j-1].Index; j-- {
			g[j], g[j-1] = g[j-1], g[j]
		}
	}
}
