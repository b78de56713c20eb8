package perfquery

import (
	"fmt"
	"strings"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/libumad"
)

// PerfMgt capability bits (ClassPortInfo CapabilityMask, host order).
const (
	capAllPortSelect = 1 << 8
	capExtWidth      = 1 << 9
	capExtWidthNoIET = 1 << 10
	capXmitWait      = 1 << 12
	capQP1Drop       = 1 << 15
	cap2AddlPortCtrs = 1 << 1
)

// Attribute IDs perfquery queries.
const (
	attrClassPortInfo = 0x0001
	attrPortCounters  = 0x0012
	attrPortCountersX = 0x001D
)

// portID is the part of libibmad's ib_portid_t perfquery prints and
// addresses with.
type portID struct {
	lid     int
	sl      int
	pkeyIdx int
}

// str is portid2str.
func (p portID) str() string {
	if p.lid > 0 {
		return fmt.Sprintf("Lid %d", p.lid)
	}
	return "DR path slid 0; dlid 0; 0"
}

func (s *state) run(ops []string) int {
	mask := 0xffff
	if len(ops) > 1 {
		a := ops[1]
		if strings.Contains(a, ",") {
			for _, tok := range strings.Split(a, ",") {
				if tok == "" {
					continue
				}
				v, _, _ := cstd.Strtoul(tok, 0)
				if len(s.ports) < 255 {
					s.ports = append(s.ports, int(int32(v)))
				}
			}
			if len(s.ports) > 0 {
				s.port = s.ports[0]
			}
		} else if i := strings.IndexByte(a, '-'); i >= 0 {
			lo, _, _ := cstd.Strtoul(a[:i], 0)
			hi, _, _ := cstd.Strtoul(a[i+1:], 0)
			pmin, pmax := int(int32(lo)), int(int32(hi))
			if pmin >= pmax {
				s.exitf("main", "max port must be greater than min port in range")
			}
			for ; pmin <= pmax && len(s.ports) < 255; pmin++ {
				s.ports = append(s.ports, pmin)
			}
			s.port = s.ports[0]
		} else {
			v, _, _ := cstd.Strtoul(a, 0)
			s.port = int(int32(v))
		}
	}
	if len(ops) > 2 {
		v, _, _ := cstd.Strtoul(ops[2], 0)
		mask = int(int32(v))
	}

	conn := s.openPort()
	defer func() {
		conn.Close()
		for _, c := range s.closers {
			c()
		}
	}()

	var pid portID
	if len(ops) > 0 {
		lid, _, _ := cstd.Strtol(ops[0], 0)
		if lid <= 0 || lid >= 0xc000 {
			s.exitf("main", "can't resolve destination port %s", ops[0])
		}
		pid = portID{lid: int(lid), pkeyIdx: s.pkeyIdx}
	} else {
		port := s.caPort
		var name *string
		if n := s.pair.gsiName; s.pairSet {
			name = &n
		}
		found, ok := s.u.resolveCAName(name, &port)
		var p *libumad.Port
		if ok {
			if ca, err := s.u.ReadCA(found); err == nil && port >= 0 && port < libumad.CAMaxPorts {
				p = ca.Ports[port]
			}
		}
		if p == nil {
			s.exitf("main", "can't resolve self port %s", "(null)")
		}
		pid = portID{lid: int(p.BaseLID), sl: int(p.SMSL), pkeyIdx: s.pkeyIdx}
		s.port = p.PortNum
	}

	pc := s.pma(conn, pid, s.port, attrClassPortInfo)
	if pc == nil {
		s.exitf("main", "classportinfo query")
	}
	capMask := uint16(pc[2])<<8 | uint16(pc[3])
	capMask2 := (uint32(pc[4])<<24 | uint32(pc[5])<<16 | uint32(pc[6])<<8 | uint32(pc[7])) >> 5

	allLoop := false
	if capMask&capAllPortSelect == 0 {
		if s.allPorts == 0 && s.port == allPorts {
			s.exitf("main", "AllPortSelect not supported")
		}
		if s.allPorts != 0 && s.port == allPorts {
			allLoop = true
		}
	}
	switch {
	case s.xmtSL, s.rcvSL, s.xmtDisc, s.rcvErr, s.extSpeeds, s.longOnly != 0, s.smplCtl:
		// The other attributes (PortXmitDataSL, ..., PortSamplesControl)
		// are not cloned: no RoCE PMA answers them (rxe replies
		// "unsupported attribute").
		fmt.Fprintf(s.stderr, "%s: goverbs does not implement this counter attribute\n", s.cmd.Prog)
		return 255
	}
	loop := allLoop || (s.loopPorts != 0 && (s.allPorts != 0 || s.port == allPorts))
	startPort, numPorts := 1, 0
	if loop {
		nt, np, err := conn.NodeInfo(pid)
		if err != nil {
			s.exitf("main", "smp query nodeinfo failed")
		}
		numPorts = np
		if numPorts == 0 {
			s.exitf("main", "smp query nodeinfo: num ports invalid")
		}
		if nt == 2 {
			ep0, err := conn.SwitchEnhancedPort0(pid)
			if err != nil {
				s.exitf("main", "smp query nodeinfo failed")
			}
			if ep0 {
				startPort = 0
			}
		}
		if allLoop && s.loopPorts == 0 {
			s.warn("main", "Emulating AllPortSelect by iterating through all ports")
		}
	}
	agg := &aggregate{}
	if s.resetOnly == 0 {
		switch {
		case loop:
			for i := startPort; i <= numPorts; i++ {
				s.dump(conn, pid, i, capMask, capMask2, allLoop && s.loopPorts == 0, agg)
			}
			if allLoop && s.loopPorts == 0 {
				s.outputAggregate(pid, capMask, capMask2, agg)
			}
		case len(s.ports) > 1:
			for _, p := range s.ports {
				s.dump(conn, pid, p, capMask, capMask2, s.allPorts != 0 && s.loopPorts == 0, agg)
			}
			if s.allPorts != 0 && s.loopPorts == 0 {
				s.outputAggregate(pid, capMask, capMask2, agg)
			}
		default:
			s.dump(conn, pid, s.port, capMask, capMask2, false, agg)
		}
		if s.reset == 0 {
			return 0
		}
	}
	if len(ops) <= 2 && !s.extended {
		if capMask&capXmitWait != 0 {
			mask |= 1 << 16
		}
		if capMask&capQP1Drop != 0 {
			mask |= 1 << 17
		}
	}
	if s.extended {
		mask |= 0xfff0000
		if capMask&capXmitWait != 0 {
			mask |= 1 << 28
		}
		if capMask&capQP1Drop != 0 {
			mask |= 1 << 29
		}
	}
	resetOne := func(port int) {
		attr, what := uint16(attrPortCounters), "perf reset"
		if s.extended {
			attr, what = attrPortCountersX, "perf ext reset"
		}
		if err := conn.Reset(pid, port, attr, mask, s.timeout); err != nil {
			s.warn("mad_rpc", "_do_madrpc failed; dport (%s)", pid.str())
			s.exitf("reset_counters", "%s", what)
		}
	}
	switch {
	case loop:
		for i := startPort; i <= numPorts; i++ {
			resetOne(i)
		}
	case len(s.ports) > 1:
		for _, p := range s.ports {
			resetOne(p)
		}
	default:
		resetOne(s.port)
	}
	return 0
}

