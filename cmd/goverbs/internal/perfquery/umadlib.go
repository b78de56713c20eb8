package perfquery

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/libumad"
)

// This file reproduces what perfquery's mad_rpc_open_port2 does in
// libibumad of Debian sid's rdma-core 65.0 (libibumad.so.3.4.65.0): the
// SMI/GSI pair search (umad_get_smi_gsi_pair_by_ca_name) and
// umad_open_port, with their warnings and debug traces.
//
// The Debian binary differs from rdma-core's master source in one way that
// decides everything on RoCE: umad_get_smi_gsi_pairs (and its inlined
// count_ports_by_guid) only consider ports whose link_layer is
// "InfiniBand" or "IB" (its disassembly compares link_layer with both
// strings before using a port). An rxe port's link layer is "Ethernet", so
// on a RoCE-only host the search finds no pair, returns 0 as success with
// empty names, and the two umad_open_port("", 0) calls fail with ENODEV.

const (
	maxDevices    = 128 // UMAD_MAX_DEVICES (rdma-core 65)
	maxPorts      = 192 // UMAD_MAX_PORTS (rdma-core 65)
	defCAName     = "mthca0"
	defCAPort     = 1
	capSMDisabled = 0x400 // CAPMASK_IS_SM_DISABLED
)

// lib is the libibumad state of one process: the sysfs side shared with ibstat (package libumad) and the
// ABI version get_abi_version caches.
type lib struct {
	*libumad.Lib
	abi    uint32
	abiSet bool
}

// caPair is struct umad_ca_pair.
type caPair struct {
	smiName, gsiName string
	smiPort, gsiPort int
}

// smiGSIPairs is umad_get_smi_gsi_pairs as Debian's 65.0 binary runs it:
// only InfiniBand ports count.
func (u *lib) smiGSIPairs() ([]caPair, error) {
	names := u.CASNames(maxDevices)
	type count struct {
		guid uint64
		n    int
	}
	var counts []count
	for _, n := range names {
		ca, err := u.GetCA(n)
		if err != nil {
			continue
		}
		for _, p := range ca.Ports[:ca.NumPorts+1] {
			if p == nil || !p.IsIB() {
				continue
			}
			found := false
			for i := range counts {
				if counts[i].guid == p.PortGUID {
					counts[i].n++
					found = true
					break
				}
			}
			if !found && len(counts) < maxPorts {
				counts = append(counts, count{p.PortGUID, 1})
			}
		}
		u.ReleaseCA(ca)
	}
	var pairs []caPair
	index := map[uint64]int{}
	for _, n := range names {
		ca, err := u.GetCA(n)
		if err != nil {
			continue
		}
		for _, p := range ca.Ports[:ca.NumPorts+1] {
			if p == nil || p.PortGUID == 0 || !p.IsIB() {
				continue
			}
			gc := 0
			for _, c := range counts {
				if c.guid == p.PortGUID {
					gc = c.n
				}
			}
			i, ok := index[p.PortGUID]
			if !ok {
				if len(pairs) >= maxPorts {
					continue
				}
				pairs = append(pairs, caPair{})
				i = len(pairs) - 1
				index[p.PortGUID] = i
			}
			d := &pairs[i]
			if gc > 1 {
				if p.CapMask&capSMDisabled != 0 {
					d.gsiName = ca.Name
				} else {
					d.smiName = ca.Name
				}
				break
			} else if gc == 1 {
				if p.CapMask&capSMDisabled == 0 {
					d.smiName = ca.Name
				}
				d.gsiName = ca.Name
				break
			}
			u.ReleaseCA(ca)
			return nil, errors.New("port GUID without count")
		}
		u.ReleaseCA(ca)
	}
	return pairs, nil
}

func checkActive(ca *libumad.CA, port int) bool { // umad_check_active == 0
	return port >= 0 && port < libumad.CAMaxPorts && ca.Ports[port] != nil && ca.Ports[port].State > 1
}

