package perfquery

import "fmt"

// libibmad's field engine (fields.c): a field is (bitoffs, bitlen) in
// libibmad's own encoding, where bytes within each 32-bit word are read
// mirrored (p[3^idx]) and BITSOFFS converts an IB big-endian bit offset.
// Reproducing the engine rather than the IB layout keeps libibmad's quirks:
// PortCounters' QP1Dropped is declared {160, 16}, which reads the same two
// bytes as VL15Dropped (BITSOFFS(176, 16)), so perfquery prints VL15Dropped's
// value for both.

type field struct {
	bitoffs, bitlen int
	name            string
	hex             bool
}

func bitsoffs(o, w int) int { return (o &^ 31) | (32 - (o & 31) - w) }

func f(o, w int, name string, hex bool) field { return field{bitsoffs(o, w), w, name, hex} }

var (
	pcFields = []field{ // IB_PC_FIRST_F .. IB_PC_LAST_F
		f(8, 8, "PortSelect", false),
		f(16, 16, "CounterSelect", true),
		f(32, 16, "SymbolErrorCounter", false),
		f(48, 8, "LinkErrorRecoveryCounter", false),
		f(56, 8, "LinkDownedCounter", false),
		f(64, 16, "PortRcvErrors", false),
		f(80, 16, "PortRcvRemotePhysicalErrors", false),
		f(96, 16, "PortRcvSwitchRelayErrors", false),
		f(112, 16, "PortXmitDiscards", false),
		f(128, 8, "PortXmitConstraintErrors", false),
		f(136, 8, "PortRcvConstraintErrors", false),
		f(144, 8, "CounterSelect2", true),
		f(152, 4, "LocalLinkIntegrityErrors", false),
		f(156, 4, "ExcessiveBufferOverrunErrors", false),
		f(176, 16, "VL15Dropped", false),
		{192, 32, "PortXmitData", false},
		{224, 32, "PortRcvData", false},
		{256, 32, "PortXmitPkts", false},
		{288, 32, "PortRcvPkts", false},
		{320, 32, "PortXmitWait", false},
	}
	pcQP1Dropped = field{160, 16, "QP1Dropped", false} // IB_PC_QP1_DROP_F

	pcExtFields = []field{ // IB_PC_EXT_FIRST_F .. IB_PC_EXT_LAST_F
		f(8, 8, "PortSelect", false),
		f(16, 16, "CounterSelect", true),
		{64, 64, "PortXmitData", false},
		{128, 64, "PortRcvData", false},
		{192, 64, "PortXmitPkts", false},
		{256, 64, "PortRcvPkts", false},
		{320, 64, "PortUnicastXmitPkts", false},
		{384, 64, "PortUnicastRcvPkts", false},
		{448, 64, "PortMulticastXmitPkts", false},
		{512, 64, "PortMulticastRcvPkts", false},
	}
	pcExtErrFields = []field{ // IB_PC_EXT_COUNTER_SELECT2_F .. IB_PC_EXT_ERR_LAST_F
		{32, 32, "CounterSelect2", true},
		{576, 64, "SymbolErrorCounter", false},
		{640, 64, "LinkErrorRecoveryCounter", false},
		{704, 64, "LinkDownedCounter", false},
		{768, 64, "PortRcvErrors", false},
		{832, 64, "PortRcvRemotePhysicalErrors", false},
		{896, 64, "PortRcvSwitchRelayErrors", false},
		{960, 64, "PortXmitDiscards", false},
		{1024, 64, "PortXmitConstraintErrors", false},
		{1088, 64, "PortRcvConstraintErrors", false},
		{1152, 64, "LocalLinkIntegrityErrors", false},
		{1216, 64, "ExcessiveBufferOverrunErrors", false},
		{1280, 64, "VL15Dropped", false},
		{1344, 64, "PortXmitWait", false},
		{1408, 64, "QP1Dropped", false},
	}
)

