package hw

import "fmt"

// A UD address handle's data-path form is an AHData whose AV holds the 48-byte address vector (struct
// mlx5_wqe_av) that each UD WQE's datagram segment starts from. It is built in userspace, as rdma-core's
// mlx5_create_ah does; only the destination MAC of a RoCE AH comes from the kernel (CREATE_AH response) or from
// neighbour resolution. Handle and Num are left for the caller (the kernel AH handle, if any).

// GRH holds the global routing fields of an address (struct ibv_global_route).
type GRH struct {
	DGID         [16]byte
	FlowLabel    uint32 // 20 bits
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
}

// AHAttr is the subset of struct ibv_ah_attr the address vector encodes.
type AHAttr struct {
	DLID        uint16
	SL          uint8
	SrcPathBits uint8
	StaticRate  uint8 // enum ibv_rate
	IsGlobal    bool
	GRH         GRH
}

// av field offsets.
const (
	avOffStatRateSL = 12
	avOffFlMLID     = 13
	avOffRLID       = 14
	avOffRMAC       = 20
	avOffTClass     = 26
	avOffHopLimit   = 27
	avOffGRHGIDFL   = 28
	avOffRGID       = 32
)

// ibToMLX5Rate converts enum ibv_rate to the device's rate code (rdma-core ib_to_mlx5_rate_table; out-of-table
// rates mean unlimited, 0).
var ibToMLX5Rate = [...]uint8{0, 0, 7, 8, 9, 10, 11, 12, 13, 14, 15, 11, 13, 15, 0, 9, 15, 0, 0, 9, 13, 0, 0}

func mlx5Rate(r uint8) uint8 {
	if int(r) < len(ibToMLX5Rate) {
		return ibToMLX5Rate[r]
	}
	return 0
}

func setGRH(ah *AHData, g *GRH, grhBit uint32) {
	ah.AV[avOffTClass] = g.TrafficClass
	ah.AV[avOffHopLimit] = g.HopLimit
	be.PutUint32(ah.AV[avOffGRHGIDFL:], grhBit<<30|uint32(g.SGIDIndex)<<20|g.FlowLabel&0xfffff)
	copy(ah.AV[avOffRGID:], g.DGID[:])
}

// NewIBAH builds the address vector for an InfiniBand port: fl_mlid = src_path_bits, rlid = DLID, stat_rate_sl =
// rate<<4 | SL, and with a GRH the GRH bit, SGID index and flow label.
func NewIBAH(attr AHAttr) *AHData {
	ah := new(AHData)
	ah.AV[avOffFlMLID] = attr.SrcPathBits & 0x7f
	be.PutUint16(ah.AV[avOffRLID:], attr.DLID)
	ah.AV[avOffStatRateSL] = mlx5Rate(attr.StaticRate)<<4 | attr.SL&0xf
	if attr.IsGlobal {
		setGRH(ah, &attr.GRH, 1)
	}
	return ah
}

// RoCE UDP source-port range (IB_ROCE_UDP_ENCAP_VALID_PORT_MIN/MAX).
const (
	RoCEUDPPortMin = 0xC000
	RoCEUDPPortMax = 0xFFFF
)

// FlowLabelToUDPSport folds a 20-bit flow label into a RoCE v2 UDP source port (ibv_flow_label_to_udp_sport).
func FlowLabelToUDPSport(fl uint32) uint16 {
	lo, hi := fl&0x3fff, fl&0xfc000
	lo ^= hi >> 14
	return uint16(lo | RoCEUDPPortMin)
}

// NewRoCEAH builds the address vector for an Ethernet (RoCE) port. RoCE requires a GRH (EINVAL without one). The
// GRH bit stays 0, stat_rate_sl = rate<<4 | (SL&7)<<1, rmac = dmac. For RoCE v2, rlid carries the UDP source port:
// derived from the flow label when it is non-zero, else udpSport (rdma-core picks a random port in
// [RoCEUDPPortMin, RoCEUDPPortMax]).
func NewRoCEAH(attr AHAttr, dmac [6]byte, roceV2 bool, udpSport uint16) (*AHData, error) {
	if !attr.IsGlobal {
		return nil, fmt.Errorf("mlx5: create RoCE address handle: a GRH is required: %w", errInvalid)
	}
	ah := new(AHData)
	if roceV2 {
		sport := udpSport
		if fl := attr.GRH.FlowLabel & 0xfffff; fl != 0 {
			sport = FlowLabelToUDPSport(fl)
		}
		be.PutUint16(ah.AV[avOffRLID:], sport)
	}
	ah.AV[avOffStatRateSL] = mlx5Rate(attr.StaticRate)<<4 | (attr.SL&7)<<1
	setGRH(ah, &attr.GRH, 0)
	copy(ah.AV[avOffRMAC:], dmac[:])
	return ah, nil
}