func findActive(pair *caPair, ca *libumad.CA, gsi bool) int {
	for i := 0; i <= ca.NumPorts; i++ {
		if checkActive(ca, i) {
			if gsi {
				pair.gsiPort = ca.Ports[i].PortNum
			} else {
				pair.smiPort = ca.Ports[i].PortNum
			}
			return 0
		}
	}
	return 1
}

func findPreferredPorts(pair *caPair, ca *libumad.CA, gsi bool, portnum int, named bool) int {
	if ca.NumPorts == 1 {
		for i := 0; i <= ca.NumPorts; i++ {
			if ca.Ports[i] != nil {
				portnum = ca.Ports[i].PortNum
				break
			}
		}
	}
	if portnum != 0 || ca.NodeType == 2 {
		if pair.gsiName == pair.smiName {
			if named || checkActive(ca, portnum) {
				pair.gsiPort, pair.smiPort = portnum, portnum
				return 0
			}
			return 1
		}
		if named || checkActive(ca, portnum) {
			if gsi {
				pair.gsiPort = portnum
			} else {
				pair.smiPort = portnum
			}
			rc := findActive(pair, ca, !gsi)
			if named {
				return 0
			}
			return rc
		}
		return 1
	}
	return findActive(pair, ca, false) + findActive(pair, ca, true)
}

// pairByCAName is umad_get_smi_gsi_pair_by_ca_name (enforce_smi 0). name
// is nil when no -C was given. The result is 0 or -errno.
func (u *lib) pairByCAName(name *string, portnum uint8) (caPair, int) {
	pairs, err := u.smiGSIPairs()
	if err != nil {
		return caPair{}, -1
	}
	if len(pairs) == 0 {
		return caPair{}, 0
	}
	rc := 1
	var out caPair
	for _, cp := range pairs {
		if cp.gsiName == "" {
			continue
		}
		if name != nil && cp.gsiName != libumad.TruncName(*name) && cp.smiName != libumad.TruncName(*name) {
			continue
		}
		gsi := cp.smiName == "" || (name != nil && *name == cp.gsiName)
		cn := cp.smiName
		if gsi {
			cn = cp.gsiName
		}
		ca, err := u.GetCA(cn)
		if err != nil {
			continue
		}
		if portnum != 0 && (int(portnum) >= libumad.CAMaxPorts || ca.Ports[portnum] == nil) {
			u.ReleaseCA(ca)
			continue
		}
		out = cp
		rc = findPreferredPorts(&out, ca, gsi, int(portnum), name != nil)
		u.ReleaseCA(ca)
		if rc == 0 {
			break
		}
	}
	if rc != 0 {
		return out, -int(unix.ENODEV)
	}
	return out, 0
}

// abiVersion is get_abi_version: it warns once and caches a failure.
func (u *lib) abiVersion() uint32 {
	if u.abiSet {
		return u.abi
	}
	u.abiSet = true
	v, err := u.ReadUint(libumad.SysMAD, "abi_version")
	if err != nil {
		u.Warn("get_abi_version", "can't read ABI version from %s/%s (%s): is ib_umad module loaded?", libumad.SysMAD, "abi_version", cstd.Strerror(cstd.ErrnoOf(err, unix.EIO)))
		u.abi = 0
		return 0
	}
	if v < 5 {
		u.abi = 0
		return 0
	}
	u.abi = v
	return v
}

