package rdmatool

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/netlinkrdma"
)

func (t *tool) devHelp() int {
	t.outf("Usage: %s dev show [DEV]\n", progName)
	t.outf("       %s dev add DEVNAME type TYPE parent PARENT_DEVNAME\n", progName)
	t.outf("       %s dev delete DEVNAME\n", progName)
	t.outf("       %s dev set [DEV] name DEVNAME\n", progName)
	t.outf("       %s dev set [DEV] netns { NSNAME | PID }\n", progName)
	t.outf("       %s dev set [DEV] adaptive-moderation [on|off]\n", progName)
	return 0
}

func (t *tool) cmdDev() int {
	return t.execCmd([]command{
		{"", t.devShow},
		{"add", t.devAdd},
		{"delete", t.devDel},
		{"show", t.devShow},
		{"list", t.devShow},
		{"set", t.devSet},
		{"help", t.devHelp},
	}, "dev command")
}

func (t *tool) devShow() int {
	return t.execDev(func() int {
		return t.execCmd([]command{{"", t.devShowOne}}, "parameter")
	})
}

func (t *tool) devShowOne() int {
	d, err := t.be.DeviceByIndex(t.devIdx)
	if err != nil {
		return t.nlError(err)
	}
	printDevice(t.p, d, t.details)
	return 0
}

// printDevice prints one device as `rdma dev show` does.
func printDevice(p *printer, d netlinkrdma.Device, details bool) {
	p.openObject("")
	p.uint(printAny, "ifindex", "%d: ", d.Index)
	p.str(printAny, "ifname", "%s: ", d.Name)
	if d.Present.Has(abi.RDMA_NLDEV_ATTR_DEV_NODE_TYPE) {
		p.str(printAny, "node_type", "node_type %s ", d.NodeType.String())
	}
	if d.Present.Has(abi.RDMA_NLDEV_ATTR_DEV_PROTOCOL) {
		p.str(printAny, "protocol", "protocol %s ", d.Protocol)
	}
	if d.Present.Has(abi.RDMA_NLDEV_ATTR_FW_VERSION) {
		p.str(printAny, "fw", "fw %s ", d.FirmwareVersion)
	}
	if d.Present.Has(abi.RDMA_NLDEV_ATTR_NODE_GUID) {
		p.str(printAny, "node_guid", "node_guid %s ", d.NodeGUID.String())
	}
	if d.Present.Has(abi.RDMA_NLDEV_ATTR_SYS_IMAGE_GUID) {
		p.str(printAny, "sys_image_guid", "sys_image_guid %s ", d.SysImageGUID.String())
	}
	if d.Present.Has(abi.RDMA_NLDEV_ATTR_DEV_TYPE) {
		p.str(printAny, "type", "type %s ", d.Type.String())
	}
	if d.Present.Has(abi.RDMA_NLDEV_ATTR_PARENT_NAME) {
		p.str(printAny, "parent", "parent %s ", d.Parent)
	}
	if details {
		// iproute2 skips settings other than 0 and 1, which the decoder
		// folds into a bool; only presence is checked here.
		if d.AdaptiveModeration != nil {
			p.onOff(printAny, "adaptive-moderation", "adaptive-moderation %s ", *d.AdaptiveModeration)
		}
		if d.Present.Has(abi.RDMA_NLDEV_ATTR_CAP_FLAGS) {
			printCaps(p, d.Caps.Names())
		}
	}
	p.newline()
}

// printCaps prints a capability list: "\n    caps: <A, B>" in text, an
// array "caps" in JSON.
func printCaps(p *printer, names []string) {
	p.text(p.lineSep() + "    caps: <")
	p.openArray(printJSON, "caps", "")
	for i, n := range names {
		if p.jsonCtx(printAny) {
			p.jw.str(n)
		} else if i < len(names)-1 {
			p.textf("%s, ", n)
		} else {
			p.textf("%s", n)
		}
	}
	p.closeArray(printAny, ">")
}

// devAdd is "dev add NAME type TYPE parent PARENT".
func (t *tool) devAdd() int {
	if t.noArg() {
		return t.einvalf("Please provide a device name to add.\n")
	}
	name := t.arg()
	t.argInc()
	return t.execCmd([]command{{"", t.devHelp}, {"type", func() int {
		if t.noArg() {
			return t.einvalf("Please provide a device type name.\n")
		}
		if !strings.EqualFold(t.arg(), "smi") {
			return t.einvalf("Invalid device type %s\n", t.arg())
		}
		t.argInc()
		return t.execCmd([]command{{"", t.devHelp}, {"parent", func() int {
			return t.execRequireDev(func() int {
				return t.nlResult(t.be.AddSubDevice(t.devIdx, name, netlinkrdma.DeviceTypeSMI))
			})
		}}}, "parameter")
	}}}, "parameter")
}

