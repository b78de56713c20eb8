package uverbs

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Rate is an InfiniBand static rate (enum ibv_rate), as AHAttr.StaticRate and QPAttr's address vectors carry
// it. RateMax (0) means the port's own rate.
type Rate uint8

// Static rates. The numbering is the InfiniBand architecture's, not ordered by speed.
const (
	RateMax      Rate = 0
	Rate2_5Gbps  Rate = 2
	Rate5Gbps    Rate = 5
	Rate10Gbps   Rate = 3
	Rate20Gbps   Rate = 6
	Rate30Gbps   Rate = 4
	Rate40Gbps   Rate = 7
	Rate60Gbps   Rate = 8
	Rate80Gbps   Rate = 9
	Rate120Gbps  Rate = 10
	Rate14Gbps   Rate = 11
	Rate56Gbps   Rate = 12
	Rate112Gbps  Rate = 13
	Rate168Gbps  Rate = 14
	Rate25Gbps   Rate = 15
	Rate100Gbps  Rate = 16
	Rate200Gbps  Rate = 17
	Rate300Gbps  Rate = 18
	Rate28Gbps   Rate = 19
	Rate50Gbps   Rate = 20
	Rate400Gbps  Rate = 21
	Rate600Gbps  Rate = 22
	Rate800Gbps  Rate = 23
	Rate1200Gbps Rate = 24
)

// rateInfo is each rate's multiple of 2.5 Gb/s (0: none, the rates of FDR and later encodings) and its
// bandwidth in Mb/s, as libibverbs' ibv_rate_to_mult and ibv_rate_to_mbps give them.
var rateInfo = [...]struct {
	mult int
	mbps int
	name string
}{
	Rate2_5Gbps: {1, 2500, "2.5 Gbps"}, Rate5Gbps: {2, 5000, "5 Gbps"}, Rate10Gbps: {4, 10000, "10 Gbps"},
	Rate20Gbps: {8, 20000, "20 Gbps"}, Rate30Gbps: {12, 30000, "30 Gbps"}, Rate40Gbps: {16, 40000, "40 Gbps"},
	Rate60Gbps: {24, 60000, "60 Gbps"}, Rate80Gbps: {32, 80000, "80 Gbps"}, Rate120Gbps: {48, 120000, "120 Gbps"},
	Rate14Gbps: {0, 14062, "14 Gbps"}, Rate56Gbps: {0, 56250, "56 Gbps"}, Rate112Gbps: {0, 112500, "112 Gbps"},
	Rate168Gbps: {0, 168750, "168 Gbps"}, Rate25Gbps: {0, 25781, "25 Gbps"}, Rate100Gbps: {0, 103125, "100 Gbps"},
	Rate200Gbps: {0, 206250, "200 Gbps"}, Rate300Gbps: {0, 309375, "300 Gbps"}, Rate28Gbps: {11, 28125, "28 Gbps"},
	Rate50Gbps: {20, 53125, "50 Gbps"}, Rate400Gbps: {160, 425000, "400 Gbps"}, Rate600Gbps: {240, 637500, "600 Gbps"},
	Rate800Gbps: {320, 850000, "800 Gbps"}, Rate1200Gbps: {480, 1275000, "1200 Gbps"},
}

func (r Rate) String() string {
	if r == RateMax {
		return "max"
	}
	if int(r) < len(rateInfo) && rateInfo[r].name != "" {
		return rateInfo[r].name
	}
	return "Rate(" + strconv.Itoa(int(r)) + ")"
}

// Mult is the rate as a multiple of 2.5 Gb/s, or -1 for RateMax, an unknown rate and the rates that are not a
// whole multiple (ibv_rate_to_mult).
func (r Rate) Mult() int {
	if int(r) < len(rateInfo) && rateInfo[r].mult != 0 {
		return rateInfo[r].mult
	}
	return -1
}

// Mbps is the rate's bandwidth in Mb/s (the data rate after the link's encoding: 14 Gbps is 14062), or -1 for
// RateMax and an unknown rate (ibv_rate_to_mbps).
func (r Rate) Mbps() int {
	if int(r) < len(rateInfo) && rateInfo[r].mbps != 0 {
		return rateInfo[r].mbps
	}
	return -1
}

// RateFromMult is the rate that is mult times 2.5 Gb/s, or RateMax when none is (mult_to_ibv_rate).
func RateFromMult(mult int) Rate {
	for r, i := range rateInfo {
		if i.mult != 0 && i.mult == mult {
			return Rate(r)
		}
	}
	return RateMax
}

// RateFromMbps is the rate of bandwidth mbps as Mbps reports it, or RateMax when none is (mbps_to_ibv_rate).
func RateFromMbps(mbps int) Rate {
	for r, i := range rateInfo {
		if i.mbps != 0 && i.mbps == mbps {
			return Rate(r)
		}
	}
	return RateMax
}

// FlowLabelToUDPSport is the UDP source port a RoCE v2 packet of IPv6 flow label fl carries, as the kernel and
// libibverbs derive it (ibv_flow_label_to_udp_sport): the label's 20 bits folded to 14 and placed in the range
// 0xC000-0xFFFF.
func FlowLabelToUDPSport(fl uint32) uint16 {
	low, high := fl&0x03fff, fl&0xfc000
	low ^= high >> 14
	return uint16(low | 0xc000)
}

// QPTypeSupported reports whether a capability word whose bit n stands for QP type n (the supported_qpts of
// DeviceAttr's TSO and packet-pacing capabilities, RSSSupportedQPTs) includes t (ibv_is_qpt_supported).
func QPTypeSupported(caps uint32, t QPType) bool {
	return t < 32 && caps&(1<<t) != 0
}

// PKeyIndex is the index of pkey in port's P_Key table (ibv_get_pkey_index): the first entry that equals it,
// full or limited membership alike as stored. A P_Key the table does not hold is ENOENT.
func (c *Context) PKeyIndex(port int, pkey uint16) (int, error) {
	dir := filepath.Join(c.dev.SysfsPath(), "ports", strconv.Itoa(port), "pkeys")
	for i := 0; ; i++ {
		v, err := c.QueryPKey(port, i)
		if err != nil {
			if i > 0 && errors.Is(err, unix.EINVAL) { // past the table's last entry
				return 0, wrapf(c.dev.Name, fmt.Errorf("P_Key %#04x not in the table (%s): %w", pkey, dir, unix.ENOENT),
					"get P_Key index on port %d", port)
			}
			return 0, err
		}
		if v == pkey {
			return i, nil
		}
	}
}
