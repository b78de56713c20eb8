package rdmatool

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/netlinkrdma"
)

func (t *tool) statHelp() int {
	n := progName
	t.outf("Usage: %s [ OPTIONS ] statistic { COMMAND | help }\n", n)
	for _, l := range []string{
		"statistic OBJECT show",
		"statistic OBJECT show link [ DEV/PORT_INDEX ] [ FILTER-NAME FILTER-VALUE ]",
		"statistic OBJECT mode",
		"statistic OBJECT set COUNTER_SCOPE [DEV/PORT_INDEX] auto {CRITERIA | off}",
		"statistic OBJECT bind COUNTER_SCOPE [DEV/PORT_INDEX] [OBJECT-ID] [COUNTER-ID]",
		"statistic OBJECT unbind COUNTER_SCOPE [DEV/PORT_INDEX] [COUNTER-ID]",
		"statistic show",
		"statistic show link [ DEV/PORT_INDEX ]",
		"statistic mode [ supported ]",
		"statistic mode [ supported ] link [ DEV/PORT_INDEX ]",
		"statistic set link [ DEV/PORT_INDEX ] optional-counters [ OPTIONAL-COUNTERS ]",
		"statistic unset link [ DEV/PORT_INDEX ] optional-counters",
	} {
		t.outf("       %s %s\n", n, l)
	}
	t.outf("where  OBJECT: = { qp }\n")
	t.outf("       CRITERIA : = { type }\n")
	t.outf("       COUNTER_SCOPE: = { link | dev }\n")
	t.outf("       FILTER_NAME: = { cntn | lqpn | pid }\n")
	t.outf("Examples:\n")
	for _, l := range []string{
		"statistic qp show",
		"statistic qp show link mlx5_2/1",
		"statistic qp mode",
		"statistic qp mode link mlx5_0",
		"statistic qp set link mlx5_2/1 auto type on",
		"statistic qp set link mlx5_2/1 auto off",
		"statistic qp bind link mlx5_2/1 lqpn 178",
		"statistic qp bind link mlx5_2/1 lqpn 178 cntn 4",
		"statistic qp unbind link mlx5_2/1 cntn 4",
		"statistic qp unbind link mlx5_2/1 cntn 4 lqpn 178",
		"statistic show",
		"statistic show link mlx5_2/1",
		"statistic mode",
		"statistic mode link mlx5_2/1",
		"statistic mode supported",
		"statistic mode supported link mlx5_2/1",
		"statistic set link mlx5_2/1 optional-counters cc_rx_ce_pkts,cc_rx_cnp_pkts",
		"statistic unset link mlx5_2/1 optional-counters",
	} {
		t.outf("       %s %s\n", n, l)
	}
	return 0
}

func (t *tool) cmdStat() int {
	return t.execCmd([]command{
		{"", t.statShow},
		{"show", t.statShow},
		{"list", t.statShow},
		{"help", t.statHelp},
		{"qp", t.statQP},
		{"mr", t.statMR},
		{"mode", t.statMode},
		{"set", t.statSet},
		{"unset", t.statUnset},
	}, "statistic command")
}

func (t *tool) statShow() int {
	return t.execCmd([]command{
		{"", t.statShowLink},
		{"link", t.statShowLink},
		{"mr", t.statMR},
		{"help", t.statHelp},
	}, "parameter")
}

func (t *tool) statShowLink() int {
	return t.execLink(func() int {
		if t.portIdx == 0 {
			return 0
		}
		s, err := t.be.PortStats(t.devIdx, t.portIdx)
		if err != nil {
			return t.nlError(err)
		}
		p := t.p
		p.openObject("")
		p.str(printAny, "ifname", "link %s/", s.DevName)
		p.uint(printAny, "port", "%d ", s.Port)
		t.printHWCounters(s.Counters)
		p.newline()
		return 0
	}, false)
}

// printHWCounters prints counters as "name value" pairs, in text each on
// its own indented line.
func (t *tool) printHWCounters(cs []netlinkrdma.HWCounter) {
	for _, c := range cs {
		t.p.newlineIndent()
		t.resU64(c.Name, c.Value, true)
	}
}

var statFilters = []filterSpec{
	{"cntn", true, false}, {"lqpn", true, false}, {"pid", true, false}, {"qp-type", false, false},
}

func (t *tool) statQP() int {
	return t.execCmd([]command{
		{"", t.statQPShow},
		{"show", t.statQPShow},
		{"list", t.statQPShow},
		{"mode", t.statQPMode},
		{"set", t.statQPSet},
		{"bind", t.statQPBind},
		{"unbind", t.statQPUnbind},
		{"help", t.statHelp},
	}, "parameter")
}

