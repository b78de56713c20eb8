package ibstat

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/internal/tools/cstd"
	"github.com/goverbs/goverbs/internal/tools/sysfs"
)

// Limits of libibumad's fixed-size buffers (umad.h); names longer than
// caNameLen-1 bytes are truncated exactly as strncpy into them truncates.
const (
	caNameLen  = 20 // UMAD_CA_NAME_LEN
	caMaxPorts = 10 // UMAD_CA_MAX_PORTS: ports 0..9
	fwVerLen   = 20
	caTypeLen  = 40
	hwVerLen   = 20
)

// sysInfiniband is the directory libibumad reads, relative to the sysfs root
// and as its diagnostics print it.
const sysInfiniband = "/sys/class/infiniband"

// Port is what libibumad's umad_port_t holds and ibstat prints for one port.
type Port struct {
	CAName    string // truncated to 19 bytes like umad_port_t.ca_name
	PortNum   int
	BaseLID   uint32 // ports/N/lid
	LMC       uint32 // ports/N/lid_mask_count
	SMLID     uint32 // ports/N/sm_lid
	SMSL      uint32 // ports/N/sm_sl
	State     uint32 // ports/N/state, leading number ("4: ACTIVE" -> 4)
	PhysState uint32 // ports/N/phys_state, leading number ("5: LinkUp" -> 5)
	Rate      uint32 // ports/N/rate, leading number ("100 Gb/sec (4X EDR)" -> 100)
	FDR10     bool   // the rate text has "FDR10" just before its first ')'
	CapMask   uint32 // ports/N/cap_mask
	GIDPrefix uint64 // ports/N/gids/0, first 8 bytes
	PortGUID  uint64 // ports/N/gids/0, last 8 bytes
	LinkLayer string // ports/N/link_layer, "IB" when unreadable
}

// CA is what libibumad's umad_ca_t holds and ibstat prints for one device.
type CA struct {
	Name         string // truncated to 19 bytes like umad_ca_t.ca_name
	NodeType     uint32 // node_type, leading number ("1: CA" -> 1)
	NumPorts     int    // highest port number found under ports/
	FWVer        string // fw_ver, "" when unreadable
	HWVer        string // hw_rev, "" when unreadable
	CAType       string // hca_type, "" when unreadable
	NodeGUID     uint64 // node_guid
	SysImageGUID uint64 // sys_image_guid
	Ports        [caMaxPorts]*Port
}

// umad reproduces the parts of libibumad that ibstat uses, over a sysfs
// tree. It keeps errno as the C library leaves it, because ibstat's fatal
// messages end with strerror(errno).
type umad struct {
	fs     sysfs.FS
	stderr io.Writer
	pid    int
	debug  int // umad_debug level
	errno  unix.Errno
}

// setErr records the errno of a failed system call, as libc does.
func (u *umad) setErr(err error) {
	if e := cstd.ErrnoOf(err, 0); e != 0 {
		u.errno = e
	}
}

func (u *umad) trace(fn, format string, args ...any) {
	if u.debug > 0 {
		fmt.Fprintf(u.stderr, "ibwarn: [%d] %s: %s\n", u.pid, fn, fmt.Sprintf(format, args...))
	}
}

func (u *umad) warn(fn, format string, args ...any) {
	fmt.Fprintf(u.stderr, "ibwarn: [%d] %s: %s\n", u.pid, fn, fmt.Sprintf(format, args...))
}

// abs maps a libibumad absolute path (/sys/...) into the configured tree.
func (u *umad) abs(p string) string {
	return u.fs.SysPath(strings.TrimPrefix(p, "/sys/"))
}