// pma is pma_query_via: the 192 data bytes of the reply, or nil after the
// warning libibmad's mad_rpc prints.
func (s *state) pma(conn Port, pid portID, port int, attr uint16) []byte {
	data, status, err := conn.PMAGet(pid, port, attr, s.timeout)
	if err != nil {
		s.warn("mad_rpc", "_do_madrpc failed; dport (%s)", pid.str())
		return nil
	}
	if status != 0 {
		return nil
	}
	return data
}

type aggregate struct {
	pc  [20]uint32 // pcFields order, then QP1Dropped at 19... (see aggregatePC)
	ext struct {
		counterSelect, counterSelect2 uint32
		v                             [8 + 15]uint64
	}
	pcCounterSelect uint32
	last            []byte // the last port's reply, which the C tool's aggregate output is written over
}

func satAdd(d *uint32, v uint32, max uint32) {
	if *d+v < *d || *d+v > max {
		*d = max
	} else {
		*d += v
	}
}

func satAdd64(d *uint64, v uint64) {
	if *d+v < *d {
		*d = ^uint64(0)
	} else {
		*d += v
	}
}

func (s *state) dump(conn Port, pid portID, port int, capMask uint16, capMask2 uint32, agg bool, a *aggregate) {
	var buf string
	if !s.extended {
		pc := s.pma(conn, pid, port, attrPortCounters)
		if pc == nil {
			s.exitf("dump_perfcounters", "perfquery")
		}
		if capMask&capXmitWait == 0 {
			if s.verbose > 0 {
				fmt.Fprintf(s.stdout, "[%d] %s: %s\n", s.cmd.Pid, "dump_perfcounters", "PortXmitWait not indicated so ignore this counter")
			}
			pcFields[19].set(pc, 0)
		}
		if agg {
			a.addPC(pc)
			return
		}
		buf = dumpPerfcounters(pc)
		fmt.Fprintf(s.stdout, "# Port counters: %s port %d (CapMask: 0x%02X)\n%s", pid.str(), port, capMask, buf)
		return
	}
	if capMask&capExtWidth == 0 && capMask&capExtWidthNoIET == 0 {
		s.warn("dump_perfcounters", "PerfMgt ClassPortInfo CapMask 0x%02X; No extended counter support indicated\n", capMask)
	}
	pc := s.pma(conn, pid, port, attrPortCountersX)
	if pc == nil {
		s.exitf("dump_perfcounters", "perfextquery")
	}
	if agg {
		a.addExt(pc, capMask, capMask2)
		return
	}
	buf = dumpExt(pc, capMask, capMask2)
	fmt.Fprintf(s.stdout, "# Port extended counters: %s port %d (CapMask: 0x%02X CapMask2: 0x%07X)\n%s", pid.str(), port, capMask, capMask2, buf)
}