// get is mad_decode_field for fields of up to 32 bits (_get_field).
func (fl field) get(p []byte) uint32 {
	if fl.bitlen == 64 {
		panic("get on a 64-bit field")
	}
	prebits := (8 - (fl.bitoffs & 7)) & 7
	postbits := (fl.bitoffs + fl.bitlen) & 7
	bytelen := fl.bitlen / 8
	idx := fl.bitoffs / 8
	if bytelen == 0 && (fl.bitoffs&7)+fl.bitlen < 8 {
		return uint32(p[3^idx]>>(fl.bitoffs&7)) & (1<<fl.bitlen - 1)
	}
	var val, v uint32
	if prebits != 0 {
		v = uint32(p[3^idx] >> (8 - prebits))
		idx++
	}
	if postbits != 0 {
		i := (fl.bitoffs + fl.bitlen) / 8
		val = uint32(p[3^i]) & (1<<postbits - 1)
	}
	for idx += bytelen - 1; bytelen > 0; idx-- {
		val = val<<8 | uint32(p[3^idx])
		bytelen--
	}
	return val<<prebits | v
}

// set is mad_encode_field for fields of up to 32 bits (_set_field).
func (fl field) set(p []byte, val uint32) {
	prebits := (8 - (fl.bitoffs & 7)) & 7
	postbits := (fl.bitoffs + fl.bitlen) & 7
	bytelen := fl.bitlen / 8
	idx := fl.bitoffs / 8
	if bytelen == 0 && (fl.bitoffs&7)+fl.bitlen < 8 {
		m := byte((1<<fl.bitlen - 1) << (fl.bitoffs & 7))
		p[3^idx] &^= m
		p[3^idx] |= byte((val & (1<<fl.bitlen - 1)) << (fl.bitoffs & 7))
		return
	}
	if prebits != 0 {
		p[3^idx] &= byte(1<<(8-prebits) - 1)
		p[3^idx] |= byte((val & (1<<prebits - 1)) << (8 - prebits))
		idx++
		val >>= prebits
	}
	for ; bytelen > 0; bytelen-- {
		p[3^idx] = byte(val)
		idx++
		val >>= 8
	}
	if postbits != 0 {
		p[3^idx] &^= byte(1<<postbits - 1)
		p[3^idx] |= byte(val)
	}
}

func (fl field) get64(p []byte) uint64 {
	o := fl.bitoffs / 8
	var v uint64
	for _, b := range p[o : o+8] {
		v = v<<8 | uint64(b)
	}
	return v
}

func (fl field) set64(p []byte, v uint64) {
	o := fl.bitoffs / 8
	for i := 7; i >= 0; i-- {
		p[o+i] = byte(v)
		v >>= 8
	}
}

// dump is mad_dump_field: "Name:" padded with dots to 32 columns, then the
// value as mad_dump_uint or mad_dump_hex print it.
func (fl field) dump(p []byte) string {
	var val string
	if fl.bitlen == 64 {
		v := fl.get64(p)
		if fl.hex {
			val = fmt.Sprintf("0x%016x", v)
		} else {
			val = fmt.Sprintf("%d", v)
		}
	} else {
		v := fl.get(p)
		sz := (fl.bitlen + 7) / 8
		if fl.hex {
			switch sz {
			case 1:
				val = fmt.Sprintf("0x%02x", v&0xff)
			case 2:
				val = fmt.Sprintf("0x%04x", v&0xffff)
			case 3:
				val = fmt.Sprintf("0x%06x", v&0xffffff)
			default:
				val = fmt.Sprintf("0x%08x", v)
			}
		} else {
			switch sz {
			case 1:
				v &= 0xff
			case 2:
				v &= 0xffff
			}
			val = fmt.Sprintf("%d", v)
		}
	}
	dots := ""
	if n := len(fl.name); n < 32 {
		dots = "................................"[:32-n]
	}
	return fl.name + ":" + dots + val + "\n"
}

func dumpFields(p []byte, fs []field) string {
	s := ""
	for _, fl := range fs {
		s += fl.dump(p)
	}
	return s
}

// dumpPerfcounters is mad_dump_perfcounters.
func dumpPerfcounters(p []byte) string {
	return dumpFields(p, pcFields[:14]) + pcQP1Dropped.dump(p) + dumpFields(p, pcFields[14:])
}