func (t *tool) statQPShow() int {
	link := func() int {
		return t.execLink(func() int {
			if t.portIdx == 0 {
				return 0
			}
			if ret := t.buildFilters(statFilters); ret != 0 {
				return ret
			}
			cs, err := t.be.QPCounters(t.devIdx, t.portIdx)
			if err != nil {
				return t.nlError(err)
			}
			return each(cs, t.qpCounterLine)
		}, false)
	}
	return t.execCmd([]command{{"", link}, {"link", link}, {"help", t.statHelp}}, "parameter")
}

func (t *tool) qpCounterLine(c *netlinkrdma.QPCounter) int {
	has := c.Present.Has
	if t.filtered("cntn", c.ID, true) || t.strFiltered("qp-type", qpTypeName(c.Type)) {
		return 0
	}
	comm, ok := t.comm(&c.ResBase)
	if t.filtered("pid", c.PID, has(abi.RDMA_NLDEV_ATTR_RES_PID)) {
		return 0
	}
	for _, q := range c.LQPNs {
		if t.filtered("lqpn", q, true) {
			return 0
		}
	}
	p := t.p
	p.openObject("")
	t.printLink(&c.ResBase, c.Port)
	p.uint(printAny, "cntn", "cntn %d ", c.ID)
	if has(abi.RDMA_NLDEV_ATTR_RES_TYPE) {
		p.str(printAny, "qp-type", "qp-type %s ", qpTypeName(c.Type))
	}
	t.resU64("pid", uint64(c.PID), has(abi.RDMA_NLDEV_ATTR_RES_PID))
	t.printComm(&c.ResBase, comm, ok)
	t.printHWCounters(c.Counters)
	p.openArray(printJSON, "lqpn", "")
	p.text(p.lineSep() + "    LQPN: <")
	for i, q := range c.LQPNs {
		if i > 0 {
			p.text(",")
		}
		p.uint(printAny, "", "%d", q)
	}
	p.closeArray(printAny, ">")
	p.newline()
	return 0
}

// autoModeString renders a QP counter mode as iproute2 7.3 does ("qp auto
// type on optional-counters off", "qp auto off").
func autoModeString(m netlinkrdma.QPCounterMode) string {
	if m.Mode != netlinkrdma.CounterModeAuto || m.AutoMask == 0 {
		return "qp auto off"
	}
	var names []string
	if m.AutoMask&netlinkrdma.CounterMaskQPType != 0 {
		names = append(names, "type")
	}
	if m.AutoMask&netlinkrdma.CounterMaskPID != 0 {
		names = append(names, "pid")
	}
	s := "qp auto"
	if len(names) > 0 {
		s += " " + strings.Join(names, ",")
	}
	opt := "off"
	if m.OptionalCounters {
		opt = "on"
	}
	return s + " on optional-counters " + opt
}

func (t *tool) statQPModeOne() int {
	if t.portIdx == 0 {
		return 0
	}
	m, err := t.be.QPCounterMode(t.devIdx, t.portIdx)
	if err != nil {
		return t.nlError(err)
	}
	p := t.p
	p.openObject("")
	r := netlinkrdma.ResBase{DevIndex: m.DevIndex, DevName: m.DevName, Present: m.Present}
	t.printLink(&r, m.Port)
	p.str(printAny, "mode", "mode %s ", autoModeString(m))
	p.newline()
	return 0
}

func (t *tool) statQPMode() int {
	link := func() int { return t.execLink(t.statQPModeOne, false) }
	return t.execCmd([]command{{"", link}, {"link", link}, {"help", t.statHelp}}, "parameter")
}

func (t *tool) statQPSet() int {
	return t.statLinkCmd(false, func() int {
		if t.portIdx == 0 {
			return 0
		}
		return t.execCmd([]command{{"", t.statQPModeOne}, {"auto", t.statQPSetAuto}}, "parameter")
	})
}

func (t *tool) statQPSetAuto() int {
	if t.noArg() {
		return -int(unix.EINVAL)
	}
	set := func(mask netlinkrdma.CounterMask) int {
		var opts *netlinkrdma.QPCounterAutoOptions
		if !t.noArg() {
			on, ret := t.statOnOff("optional-counters")
			if ret != 0 {
				return ret
			}
			opts = &netlinkrdma.QPCounterAutoOptions{OptionalCounters: &on}
		}
		return t.nlResult(t.be.SetQPCounterAuto(t.devIdx, t.portIdx, mask, opts))
	}
	if strcmpx(t.arg(), "off") {
		t.argInc()
		return set(0)
	}
	var mask netlinkrdma.CounterMask
	for _, m := range strings.Split(t.arg(), ",") {
		if m == "" {
			continue
		}
		switch m {
		case "type":
			mask |= netlinkrdma.CounterMaskQPType
		case "pid":
			mask |= netlinkrdma.CounterMaskPID
		default:
			t.errf("Unknown auto mode '%s'.\n", m)
			mask = 0
		}
		if mask == 0 {
			break
		}
	}
	if mask != 0 {
		t.argInc()
	}
	if mask == 0 || t.noArg() {
		return -int(unix.EINVAL)
	}
	if strcmpx(t.arg(), "on") {
		t.argInc()
		return set(mask)
	}
	return t.einvalf("Unknown parameter '%s'.\n", t.arg())
}

