package devinfo

// This file is the Source over goverbs' own uverbs package: the device list
// of package verbssrc, attributes from the kernel queries libibverbs 65 makes
// (extended QUERY_DEVICE, QUERY_PORT, QUERY_GID_TABLE, QUERY_PORT_SPEED), so
// that "goverbs devinfo" prints what ibv_devinfo prints.

import (
	"errors"
	"fmt"
	"io"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/verbssrc"
	"github.com/goverbs/goverbs/uverbs"
)

// driverMLX5 is RDMA_DRIVER_MLX5, whose provider formats fw_ver differently.
const driverMLX5 = 1

// UverbsSource is the Source over package uverbs, the one the tool uses on
// the real system. Use NewUverbsSource.
type UverbsSource struct {
	stderr io.Writer
	devs   map[string]uverbs.Device
}

// NewUverbsSource returns a UverbsSource; stderr receives libibverbs'
// warnings (small RLIMIT_MEMLOCK) and may be nil.
func NewUverbsSource(stderr io.Writer) *UverbsSource {
	return &UverbsSource{stderr: stderr, devs: map[string]uverbs.Device{}}
}

// Devices implements Source: verbssrc.List.
func (s *UverbsSource) Devices() ([]DeviceID, error) {
	devs, err := verbssrc.List(s.stderr)
	if err != nil {
		return nil, err
	}
	out := make([]DeviceID, len(devs))
	for i, d := range devs {
		s.devs[d.Name] = d.Device
		out[i] = DeviceID{Name: d.Name, Transport: d.Transport, Path: d.SysfsPath()}
	}
	return out, nil
}

// FWVer formats a raw firmware version the way the device's libibverbs
// provider does: mlx5 "%d.%d.%04d", rxe and the others "%d.%d.%d".
func FWVer(raw uint64, driver uverbs.DriverID) string {
	major, minor, sub := raw>>32&0xffff, raw>>16&0xffff, raw&0xffff
	if driver == driverMLX5 {
		return fmt.Sprintf("%d.%d.%04d", major, minor, sub)
	}
	return fmt.Sprintf("%d.%d.%d", major, minor, sub)
}

// Query implements Source. The uverbs package does not yet return
// mlx5's driver part of the QUERY_DEVICE response, so on mlx5 the TSO, RSS
// hash and packet pacing capabilities (see devinfo's model.go) are zero.
func (s *UverbsSource) Query(id DeviceID) (*Model, error) {
	d, ok := s.devs[id.Name]
	if !ok {
		var err error
		if d, err = uverbs.DeviceByName(id.Name); err != nil {
			return nil, &QueryError{Stage: StageOpen, Err: err}
		}
	}
	ctx, err := d.Open()
	if err != nil {
		return nil, &QueryError{Stage: StageOpen, Err: err}
	}
	a, err := ctx.QueryDevice()
	if err != nil {
		return nil, &QueryError{Stage: StageQueryDevice, Err: err, CloseErr: ctx.Close()}
	}
	m := &Model{
		Name:           id.Name,
		Transport:      id.Transport,
		BoardID:        ReadBoardID(d.SysfsPath()),
		Attr:           deviceAttr(a, d.DriverID),
		NumCompVectors: int32(ctx.NumCompVectors()),
	}
	m.Ports = make([]Port, a.PhysPortCnt)
	for i := range m.Ports {
		pa, err := ctx.QueryPort(i + 1)
		if err != nil {
			m.Ports[i].Err = err
			continue
		}
		m.Ports[i].Attr = portAttr(pa)
		m.Ports[i].Attr.ActiveSpeedEx = pa.ActiveSpeedEx     // rdma-core 65's 32-bit active speed
		if v, err := ctx.QueryPortSpeed(i + 1); err == nil { // and its effective speed
			m.Ports[i].EffectiveSpeed = &v
		}
	}
	fillGIDs(ctx, m)
	m.CloseErr = ctx.Close()
	return m, nil
}

// fillGIDs reads the GID tables in one QUERY_GID_TABLE call and, should
// that fail, entry by entry like ibv_query_gid.
func fillGIDs(ctx *uverbs.Context, m *Model) {
	table, err := ctx.QueryGIDTable()
	if err == nil {
		for _, e := range table {
			if e.Port < 1 || e.Port > len(m.Ports) {
				continue
			}
			p := &m.Ports[e.Port-1]
			p.GIDs = append(p.GIDs, GIDEntry{Index: e.Index, GID: e.GID, Type: GIDType(e.Type)})
		}
		for i := range m.Ports {
			sortGIDs(m.Ports[i].GIDs)
		}
		return
	}
	for i := range m.Ports {
		p := &m.Ports[i]
		if p.Err != nil {
			continue
		}
		for idx := 0; idx < int(p.Attr.GIDTblLen); idx++ {
			e, err := ctx.QueryGID(i+1, idx)
			switch {
			case errors.Is(err, unix.ENODATA):
			case err != nil:
				p.GIDFailure = &GIDFailure{Index: idx, Err: err}
			default:
				p.GIDs = append(p.GIDs, GIDEntry{Index: idx, GID: e.GID, Type: GIDType(e.Type)})
				continue
			}
			if p.GIDFailure != nil {
				break
			}
		}
	}
}

func sortGIDs(g []GIDEntry) {
	for i := 1; i < len(g); i++ {
		for j := i; j > 0 && g[j].Index < g[j-1].Index; j-- {
			g[j], g[j-1] = g[j-1], g[j]
		}
	}
}

