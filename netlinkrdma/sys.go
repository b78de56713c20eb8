package netlinkrdma

import (
	"github.com/goverbs/goverbs/abi"
)

// NetNSMode is the RDMA subsystem's network namespace mode.
type NetNSMode uint8

// Netns modes, as RDMA_NLDEV_SYS_ATTR_NETNS_MODE encodes them.
const (
	NetNSExclusive NetNSMode = 0 // each device belongs to one netns
	NetNSShared    NetNSMode = 1 // devices are visible in every netns
)

// String returns iproute2's word for m ("shared", "exclusive").
func (m NetNSMode) String() string {
	if m == NetNSExclusive {
		return "exclusive"
	}
	return "shared"
}

// System is the RDMA subsystem's global settings (RDMA_NLDEV_CMD_SYS_GET).
type System struct {
	NetNSMode NetNSMode // RDMA_NLDEV_SYS_ATTR_NETNS_MODE
	// CopyOnFork reports that the kernel gives fork()ed children copies of
	// pinned pages (so ibv_fork_init is unnecessary); always true from 5.13.
	CopyOnFork bool
	// PrivilegedQKey reports that unprivileged processes may use
	// privileged Q_Keys (RDMA_NLDEV_SYS_ATTR_PRIVILEGED_QKEY_MODE; Linux
	// 6.7, Debian 6.1.190+).
	PrivilegedQKey bool
	// Monitor reports that the kernel sends device events to
	// RDMA_NL_GROUP_NOTIFY (RDMA_NLDEV_SYS_ATTR_MONITOR_MODE, Linux 6.12+).
	Monitor bool
	// Present records which attributes the kernel sent.
	Present AttrSet
}

func decodeSystem(b []byte) (System, error) {
	var s System
	err := walk(b, &s.Present, func(ad *attrDecoder) {
		switch ad.Type() {
		case abi.RDMA_NLDEV_SYS_ATTR_NETNS_MODE:
			s.NetNSMode = NetNSMode(ad.Uint8())
		case abi.RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK:
			s.CopyOnFork = ad.Uint8() != 0
		case abi.RDMA_NLDEV_SYS_ATTR_PRIVILEGED_QKEY_MODE:
			s.PrivilegedQKey = ad.Uint8() != 0
		case abi.RDMA_NLDEV_SYS_ATTR_MONITOR_MODE:
			s.Monitor = ad.Uint8() != 0
		}
	})
	return s, err
}

// System returns the RDMA subsystem's settings.
//
// Equivalent to: rdma system show
func (c *Conn) System() (System, error) {
	s, err := get(c, abi.RDMA_NLDEV_CMD_SYS_GET, nil, decodeSystem)
	if err != nil {
		return System{}, opErr("get system settings", "", err)
	}
	return s, nil
}

// SetNetNSMode switches the netns mode. The kernel refuses (EBUSY) while any
// network namespace other than the initial one exists; kernels from 6.1.57
// (and 6.6) need CAP_NET_ADMIN.
//
// Equivalent to: rdma system set netns shared|exclusive
func (c *Conn) SetNetNSMode(m NetNSMode) error {
	var e attrEncoder
	e.Uint8(abi.RDMA_NLDEV_SYS_ATTR_NETNS_MODE, uint8(m))
	return opErr("set netns mode", m.String(), c.doit(abi.RDMA_NLDEV_CMD_SYS_SET, e.Encode(), nil))
}

// SetPrivilegedQKey allows (on) or forbids (off) unprivileged processes to
// use privileged Q_Keys (MSB set) on UD QPs. Kernels without the setting
// (before 6.7; Debian's 6.1 has it from 6.1.190) answer EOPNOTSUPP.
//
// Equivalent to: rdma system set privileged-qkey on|off
func (c *Conn) SetPrivilegedQKey(on bool) error {
	var e attrEncoder
	word := "off"
	if on {
		word = "on"
	}
	e.Bool(abi.RDMA_NLDEV_SYS_ATTR_PRIVILEGED_QKEY_MODE, on)
	return opErr("set privileged-qkey mode", word, c.doit(abi.RDMA_NLDEV_CMD_SYS_SET, e.Encode(), nil))
}