// devDel is "dev delete NAME".
func (t *tool) devDel() int { return t.execDelete(t.be.DeleteSubDevice) }

func (t *tool) devSet() int {
	return t.execRequireDev(func() int {
		return t.execCmd([]command{
			{"", t.devHelp},
			{"name", t.devSetName},
			{"netns", t.devSetNetNS},
			{"adaptive-moderation", t.devSetDIM},
		}, "parameter")
	})
}

func (t *tool) devSetName() int {
	if t.noArg() {
		return t.einvalf("Please provide device new name.\n")
	}
	return t.nlResult(t.be.SetDeviceName(t.devIdx, t.arg()))
}

func (t *tool) devSetNetNS() int {
	if t.noArg() {
		return t.einvalf("Please provide device name.\n")
	}
	f, err := t.openNetNS(t.arg())
	if err != nil {
		return t.einvalf("Cannot open network namespace \"%s\": %s\n", t.arg(), errText(err))
	}
	defer f.Close()
	return t.nlResult(t.be.SetDeviceNetNS(t.devIdx, int(f.Fd())))
}

func (t *tool) devSetDIM() int {
	set := func(on bool) func() int {
		return func() int {
			return t.nlResult(t.be.SetAdaptiveModeration(t.devIdx, on))
		}
	}
	return t.execCmd([]command{{"", t.devHelp}, {"on", set(true)}, {"off", set(false)}}, "parameter")
}

func (t *tool) linkHelp() int {
	t.outf("Usage: %s link show [DEV/PORT_INDEX]\n", progName)
	t.outf("Usage: %s link add NAME type TYPE netdev NETDEV\n", progName)
	t.outf("Usage: %s link delete NAME\n", progName)
	return 0
}

func (t *tool) cmdLink() int {
	return t.execCmd([]command{
		{"", t.linkShow},
		{"add", t.linkAdd},
		{"delete", t.linkDel},
		{"show", t.linkShow},
		{"list", t.linkShow},
		{"help", t.linkHelp},
	}, "link command")
}

func (t *tool) linkShow() int {
	return t.execLink(func() int {
		if t.portIdx == 0 {
			return 0
		}
		return t.execCmd([]command{{"", t.linkShowOne}}, "parameter")
	}, true)
}

func (t *tool) linkShowOne() int {
	port, err := t.be.Port(t.devIdx, t.portIdx)
	if err != nil {
		return t.nlError(err)
	}
	printPort(t.p, port, t.details)
	return 0
}

// printPort prints one port as `rdma link show` does.
func printPort(p *printer, pt netlinkrdma.Port, details bool) {
	p.openObject("")
	p.uint(printJSON, "ifindex", "", pt.DevIndex)
	p.str(printAny, "ifname", "link %s/", pt.DevName)
	p.uint(printAny, "port", "%d ", pt.Index)
	if ib := pt.IB; ib != nil {
		if pt.Present.Has(abi.RDMA_NLDEV_ATTR_SUBNET_PREFIX) {
			p.str(printAny, "subnet_prefix", "subnet_prefix %s ", ib.SubnetPrefix.String())
		}
		if pt.Present.Has(abi.RDMA_NLDEV_ATTR_LID) {
			p.uint(printAny, "lid", "lid %d ", ib.LID)
		}
		if pt.Present.Has(abi.RDMA_NLDEV_ATTR_SM_LID) {
			p.uint(printAny, "sm_lid", "sm_lid %d ", ib.SMLID)
		}
		if pt.Present.Has(abi.RDMA_NLDEV_ATTR_LMC) {
			p.uint(printAny, "lmc", "lmc %d ", uint32(ib.LMC))
		}
	}
	if pt.Present.Has(abi.RDMA_NLDEV_ATTR_PORT_STATE) {
		p.str(printAny, "state", "state %s ", ipName(pt.State))
	}
	if pt.Present.Has(abi.RDMA_NLDEV_ATTR_PORT_PHYS_STATE) {
		p.str(printAny, "physical_state", "physical_state %s ", ipName(pt.PhysState))
	}
	if pt.Present.Has(abi.RDMA_NLDEV_ATTR_NDEV_NAME) && pt.Present.Has(abi.RDMA_NLDEV_ATTR_NDEV_INDEX) {
		p.str(printAny, "netdev", "netdev %s ", pt.NetdevName)
		f := ""
		if details {
			f = "netdev_index %d "
		}
		p.uint(printAny, "netdev_index", f, pt.NetdevIndex)
	}
	if details && pt.IB != nil && pt.Present.Has(abi.RDMA_NLDEV_ATTR_CAP_FLAGS) {
		printCaps(p, pt.IB.Caps.Names())
	}
	p.newline()
}