func deviceAttr(a *uverbs.DeviceAttr, driver uverbs.DriverID) DeviceAttr {
	return DeviceAttr{
		FWVer:                   FWVer(a.FWVer, driver),
		NodeGUID:                uint64(a.NodeGUID),
		SysImageGUID:            uint64(a.SysImageGUID),
		MaxMRSize:               a.MaxMRSize,
		PageSizeCap:             a.PageSizeCap,
		VendorID:                a.VendorID,
		VendorPartID:            a.VendorPartID,
		HWVer:                   a.HWVer,
		MaxQP:                   int32(a.MaxQP),
		MaxQPWR:                 int32(a.MaxQPWR),
		DeviceCapFlags:          a.Raw.Base.DeviceCapFlags,
		MaxSGE:                  int32(a.MaxSGE),
		MaxSGERd:                int32(a.MaxSGERD),
		MaxCQ:                   int32(a.MaxCQ),
		MaxCQE:                  int32(a.MaxCQE),
		MaxMR:                   int32(a.MaxMR),
		MaxPD:                   int32(a.MaxPD),
		MaxQPRdAtom:             int32(a.MaxQPRdAtom),
		MaxEERdAtom:             int32(a.MaxEERdAtom),
		MaxResRdAtom:            int32(a.MaxResRdAtom),
		MaxQPInitRdAtom:         int32(a.MaxQPInitRdAtom),
		MaxEEInitRdAtom:         int32(a.MaxEEInitRdAtom),
		AtomicCap:               int32(a.AtomicCap),
		MaxEE:                   int32(a.MaxEE),
		MaxRDD:                  int32(a.MaxRDD),
		MaxMW:                   int32(a.MaxMW),
		MaxRawIPv6QP:            int32(a.MaxRawIPv6QP),
		MaxRawEthyQP:            int32(a.MaxRawEthyQP),
		MaxMcastGrp:             int32(a.MaxMcastGrp),
		MaxMcastQPAttach:        int32(a.MaxMcastQPAttach),
		MaxTotalMcastQPAttach:   int32(a.MaxTotalMcastQPAttach),
		MaxAH:                   int32(a.MaxAH),
		MaxFMR:                  int32(a.MaxFMR),
		MaxMapPerFMR:            int32(a.MaxMapPerFMR),
		MaxSRQ:                  int32(a.MaxSRQ),
		MaxSRQWR:                int32(a.MaxSRQWR),
		MaxSRQSGE:               int32(a.MaxSRQSGE),
		MaxPkeys:                a.MaxPKeys,
		LocalCAAckDelay:         a.LocalCAAckDelay,
		PhysPortCnt:             a.PhysPortCnt,
		ODPGeneralCaps:          uint64(a.ODPGeneralCaps),
		RCODPCaps:               uint32(a.ODPRCCaps),
		UCODPCaps:               uint32(a.ODPUCCaps),
		UDODPCaps:               uint32(a.ODPUDCaps),
		XRCODPCaps:              uint32(a.XRCODPCaps),
		CompletionTimestampMask: a.TimestampMask,
		HCACoreClock:            a.HCACoreClock,
		DeviceCapFlagsEx:        capFlagsEx(a),
		RSS: RSSCaps{
			SupportedQPTs:              a.RSSSupportedQPTs,
			MaxRWQIndirectionTables:    a.MaxRWQIndirectionTables,
			MaxRWQIndirectionTableSize: a.MaxRWQIndirectionTableSize,
		},
		MaxWQTypeRQ:   a.MaxWQTypeRQ,
		RawPacketCaps: a.RawPacketCaps,
		TM: TMCaps{
			MaxRndvHdrSize: a.TMMaxRndvHdrSize,
			MaxNumTags:     a.TMMaxNumTags,
			Flags:          a.TMFlags,
			MaxOps:         a.TMMaxOps,
			MaxSGE:         a.TMMaxSGE,
		},
		CQMod:     CQModerationCaps{MaxCQCount: a.MaxCQCount, MaxCQPeriod: a.MaxCQPeriod},
		MaxDMSize: a.MaxDMSize,
	}
}

// capFlagsEx is device_cap_flags_ex when the kernel's response covers it,
// else 0, as libibverbs copies it (the uverbs package folds it into
// DeviceCapFlags).
func capFlagsEx(a *uverbs.DeviceAttr) uint64 {
	if uintptr(a.ResponseLength) >= unsafe.Offsetof(a.Raw.DeviceCapFlagsEx)+8 {
		return a.Raw.DeviceCapFlagsEx
	}
	return 0
}

func portAttr(p *uverbs.PortAttr) PortAttr {
	return PortAttr{
		State:         int32(p.State),
		MaxMTU:        int32(p.MaxMTU),
		ActiveMTU:     int32(p.ActiveMTU),
		GIDTblLen:     int32(p.GIDTblLen),
		PortCapFlags:  p.PortCapFlags,
		MaxMsgSz:      p.MaxMsgSz,
		BadPkeyCntr:   p.BadPKeyCntr,
		QkeyViolCntr:  p.QKeyViolCntr,
		PkeyTblLen:    p.PKeyTblLen,
		LID:           p.LID,
		SMLID:         p.SMLID,
		LMC:           p.LMC,
		MaxVLNum:      p.MaxVLNum,
		SMSL:          p.SMSL,
		SubnetTimeout: p.SubnetTimeout,
		InitTypeReply: p.InitTypeReply,
		ActiveWidth:   p.ActiveWidth,
		ActiveSpeed:   p.ActiveSpeed,
		PhysState:     uint8(p.PhysState),
		LinkLayer:     uint8(p.LinkLayer),
		Flags:         p.Flags,
		PortCapFlags2: p.PortCapFlags2,
	}
}
