package perfquery

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/internal/tools/cstd"
	"github.com/goverbs/goverbs/internal/tools/sysfs"
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
	caNameLen     = 20  // UMAD_CA_NAME_LEN
	caMaxPorts    = 10  // UMAD_CA_MAX_PORTS
	maxDevices    = 128 // UMAD_MAX_DEVICES (rdma-core 65)
	maxPorts      = 192 // UMAD_MAX_PORTS (rdma-core 65)
	defCAName     = "mthca0"
	defCAPort     = 1
	capSMDisabled = 0x400 // CAPMASK_IS_SM_DISABLED
)

const (
	sysInfiniband = "/sys/class/infiniband"
	sysMAD        = "/sys/class/infiniband_mad"
)

type umadPort struct {
	caName    string
	portNum   int
	baseLID   uint32
	lmc       uint32
	smLID     uint32
	smSL      uint32
	state     uint32
	physState uint32
	rate      uint32
	capMask   uint32
	gidPrefix uint64
	portGUID  uint64
	linkLayer string
}

type umadCA struct {
	name     string
	nodeType uint32
	numPorts int
	ports    [caMaxPorts]*umadPort
}

func (p *umadPort) isIB() bool { return p.linkLayer == "InfiniBand" || p.linkLayer == "IB" }

// lib is the libibumad state of one process.
type lib struct {
	fs     sysfs.FS
	stderr io.Writer
	pid    int
	debug  int // umaddebug
	abi    uint32
	abiSet bool
}

func (u *lib) warn(fn, format string, args ...any) {
	fmt.Fprintf(u.stderr, "ibwarn: [%d] %s: %s\n", u.pid, fn, fmt.Sprintf(format, args...))
}

func (u *lib) trace(fn, format string, args ...any) {
	if u.debug > 0 {
		u.warn(fn, format, args...)
	}
}

func (u *lib) abs(p string) string { return u.fs.SysPath(strings.TrimPrefix(p, "/sys/")) }

// readString is sys_read_string: one read of at most max bytes, cut at the
// last newline.
func (u *lib) readString(dir, file string, max int) (string, error) {
	b, err := sysfs.ReadN(u.abs(dir+"/"+file), max)
	if err != nil {
		return "", err
	}
	if len(b) >= max {
		b = b[:max-1]
	}
	s := sysfs.CString(b)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s, nil
}

func (u *lib) readUint(dir, file string) (uint32, error) {
	s, err := u.readString(dir, file, 32)
	if err != nil {
		return 0, err
	}
	v, _, _ := cstd.Strtoul(s, 0)
	return uint32(v), nil
}

// readGID is sys_read_gid: eight strsep fields of hex.
func (u *lib) readGID(dir, file string) (prefix, guid uint64, err error) {
	s, err := u.readString(dir, file, 64)
	if err != nil {
		return 0, 0, err
	}
	for i := 0; i < 8; i++ {
		var tok string
		if j := strings.IndexAny(s, ": \t\n"); j >= 0 {
			tok, s = s[:j], s[j+1:]
		} else if s != "" || i == 0 {
			tok, s = s, ""
		} else {
			return 0, 0, unix.EINVAL
		}
		v, _, _ := cstd.Strtoul(tok, 16)
		if i < 4 {
			prefix = prefix<<16 | v&0xffff
		} else {
			guid = guid<<16 | v&0xffff
		}
	}
	return prefix, guid, nil
}

func truncName(n string) string {
	if len(n) > caNameLen-1 {
		return n[:caNameLen-1]
	}
	return n
}

func (u *lib) isIBType(name string) bool {
	t, err := u.readUint(sysInfiniband+"/"+name, "node_type")
	return err == nil && t >= 1 && t <= 3
}

// casNames is umad_get_cas_names.
func (u *lib) casNames(max int) []string {
	u.trace("umad_get_cas_names", "max %d", max)
	names, err := sysfs.Names(u.abs(sysInfiniband))
	if err != nil {
		u.trace("umad_get_cas_names", "return 1 ca")
		return []string{defCAName}
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		if len(n) < caNameLen && len(out) < max && u.isIBType(n) {
			out = append(out, n)
		}
	}
	u.trace("umad_get_cas_names", "return %d cas", len(out))
	return out
}

// deviceList is umad_get_ca_device_list (readdir order; the names are
// sorted here as umad_sort_ca_device_list would).
func (u *lib) deviceList() []string {
	names, err := sysfs.Names(u.abs(sysInfiniband))
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range names {
		if u.isIBType(n) {
			out = append(out, n)
		}
	}
	u.trace("umad_get_ca_device_list", "return %d cas", len(out))
	sort.Strings(out)
	return out
}

// getCA is umad_get_ca (resolve_ca_name with a name only duplicates it).
func (u *lib) getCA(name string) (*umadCA, error) {
	u.trace("umad_get_ca", "ca_name %s", name)
	ca, err := u.readCA(name)
	if err != nil {
		return nil, err
	}
	u.trace("umad_get_ca", "opened %s", name)
	return ca, nil
}