// resolveCAPort is resolve_ca_port: 1 active, 0 up, -1 none.
func (u *lib) resolveCAPort(name string, port *int) int {
	u.Trace("resolve_ca_port", "checking ca '%s'", name)
	ca, err := u.GetCA(name)
	if err != nil {
		return -1
	}
	if ca.NodeType == 2 {
		*port = 0
		return 1
	}
	if *port > 0 {
		if *port > ca.NumPorts || ca.Ports[*port] == nil || !ca.Ports[*port].IsIB() {
			return -1
		}
		if ca.Ports[*port].State == 4 {
			return 1
		}
		if ca.Ports[*port].PhysState != 3 {
			return 0
		}
		return -1
	}
	active, up := -1, -1
	for i := 0; i <= ca.NumPorts; i++ {
		u.Trace("resolve_ca_port", "checking port %d", i)
		p := ca.Ports[i]
		if p == nil || !p.IsIB() {
			continue
		}
		if up < 0 && p.PhysState == 5 {
			up, *port = i, i
		}
		if p.State == 4 {
			active, *port = i, i
			u.Trace("resolve_ca_port", "found active port %d", i)
			break
		}
	}
	if active == -1 && up == -1 {
		for i := 0; i <= ca.NumPorts; i++ {
			u.Trace("resolve_ca_port", "checking port %d", i)
			if ca.Ports[i] == nil {
				continue
			}
			if ca.Ports[i].PhysState != 3 {
				up, *port = i, i
				break
			}
		}
	}
	switch {
	case active >= 0:
		return 1
	case up >= 0:
		return 0
	}
	return -1
}

// resolveCAName is resolve_ca_name with a best port.
func (u *lib) resolveCAName(name *string, port *int) (string, bool) {
	if name != nil && *port != 0 {
		return *name, true
	}
	if name != nil {
		if u.resolveCAPort(*name, port) < 0 {
			return "", false
		}
		return *name, true
	}
	var phys string
	physPort := 0
	names, _ := u.DeviceList()
	for _, n := range names {
		u.Trace("resolve_ca_name", "checking ca '%s'", n)
		p := *port
		t := u.resolveCAPort(n, &p)
		if t < 0 {
			continue
		}
		u.Trace("resolve_ca_name", "found ca %s with port %d type %d", n, p, t)
		if t > 0 {
			*port = p
			u.Trace("resolve_ca_name", "found ca %s with active port %d", n, p)
			return n, true
		}
		if phys == "" {
			phys, physPort = n, p
		}
	}
	if phys != "" {
		u.Trace("resolve_ca_name", "phys found on %s port %d", phys, physPort)
		*port = physPort
		return phys, true
	}
	*port = defCAPort
	return defCAName, true
}

// umadID is dev_to_umad_id.
func (u *lib) umadID(dev string, port int) int {
	for id := 0; id < maxPorts; id++ {
		dir := fmt.Sprintf("%s/umad%d/", libumad.SysMAD, id)
		d, err := u.ReadString(dir, "ibdev", libumad.CANameLen)
		if err != nil {
			continue
		}
		p, err := u.ReadUint(dir, "port")
		if err != nil {
			continue
		}
		if d != dev || int(p) != port {
			continue
		}
		u.Trace("dev_to_umad_id", "mapped %s %d to %d", dev, port, id)
		return id
	}
	return -1
}

// openPort is umad_open_port: a umad id (standing in for the fd) or
// -errno. nameSet false is a NULL ca_name.
func (u *lib) openPort(name string, nameSet bool, port int) int {
	shown := name
	if !nameSet {
		shown = "(null)"
	}
	abi := u.abiVersion() // in the C function's declarations, before its trace
	u.Trace("do_umad_open_port", "ca %s port %d", shown, port)
	if abi == 0 {
		return -int(unix.EOPNOTSUPP)
	}
	var np *string
	if nameSet {
		np = &name
	}
	found, ok := u.resolveCAName(np, &port)
	if !ok {
		return -int(unix.ENODEV)
	}
	u.Trace("do_umad_open_port", "opening %s port %d", found, port)
	id := u.umadID(found, port)
	if id < 0 {
		return -int(unix.EINVAL)
	}
	return id
}

// closePort is umad_close_port.
func (u *lib) closePort(fd int) {
	u.Trace("umad_close_port", "closed fd %d", fd)
}