// statArg consumes "NAME VALUE" and returns VALUE (stat_get_arg).
func (t *tool) statArg(name string) (uint32, int) {
	if !strcmpx(t.arg(), name) {
		return 0, -int(unix.EINVAL)
	}
	t.argInc()
	if strings.ContainsAny(t.arg(), ",-") {
		t.errf("The parameter %s shouldn't include range\n", name)
		return 0, -int(unix.EINVAL)
	}
	v := strtolPrefix(t.arg())
	t.argInc()
	if v < 0 {
		return 0, int(v)
	}
	return uint32(v), 0
}

// strtolPrefix is strtol(s, NULL, 10) truncated to a C int.
func strtolPrefix(s string) int32 {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	n := 0
	if n < len(s) && (s[n] == '+' || s[n] == '-') {
		n++
	}
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	v, _ := strconv.ParseInt(s[:n], 10, 64)
	return int32(v)
}

func (t *tool) statQPBind() int {
	return t.statQPCounterCmd(func() int {
		lqpn, ret := t.statArg("lqpn")
		if ret != 0 {
			return ret
		}
		var cntn *uint32
		if !t.noArg() {
			c, ret := t.statArg("cntn")
			if ret != 0 {
				return ret
			}
			cntn = &c
		}
		return t.nlResult(t.be.BindQPCounter(t.devIdx, t.portIdx, lqpn, cntn))
	})
}

func (t *tool) statQPUnbind() int {
	return t.statQPCounterCmd(func() int {
		cntn, ret := t.statArg("cntn")
		if ret != 0 {
			return ret
		}
		unbind := func(lqpn uint32) int {
			return t.nlResult(t.be.UnbindQPCounter(t.devIdx, t.portIdx, cntn, lqpn))
		}
		if !t.noArg() {
			lqpn, ret := t.statArg("lqpn")
			if ret != 0 {
				return ret
			}
			return unbind(lqpn)
		}
		// iproute2 reports no message when the counter lookup fails.
		c, err := t.be.QPCounter(t.devIdx, t.portIdx, cntn)
		if err != nil {
			return -1
		}
		for _, q := range c.LQPNs {
			if unbind(q) != 0 {
				return -1
			}
		}
		return 0
	})
}

// statLinkCmd runs a statistic command whose argument is "link [DEV/PORT_INDEX]": op for the link (execLink,
// strict as it takes it); nothing or "help" prints the usage.
func (t *tool) statLinkCmd(strict bool, op func() int) int {
	link := func() int { return t.execLink(op, strict) }
	return t.execCmd([]command{{"", t.statHelp}, {"link", link}, {"help", t.statHelp}}, "parameter")
}

// statQPCounterCmd is the frame of "stat qp bind" and "stat qp unbind": the link, its filters, then op.
func (t *tool) statQPCounterCmd(op func() int) int {
	return t.statLinkCmd(true, func() int {
		if t.noArg() {
			t.statHelp()
			return -int(unix.EINVAL)
		}
		if ret := t.buildFilters(statFilters); ret != 0 {
			return ret
		}
		return op()
	})
}

func (t *tool) statModeLink(supported bool) func() int {
	return func() int {
		return t.execLink(func() int {
			if t.portIdx == 0 {
				return 0
			}
			s, err := t.be.CounterStatus(t.devIdx, t.portIdx)
			if err != nil {
				return t.nlError(err)
			}
			p := t.p
			first := true
			for _, c := range s.Counters {
				if !c.Optional || !(supported || c.Enabled) {
					continue
				}
				if first {
					p.openObject("")
					p.str(printAny, "ifname", "link %s/", s.DevName)
					p.uint(printAny, "port", "%d ", s.Port)
					if supported {
						p.openArray(printAny, "supported optional-counters", "supported optional-counters")
					} else {
						p.openArray(printAny, "optional-counters", "optional-counters")
					}
					p.text(" ")
					first = false
				} else {
					p.text(",")
				}
				p.newlineIndent()
				p.str(printAny, "", "%s", c.Name)
			}
			if !first {
				p.closeArray(printJSON, "")
				p.newline()
			}
			return 0
		}, false)
	}
}