func (u *lib) releaseCA(ca *umadCA) {
	u.trace("umad_release_ca", "ca_name %s", ca.name)
	u.trace("umad_release_ca", "releasing %s", ca.name)
}

// readCA is get_ca.
func (u *lib) readCA(name string) (*umadCA, error) {
	ca := &umadCA{name: truncName(name)}
	dir := sysInfiniband + "/" + ca.name
	var err error
	if ca.nodeType, err = u.readUint(dir, "node_type"); err != nil {
		return nil, err
	}
	if _, err := u.readString(dir, "node_guid", 32); err != nil {
		return nil, err
	}
	if _, err := u.readString(dir, "sys_image_guid", 32); err != nil {
		return nil, err
	}
	portsDir := dir + "/ports"
	ents, err := sysfs.Names(u.abs(portsDir))
	if err != nil {
		return nil, unix.ENOENT
	}
	sort.Strings(ents)
	for _, e := range ents {
		pn := 0
		if e != "0" {
			pn = int(cstd.Atoi(e))
			if pn <= 0 || pn >= caMaxPorts {
				return nil, unix.EIO
			}
		}
		p, err := u.readPort(name, portsDir, pn)
		if err != nil {
			return nil, unix.EIO
		}
		ca.ports[pn] = p
		ca.numPorts = max(ca.numPorts, pn)
	}
	return ca, nil
}

// readPort is get_port.
func (u *lib) readPort(caName, portsDir string, pn int) (*umadPort, error) {
	p := &umadPort{caName: truncName(caName), portNum: pn}
	dir := portsDir + "/" + strconv.Itoa(pn)
	for _, f := range []struct {
		name string
		dst  *uint32
	}{
		{"lid_mask_count", &p.lmc}, {"sm_lid", &p.smLID}, {"sm_sl", &p.smSL}, {"lid", &p.baseLID},
		{"state", &p.state}, {"phys_state", &p.physState}, {"rate", &p.rate}, {"cap_mask", &p.capMask},
	} {
		v, err := u.readUint(dir, f.name)
		if err != nil {
			return nil, err
		}
		*f.dst = v
	}
	ll, err := u.readString(dir, "link_layer", caNameLen)
	if err != nil {
		ll = "IB"
	}
	p.linkLayer = ll
	if p.gidPrefix, p.portGUID, err = u.readGID(dir, "gids/0"); err != nil {
		return nil, err
	}
	names, _ := sysfs.Names(u.abs(dir + "/pkeys"))
	n := 0
	for _, s := range names {
		if strings.Trim(s, "0123456789") == "" {
			n++
		}
	}
	if n == 0 {
		u.warn("get_port", "no pkeys found for %s:%d (at dir %s)...", p.caName, pn, dir+"/pkeys")
		return nil, unix.EIO
	}
	return p, nil
}

// caPair is struct umad_ca_pair.
type caPair struct {
	smiName, gsiName string
	smiPort, gsiPort int
}

// smiGSIPairs is umad_get_smi_gsi_pairs as Debian's 65.0 binary runs it:
// only InfiniBand ports count.
func (u *lib) smiGSIPairs() ([]caPair, error) {
	names := u.casNames(maxDevices)
	type count struct {
		guid uint64
		n    int
	}
	var counts []count
	for _, n := range names {
		ca, err := u.getCA(n)
		if err != nil {
			continue
		}
		for _, p := range ca.ports[:ca.numPorts+1] {
			if p == nil || !p.isIB() {
				continue
			}
			found := false
			for i := range counts {
				if counts[i].guid == p.portGUID {
					counts[i].n++
					found = true
					break
				}
			}
			if !found && len(counts) < maxPorts {
				counts = append(counts, count{p.portGUID, 1})
			}
		}
		u.releaseCA(ca)
	}
	var pairs []caPair
	index := map[uint64]int{}
	for _, n := range names {
		ca, err := u.getCA(n)
		if err != nil {
			continue
		}
		for _, p := range ca.ports[:ca.numPorts+1] {
			if p == nil || p.portGUID == 0 || !p.isIB() {
				continue
			}
			gc := 0
			for _, c := range counts {
				if c.guid == p.portGUID {
					gc = c.n
				}
			}
			i, ok := index[p.portGUID]
			if !ok {
				if len(pairs) >= maxPorts {
					continue
				}
				pairs = append(pairs, caPair{})
				i = len(pairs) - 1
				index[p.portGUID] = i
			}
			d := &pairs[i]
			if gc > 1 {
				if p.capMask&capSMDisabled != 0 {
					d.gsiName = ca.name
				} else {
					d.smiName = ca.name
				}
				break
			} else if gc == 1 {
				if p.capMask&capSMDisabled == 0 {
					d.smiName = ca.name
				}
				d.gsiName = ca.name
				break
			}
			u.releaseCA(ca)
			return nil, errors.New("port GUID without count")
		}
		u.releaseCA(ca)
	}
	return pairs, nil
}