// readString is libibumad's sys_read_string: one read of at most max bytes,
// NUL-terminated at min(n, max-1), cut at the last newline.
func (u *umad) readString(dir, file string, max int) (string, error) {
	b, err := sysfs.ReadN(u.abs(dir+"/"+file), max)
	if err != nil {
		u.setErr(err)
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

// readUint is sys_read_uint: strtoul(text, NULL, 0) stored in an unsigned.
func (u *umad) readUint(dir, file string) (uint32, error) {
	s, err := u.readString(dir, file, 32)
	if err != nil {
		return 0, err
	}
	v, _, _ := cstd.Strtoul(s, 0)
	return uint32(v), nil
}

// errInval is returned for sysfs text libibumad refuses to parse.
var errInval = fmt.Errorf("parse sysfs value: %w", unix.EINVAL)

// strsepFields splits s like repeated strsep(&s, ": \t\n"), returning at most
// n tokens; ok is false when fewer than n exist.
func strsepFields(s string, n int) ([]string, bool) {
	var out []string
	for len(out) < n {
		i := strings.IndexAny(s, ": \t\n")
		if i < 0 {
			out = append(out, s)
			if len(out) < n {
				return out, false
			}
			break
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
	return out, true
}

// readGUID is sys_read_guid: four 16-bit hex groups.
func (u *umad) readGUID(dir, file string) (uint64, error) {
	s, err := u.readString(dir, file, 32)
	if err != nil {
		return 0, err
	}
	f, ok := strsepFields(s, 4)
	if !ok {
		return 0, errInval
	}
	var g uint64
	for _, t := range f {
		v, _, _ := cstd.Strtoul(t, 16)
		g = g<<16 | v&0xffff
	}
	return g, nil
}

// readGID is sys_read_gid: eight 16-bit hex groups, returned as prefix and
// interface id.
func (u *umad) readGID(dir, file string) (prefix, guid uint64, err error) {
	s, err := u.readString(dir, file, 64)
	if err != nil {
		return 0, 0, err
	}
	f, ok := strsepFields(s, 8)
	if !ok {
		return 0, 0, errInval
	}
	for i, t := range f {
		v, _, _ := cstd.Strtoul(t, 16)
		if i < 4 {
			prefix = prefix<<16 | v&0xffff
		} else {
			guid = guid<<16 | v&0xffff
		}
	}
	return prefix, guid, nil
}

func truncName(name string) string {
	if len(name) > caNameLen-1 {
		return name[:caNameLen-1]
	}
	return name
}

// isIBType is is_ib_type: node_type 1..3 (CA, switch, router).
func (u *umad) isIBType(name string) bool {
	t, err := u.readUint(sysInfiniband+"/"+name, "node_type")
	return err == nil && t >= 1 && t <= 3
}

// deviceList is umad_get_ca_device_list followed by umad_sort_ca_device_list:
// the InfiniBand-type devices, sorted by name. A missing class directory is an
// empty list, not an error.
func (u *umad) deviceList() ([]string, error) {
	names, err := sysfs.Names(u.abs(sysInfiniband))
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			u.errno = 0
			return nil, nil
		}
		u.setErr(err)
		return nil, fmt.Errorf("list %s: %w", sysInfiniband, err)
	}
	var out []string
	for _, n := range names {
		if u.isIBType(n) {
			out = append(out, n)
		}
	}
	u.trace("umad_get_ca_device_list", "return %d cas", len(out))
	u.errno = 0
	sort.Strings(out)
	return out, nil
}

// getCA is umad_get_ca.
func (u *umad) getCA(name string) (*CA, error) {
	u.trace("umad_get_ca", "ca_name %s", name)
	ca, err := u.readCA(name)
	if err != nil {
		return nil, err
	}
	u.trace("umad_get_ca", "opened %s", name)
	return ca, nil
}

// readCA is libibumad's get_ca.
func (u *umad) readCA(name string) (*CA, error) {
	ca := &CA{Name: truncName(name)}
	dir := sysInfiniband + "/" + ca.Name
	var err error
	if ca.NodeType, err = u.readUint(dir, "node_type"); err != nil {
		return nil, err
	}
	ca.FWVer, _ = u.readString(dir, "fw_ver", fwVerLen)
	ca.HWVer, _ = u.readString(dir, "hw_rev", hwVerLen)
	ca.CAType, _ = u.readString(dir, "hca_type", caTypeLen)
	if ca.NodeGUID, err = u.readGUID(dir, "node_guid"); err != nil {
		return nil, err
	}
	if ca.SysImageGUID, err = u.readGUID(dir, "sys_image_guid"); err != nil {
		return nil, err
	}
	portsDir := dir + "/ports"
	entries, err := sysfs.Names(u.abs(portsDir))
	if err != nil {
		u.setErr(err)
		return nil, fmt.Errorf("read ports of %s: %w", ca.Name, unix.ENOENT)
	}
	sort.Strings(entries) // scandir(..., alphasort) in the C locale
	for _, e := range entries {
		pn := 0
		if e != "0" {
			pn = int(cstd.Atoi(e))
			if pn <= 0 || pn >= caMaxPorts {
				return nil, fmt.Errorf("port directory %q of %s: %w", e, ca.Name, unix.EIO)
			}
		}
		p, err := u.readPort(name, portsDir, pn)
		if err != nil {
			return nil, fmt.Errorf("read port %d of %s: %w", pn, ca.Name, unix.EIO)
		}
		ca.Ports[pn] = p
		if ca.NumPorts < pn {
			ca.NumPorts = pn
		}
	}
	return ca, nil
}

// readPort is libibumad's get_port.
func (u *umad) readPort(caName, portsDir string, pn int) (*Port, error) {
	p := &Port{CAName: truncName(caName), PortNum: pn}
	dir := portsDir + "/" + strconv.Itoa(pn)
	for _, f := range []struct {
		name string
		dst  *uint32
	}{
		{"lid_mask_count", &p.LMC},
		{"sm_lid", &p.SMLID},
		{"sm_sl", &p.SMSL},
		{"lid", &p.BaseLID},
		{"state", &p.State},
		{"phys_state", &p.PhysState},
		{"rate", &p.Rate},
		{"cap_mask", &p.CapMask},
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
	p.LinkLayer = ll
	if p.GIDPrefix, p.PortGUID, err = u.readGID(dir, "gids/0"); err != nil {
		return nil, err
	}
	pkeyDir := dir + "/pkeys"
	names, err := sysfs.Names(u.abs(pkeyDir))
	if err != nil {
		u.setErr(err)
	}
	var pkeys []string
	for _, n := range names {
		if strings.Trim(n, "0123456789") == "" {
			pkeys = append(pkeys, n)
		}
	}
	if len(pkeys) == 0 {
		u.warn("get_port", "no pkeys found for %s:%d (at dir %s)...", p.CAName, pn, pkeyDir)
		return nil, fmt.Errorf("read pkeys of %s port %d: %w", p.CAName, pn, unix.EIO)
	}
	for _, n := range pkeys {
		if _, err := u.readUint(pkeyDir, n); err != nil {
			return nil, err
		}
	}
	p.FDR10 = u.isFDR10(p)
	return p, nil
}

// isFDR10 is ibstat's is_fdr10: the rate text has "fdr10" (any case) in the
// five bytes before its first ')'.
func (u *umad) isFDR10(p *Port) bool {
	dir := path.Join(sysInfiniband, p.CAName, "ports", strconv.Itoa(p.PortNum))
	rate, err := u.readString(dir, "rate", 32)
	if err != nil {
		return false
	}
	i := strings.IndexByte(rate, ')')
	return i >= 5 && strings.EqualFold(rate[i-5:i], "fdr10")
}

// portGUIDs is umad_get_ca_portguids: the port GUID of ports 0..NumPorts, 0
// for absent ports.
func (u *umad) portGUIDs(name string) ([]uint64, error) {
	u.trace("umad_get_ca_portguids", "ca name %s max port guids %d", name, 64)
	ca, err := u.getCA(name)
	if err != nil {
		return nil, err
	}
	guids := make([]uint64, 0, ca.NumPorts+1)
	for i := 0; i <= ca.NumPorts; i++ {
		var g uint64
		if ca.Ports[i] != nil {
			g = ca.Ports[i].PortGUID
		}
		guids = append(guids, g)
	}
	u.trace("umad_get_ca_portguids", "%s: %d ports", name, len(guids))
	return guids, nil
}

// portHasGID is ibstat's port_has_gid: the port's gids/0 opens for reading.
func (u *umad) portHasGID(caName string, port int) bool {
	f, err := os.Open(u.abs(fmt.Sprintf("%s/%s/ports/%d/gids/0", sysInfiniband, caName, port)))
	if err != nil {
		u.setErr(err)
		return false
	}
	f.Close()
	return true
}

// portCapCM is the port capability bit of a Connection Manager (IB spec,
// PortInfo:CapabilityMask bit 16).
const portCapCM = 0x10000

// portHasCMCap is ibstat's port_has_cm_cap: the port's cap_mask has the CM
// bit.
func (u *umad) portHasCMCap(caName string, port int) bool {
	s, err := u.readString(fmt.Sprintf("%s/%s/ports/%d", sysInfiniband, caName, port), "cap_mask", 32)
	if err != nil {
		return false
	}
	v, _, _ := cstd.Strtoul(s, 0)
	return uint32(v)&portCapCM != 0
}