func (t *tool) statMode() int {
	supported := func() int {
		l := t.statModeLink(true)
		return t.execCmd([]command{{"", l}, {"link", l}, {"help", t.statHelp}}, "parameter")
	}
	l := t.statModeLink(false)
	return t.execCmd([]command{
		{"", l}, {"link", l}, {"show", l}, {"supported", supported}, {"help", t.statHelp},
	}, "parameter")
}

// optionalCountersArg consumes "optional-counters [LIST]"
// (stat_get_arg_str).
func (t *tool) optionalCountersArg(allowEmpty bool) (string, int) {
	if !strcmpx(t.arg(), "optional-counters") {
		t.errf("Unknown parameter '%s'.\n", t.arg())
		return "", -int(unix.EINVAL)
	}
	t.argInc()
	v := ""
	if !t.noArg() {
		v = t.arg()
		t.argInc()
	}
	if (allowEmpty && v != "") || (!allowEmpty && v == "") {
		t.statHelp()
		return "", -int(unix.EINVAL)
	}
	return v, 0
}

func (t *tool) statSet() int {
	return t.statLinkCmd(true, func() int {
		if t.portIdx == 0 {
			return 0
		}
		s, err := t.be.CounterStatus(t.devIdx, t.portIdx)
		if err != nil {
			return t.nlError(err)
		}
		if ret, err := t.statSetCounters(s); err != nil {
			// iproute2 sends the set request from inside its receive
			// callback: the failure is reported by both receive loops.
			t.nlError(err)
			return t.nlError(err)
		} else if ret != 0 {
			// The callback's own failures are reported with perror
			// and whatever errno holds (see tool.errno).
			return t.nlError(t.errno)
		}
		return 0
	})
}

// statSetCounters enables the optional counters named by the arguments.
func (t *tool) statSetCounters(s netlinkrdma.PortStats) (int, error) {
	if t.noArg() {
		t.statHelp()
		return -int(unix.EINVAL), nil
	}
	list, ret := t.optionalCountersArg(false)
	if ret != 0 {
		return ret, nil
	}
	var idx []uint32
	for _, name := range strings.Split(list, ",") {
		if name == "" {
			continue
		}
		found := false
		for _, c := range s.Counters {
			if !c.Present.Has(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX) {
				return -int(unix.EINVAL), nil
			}
			if c.Optional && c.Name == name {
				idx = append(idx, c.Index)
				found = true
			}
		}
		if !found {
			return -int(unix.EINVAL), nil
		}
	}
	if err := t.be.SetOptionalCounters(t.devIdx, t.portIdx, idx); err != nil {
		return -1, err
	}
	return 0, nil
}

func (t *tool) statUnset() int {
	return t.statLinkCmd(true, func() int {
		if t.noArg() {
			t.statHelp()
			return -int(unix.EINVAL)
		}
		if _, ret := t.optionalCountersArg(true); ret != 0 {
			return ret
		}
		return t.nlResult(t.be.SetOptionalCounters(t.devIdx, t.portIdx, nil))
	})
}

func (t *tool) statMR() int {
	dump, doit := listing(t,
		func() ([]netlinkrdma.MRStats, error) { return t.be.MRStats(t.devIdx) },
		func(id uint32) (netlinkrdma.MRStats, error) { return t.be.MRStat(t.devIdx, id) },
		t.statMRLine)
	return t.resRun(resFunc{valid: []filterSpec{{"mrn", true, true}}, strict: true, dump: dump, doit: doit})
}

func (t *tool) statMRLine(m *netlinkrdma.MRStats) int {
	has := m.Present.Has
	if t.filtered("mrn", m.MRN, has(abi.RDMA_NLDEV_ATTR_RES_MRN)) {
		return 0
	}
	t.p.openObject("")
	t.printDev(&m.ResBase)
	t.resU32("mrn", m.MRN, has(abi.RDMA_NLDEV_ATTR_RES_MRN))
	if has(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS) {
		t.printHWCounters(m.Counters)
	}
	t.p.newline()
	return 0
}

// statOnOff consumes "NAME on|off" (stat_get_on_off).
func (t *tool) statOnOff(name string) (on bool, ret int) {
	if !strcmpx(t.arg(), name) {
		return false, -int(unix.EINVAL)
	}
	t.argInc()
	if !t.noArg() && strings.ContainsAny(t.arg(), ",-") {
		t.errf("The parameter %s shouldn't include range\n", name)
		return false, int(unix.EINVAL)
	}
	if t.noArg() {
		// iproute2 7.3 passes NULL to strcmp here and crashes; goverbs reports it.
		t.errf("Error: argument of \"%s\" must be one of \"off\", \"on\", not \"(null)\"\n", name)
		return false, -int(unix.EINVAL)
	}
	on, ok := t.parseOnOff(name, t.arg())
	if !ok {
		return false, -int(unix.EINVAL)
	}
	t.argInc()
	return on, 0
}