func (t *tool) linkAdd() int {
	if t.noArg() {
		return t.einvalf("Please provide a link name to add.\n")
	}
	t.linkName = t.arg()
	t.argInc()
	return t.execCmd([]command{{"", t.linkHelp}, {"type", t.linkAddType}}, "parameter")
}

func (t *tool) linkAddType() int {
	if t.noArg() {
		return t.einvalf("Please provide a link type name.\n")
	}
	t.linkType = t.arg()
	t.argInc()
	return t.execCmd([]command{{"", t.linkHelp}, {"netdev", t.linkAddNetdev}}, "parameter")
}

func (t *tool) linkAddNetdev() int {
	if t.noArg() {
		return t.einvalf("Please provide a net device name.\n")
	}
	return t.nlResult(t.be.LinkAdd(t.linkName, t.linkType, t.arg()))
}

// linkDel is "link delete NAME".
func (t *tool) linkDel() int { return t.execDelete(t.be.LinkDelIndex) }

func (t *tool) sysHelp() int {
	t.outf("Usage: %s system show [ netns ]\n", progName)
	t.outf("       %s system set netns { shared | exclusive }\n", progName)
	return 0
}

func (t *tool) cmdSys() int {
	return t.execCmd([]command{
		{"", t.sysShow},
		{"show", t.sysShow},
		{"set", t.sysSet},
		{"help", t.sysHelp},
	}, "system command")
}

func (t *tool) sysShow() int {
	return t.execCmd([]command{{"", t.sysShowOne}, {"netns", t.sysShowOne}, {"privileged-qkey", t.sysShowOne},
		{"monitor", t.sysShowOne}}, "parameter")
}

// sysShowOne prints the system settings. iproute2 opens no JSON
// context here, so the output is text even with -j.
func (t *tool) sysShowOne() int {
	s, err := t.be.System()
	if err != nil {
		return t.nlError(err)
	}
	printSystem(t.p, s)
	return 0
}

func printSystem(p *printer, s netlinkrdma.System) {
	if s.Present.Has(abi.RDMA_NLDEV_SYS_ATTR_NETNS_MODE) {
		mode := "unknown"
		if s.NetNSMode <= netlinkrdma.NetNSShared {
			mode = s.NetNSMode.String()
		}
		p.str(printAny, "netns", "netns %s ", mode)
	}
	if s.Present.Has(abi.RDMA_NLDEV_SYS_ATTR_PRIVILEGED_QKEY_MODE) {
		p.onOff(printAny, "privileged-qkey", "privileged-qkey %s ", s.PrivilegedQKey)
	}
	// iproute2 7.3 prints the monitor mode always, "off" when not sent.
	p.onOff(printAny, "monitor", "monitor %s ", s.Monitor)
	p.onOff(printAny, "copy-on-fork", "copy-on-fork %s", s.CopyOnFork)
	p.text(p.lineSep()) // print_nl
}

func (t *tool) sysSetHelp() int {
	t.outf("Usage: %s system set [PARAM] value\n", progName)
	t.outf("            system set netns { shared | exclusive }\n")
	t.outf("            system set privileged-qkey { on | off }\n")
	return 0
}

func (t *tool) sysSet() int {
	return t.execCmd([]command{
		{"", t.sysSetHelp},
		{"help", t.sysSetHelp},
		{"netns", t.sysSetNetNS},
		{"privileged-qkey", t.sysSetPrivilegedQKey},
	}, "parameter")
}

func (t *tool) sysSetNetNS() int {
	a := t.arg()
	if t.noArg() || (a != "shared" && a != "exclusive") {
		return t.einvalf("valid options are: { shared | exclusive }\n")
	}
	mode := netlinkrdma.NetNSExclusive
	if strings.EqualFold(a, "shared") {
		mode = netlinkrdma.NetNSShared
	}
	return t.nlResult(t.be.SetNetNSMode(mode))
}

// sysSetPrivilegedQKey is "system set privileged-qkey on|off".
func (t *tool) sysSetPrivilegedQKey() int {
	if t.noArg() {
		return t.einvalf("valid options are: { on | off }\n")
	}
	on, ok := t.parseOnOff("privileged-qkey", t.arg())
	if !ok {
		return -int(unix.EINVAL)
	}
	return t.nlResult(t.be.SetPrivilegedQKey(on))
}

// parseOnOff is iproute2's parse_on_off: exactly "on" or "off", otherwise
// an error on stderr naming msg.
func (t *tool) parseOnOff(msg, val string) (on, ok bool) {
	switch val {
	case "on":
		return true, true
	case "off":
		return false, true
	}
	t.errf("Error: argument of \"%s\" must be one of \"off\", \"on\", not \"%s\"\n", msg, val)
	return false, false
}