func dumpExt(pc []byte, capMask uint16, capMask2 uint32) string {
	buf := dumpFields(pc, pcExtFields[:6])
	if capMask&capExtWidth != 0 {
		buf += dumpFields(pc, pcExtFields[6:])
	}
	if capMask2&cap2AddlPortCtrs != 0 {
		buf += dumpFields(pc, pcExtErrFields)
	}
	return buf
}

// pcMax is each PortCounters field's saturation value in
// aggregate_perfcounters (by pcFields index; QP1Dropped separately).
var pcMax = [20]uint32{0, 0, 0xffff, 0xff, 0xff, 0xffff, 0xffff, 0xffff, 0xffff, 0xff, 0xff, 0, 0xf, 0xf, 0xffff,
	0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}

func (a *aggregate) addPC(pc []byte) {
	a.last = append([]byte(nil), pc...)
	a.pcCounterSelect = pcFields[1].get(pc)
	for i, fl := range pcFields {
		if i < 2 || i == 11 { // PortSelect, CounterSelect, CounterSelect2 are not summed
			continue
		}
		satAdd(&a.pc[i], fl.get(pc), pcMax[i])
	}
	satAdd(&a.pc[11], pcQP1Dropped.get(pc), 0xffff) // slot 11 holds QP1Dropped's sum
}

func (s *state) outputAggregate(pid portID, capMask uint16, capMask2 uint32, a *aggregate) {
	pc := make([]byte, 1024)
	copy(pc, a.last)
	if !s.extended {
		pcFields[0].set(pc, allPorts)
		pcFields[1].set(pc, a.pcCounterSelect)
		for i, fl := range pcFields[:14] {
			if i < 2 || i == 11 {
				continue
			}
			fl.set(pc, a.pc[i])
		}
		pcQP1Dropped.set(pc, a.pc[11])
		for i := 14; i < len(pcFields); i++ {
			pcFields[i].set(pc, a.pc[i])
		}
		fmt.Fprintf(s.stdout, "# Port counters: %s port %d (CapMask: 0x%02X)\n%s", pid.str(), allPorts, capMask, dumpPerfcounters(pc))
		return
	}
	pcExtFields[0].set(pc, allPorts)
	pcExtFields[1].set(pc, a.ext.counterSelect)
	for i := 2; i < 6; i++ {
		pcExtFields[i].set64(pc, a.ext.v[i])
	}
	if capMask&capExtWidth != 0 {
		for i := 6; i < 10; i++ {
			pcExtFields[i].set64(pc, a.ext.v[i])
		}
	}
	if capMask2&cap2AddlPortCtrs != 0 {
		pcExtErrFields[0].set(pc, a.ext.counterSelect2)
		for i := 1; i < len(pcExtErrFields); i++ {
			pcExtErrFields[i].set64(pc, a.ext.v[10+i-1])
		}
	}
	fmt.Fprintf(s.stdout, "# Port extended counters: %s port %d (CapMask: 0x%02X CapMask2: 0x%07X)\n%s", pid.str(), allPorts, capMask, capMask2, dumpExt(pc, capMask, capMask2))
}

func (a *aggregate) addExt(pc []byte, capMask uint16, capMask2 uint32) {
	a.last = append([]byte(nil), pc...)
	a.ext.counterSelect = pcExtFields[1].get(pc)
	for i := 2; i < 6; i++ {
		satAdd64(&a.ext.v[i], pcExtFields[i].get64(pc))
	}
	if capMask&capExtWidth != 0 {
		for i := 6; i < 10; i++ {
			satAdd64(&a.ext.v[i], pcExtFields[i].get64(pc))
		}
	}
	if capMask2&cap2AddlPortCtrs != 0 {
		a.ext.counterSelect2 = pcExtErrFields[0].get(pc)
		for i := 1; i < len(pcExtErrFields); i++ {
			satAdd64(&a.ext.v[10+i-1], pcExtErrFields[i].get64(pc))
		}
	}
}