func checkActive(ca *umadCA, port int) bool { // umad_check_active == 0
	return port >= 0 && port < caMaxPorts && ca.ports[port] != nil && ca.ports[port].state > 1
}

func findActive(pair *caPair, ca *umadCA, gsi bool) int {
	for i := 0; i <= ca.numPorts; i++ {
		if checkActive(ca, i) {
			if gsi {
				pair.gsiPort = ca.ports[i].portNum
			} else {
				pair.smiPort = ca.ports[i].portNum
			}
			return 0
		}
	}
	return 1
}

func findPreferredPorts(pair *caPair, ca *umadCA, gsi bool, portnum int, named bool) int {
	if ca.numPorts == 1 {
		for i := 0; i <= ca.numPorts; i++ {
			if ca.ports[i] != nil {
				portnum = ca.ports[i].portNum
				break
			}
		}
	}
	if portnum != 0 || ca.nodeType == 2 {
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
		if name != nil && cp.gsiName != truncName(*name) && cp.smiName != truncName(*name) {
			continue
		}
		gsi := cp.smiName == "" || (name != nil && *name == cp.gsiName)
		cn := cp.smiName
		if gsi {
			cn = cp.gsiName
		}
		ca, err := u.getCA(cn)
		if err != nil {
			continue
		}
		if portnum != 0 && (int(portnum) >= caMaxPorts || ca.ports[portnum] == nil) {
			u.releaseCA(ca)
			continue
		}
		out = cp
		rc = findPreferredPorts(&out, ca, gsi, int(portnum), name != nil)
		u.releaseCA(ca)
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
	v, err := u.readUint(sysMAD, "abi_version")
	if err != nil {
		u.warn("get_abi_version", "can't read ABI version from %s/%s (%s): is ib_umad module loaded?", sysMAD, "abi_version", cstd.Strerror(cstd.ErrnoOf(err, unix.EIO)))
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
	u.trace("resolve_ca_port", "checking ca '%s'", name)
	ca, err := u.getCA(name)
	if err != nil {
		return -1
	}
	if ca.nodeType == 2 {
		*port = 0
		return 1
	}
	if *port > 0 {
		if *port > ca.numPorts || ca.ports[*port] == nil || !ca.ports[*port].isIB() {
			return -1
		}
		if ca.ports[*port].state == 4 {
			return 1
		}
		if ca.ports[*port].physState != 3 {
			return 0
		}
		return -1
	}
	active, up := -1, -1
	for i := 0; i <= ca.numPorts; i++ {
		u.trace("resolve_ca_port", "checking port %d", i)
		p := ca.ports[i]
		if p == nil || !p.isIB() {
			continue
		}
		if up < 0 && p.physState == 5 {
			up, *port = i, i
		}
		if p.state == 4 {
			active, *port = i, i
			u.trace("resolve_ca_port", "found active port %d", i)
			break
		}
	}
	if active == -1 && up == -1 {
		for i := 0; i <= ca.numPorts; i++ {
			u.trace("resolve_ca_port", "checking port %d", i)
			if ca.ports[i] == nil {
				continue
			}
			if ca.ports[i].physState != 3 {
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
	for _, n := range u.deviceList() {
		u.trace("resolve_ca_name", "checking ca '%s'", n)
		p := *port
		t := u.resolveCAPort(n, &p)
		if t < 0 {
			continue
		}
		u.trace("resolve_ca_name", "found ca %s with port %d type %d", n, p, t)
		if t > 0 {
			*port = p
			u.trace("resolve_ca_name", "found ca %s with active port %d", n, p)
			return n, true
		}
		if phys == "" {
			phys, physPort = n, p
		}
	}
	if phys != "" {
		u.trace("resolve_ca_name", "phys found on %s port %d", phys, physPort)
		*port = physPort
		return phys, true
	}
	*port = defCAPort
	return defCAName, true
}

// umadID is dev_to_umad_id.
func (u *lib) umadID(dev string, port int) int {
	for id := 0; id < maxPorts; id++ {
		dir := fmt.Sprintf("%s/umad%d/", sysMAD, id)
		d, err := u.readString(dir, "ibdev", caNameLen)
		if err != nil {
			continue
		}
		p, err := u.readUint(dir, "port")
		if err != nil {
			continue
		}
		if d != dev || int(p) != port {
			continue
		}
		u.trace("dev_to_umad_id", "mapped %s %d to %d", dev, port, id)
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
	u.trace("do_umad_open_port", "ca %s port %d", shown, port)
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
	u.trace("do_umad_open_port", "opening %s port %d", found, port)
	id := u.umadID(found, port)
	if id < 0 {
		return -int(unix.EINVAL)
	}
	return id
}

// closePort is umad_close_port.
func (u *lib) closePort(fd int) {
	u.trace("umad_close_port", "closed fd %d", fd)
}
