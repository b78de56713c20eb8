// Package libumad is the sysfs side of rdma-core's libibumad (libibumad/umad.c) as rdma-core's diagnostic tools
// see it: the CA and port records umad_get_ca fills, the device lists, the ibwarn diagnostics and umad_debug
// traces, and errno as libc leaves it, byte for byte, so that ibstat and perfquery print what their C builds
// print. It is written once here for both.
//
// It is not the public package umad: that one is goverbs' Go API for user MADs (open a port, register an agent,
// send and receive), with Go errors; this one keeps libibumad's quirks (names cut to 19 bytes, "IB" for an
// unreadable link layer, a missing class directory read as an empty list, ibwarn lines on stderr), which belong
// to the tools that reproduce rdma-core's output.
package libumad

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
)

// Limits of libibumad's fixed-size buffers (umad.h); names longer than CANameLen-1 bytes are truncated exactly
// as strncpy into them truncates.
const (
	CANameLen  = 20 // UMAD_CA_NAME_LEN
	CAMaxPorts = 10 // UMAD_CA_MAX_PORTS: ports 0..9
	fwVerLen   = 20
	caTypeLen  = 40
	hwVerLen   = 20
)

// The directories libibumad reads, as its diagnostics print them (Lib.Abs maps them into the configured tree).
const (
	SysInfiniband = "/sys/class/infiniband"
	SysMAD        = "/sys/class/infiniband_mad"
)

// Port is what libibumad's umad_port_t holds for one port.
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
	FDR10     bool   // ibstat's is_fdr10 (set by ibstat, not by libibumad)
	CapMask   uint32 // ports/N/cap_mask
	GIDPrefix uint64 // ports/N/gids/0, first 8 bytes
	PortGUID  uint64 // ports/N/gids/0, last 8 bytes
	LinkLayer string // ports/N/link_layer, "IB" when unreadable
}

// IsIB reports whether the port's link layer is InfiniBand, as Debian's libibumad 65.0 tests it ("InfiniBand"
// or "IB").
func (p *Port) IsIB() bool { return p.LinkLayer == "InfiniBand" || p.LinkLayer == "IB" }

// CA is what libibumad's umad_ca_t holds for one device.
type CA struct {
	Name         string // truncated to 19 bytes like umad_ca_t.ca_name
	NodeType     uint32 // node_type, leading number ("1: CA" -> 1)
	NumPorts     int    // highest port number found under ports/
	FWVer        string // fw_ver, "" when unreadable
	HWVer        string // hw_rev, "" when unreadable
	CAType       string // hca_type, "" when unreadable
	NodeGUID     uint64 // node_guid
	SysImageGUID uint64 // sys_image_guid
	Ports        [CAMaxPorts]*Port
}

// Lib is the libibumad state of one process over a sysfs tree. It keeps errno as the C library leaves it,
// because the tools' fatal messages end with strerror(errno).
type Lib struct {
	FS     sysfs.FS
	Stderr io.Writer
	PID    int
	Debug  int // umad_debug level: traces print when it is above 0
	Errno  unix.Errno
}

// SetErr records the errno of a failed system call, as libc does.
func (u *Lib) SetErr(err error) {
	if e := cstd.ErrnoOf(err, 0); e != 0 {
		u.Errno = e
	}
}

// Warn prints an ibwarn line ("ibwarn: [PID] fn: text").
func (u *Lib) Warn(fn, format string, args ...any) {
	fmt.Fprintf(u.Stderr, "ibwarn: [%d] %s: %s\n", u.PID, fn, fmt.Sprintf(format, args...))
}

// Trace prints an ibwarn line when umad_debug is on (libibumad's TRACE and DEBUG).
func (u *Lib) Trace(fn, format string, args ...any) {
	if u.Debug > 0 {
		u.Warn(fn, format, args...)
	}
}

// Abs maps a libibumad absolute path (/sys/...) into the configured tree.
func (u *Lib) Abs(p string) string { return u.FS.SysPath(strings.TrimPrefix(p, "/sys/")) }

// ReadString is libibumad's sys_read_string: one read of at most max bytes, NUL-terminated at min(n, max-1),
// cut at the last newline.
func (u *Lib) ReadString(dir, file string, max int) (string, error) {
	b, err := sysfs.ReadN(u.Abs(dir+"/"+file), max)
	if err != nil {
		u.SetErr(err)
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

// ReadUint is sys_read_uint: strtoul(text, NULL, 0) stored in an unsigned.
func (u *Lib) ReadUint(dir, file string) (uint32, error) {
	s, err := u.ReadString(dir, file, 32)
	if err != nil {
		return 0, err
	}
	v, _, _ := cstd.Strtoul(s, 0)
	return uint32(v), nil
}

// errInval is returned for sysfs text libibumad refuses to parse.
var errInval = fmt.Errorf("parse sysfs value: %w", unix.EINVAL)

// strsepFields splits s like repeated strsep(&s, ": \t\n"), returning at most n tokens; ok is false when fewer
// than n exist.
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

// ReadGUID is sys_read_guid: four 16-bit hex groups.
func (u *Lib) ReadGUID(dir, file string) (uint64, error) {
	s, err := u.ReadString(dir, file, 32)
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

// ReadGID is sys_read_gid: eight 16-bit hex groups, returned as prefix and interface id.
func (u *Lib) ReadGID(dir, file string) (prefix, guid uint64, err error) {
	s, err := u.ReadString(dir, file, 64)
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

// TruncName cuts a device name as strncpy into a UMAD_CA_NAME_LEN buffer does.
func TruncName(name string) string {
	if len(name) > CANameLen-1 {
		return name[:CANameLen-1]
	}
	return name
}

// IsIBType is is_ib_type: node_type 1..3 (CA, switch, router).
func (u *Lib) IsIBType(name string) bool {
	t, err := u.ReadUint(SysInfiniband+"/"+name, "node_type")
	return err == nil && t >= 1 && t <= 3
}

// DeviceList is umad_get_ca_device_list followed by umad_sort_ca_device_list: the InfiniBand-type devices,
// sorted by name. A missing class directory is an empty list, not an error.
func (u *Lib) DeviceList() ([]string, error) {
	names, err := sysfs.Names(u.Abs(SysInfiniband))
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			u.Errno = 0
			return nil, nil
		}
		u.SetErr(err)
		return nil, fmt.Errorf("list %s: %w", SysInfiniband, err)
	}
	var out []string
	for _, n := range names {
		if u.IsIBType(n) {
			out = append(out, n)
		}
	}
	u.Trace("umad_get_ca_device_list", "return %d cas", len(out))
	u.Errno = 0
	sort.Strings(out)
	return out, nil
}

// CASNames is umad_get_cas_names: the InfiniBand-type devices with names that fit, sorted, at most max; the
// default "mthca0" when the class directory cannot be read.
func (u *Lib) CASNames(max int) []string {
	u.Trace("umad_get_cas_names", "max %d", max)
	names, err := sysfs.Names(u.Abs(SysInfiniband))
	if err != nil {
		u.Trace("umad_get_cas_names", "return 1 ca")
		return []string{"mthca0"} // def_ca_name
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		if len(n) < CANameLen && len(out) < max && u.IsIBType(n) {
			out = append(out, n)
		}
	}
	u.Trace("umad_get_cas_names", "return %d cas", len(out))
	return out
}

// GetCA is umad_get_ca.
func (u *Lib) GetCA(name string) (*CA, error) {
	u.Trace("umad_get_ca", "ca_name %s", name)
	ca, err := u.readCA(name)
	if err != nil {
		return nil, err
	}
	u.Trace("umad_get_ca", "opened %s", name)
	return ca, nil
}

// ReleaseCA is umad_release_ca (the record is garbage collected; only its traces remain).
func (u *Lib) ReleaseCA(ca *CA) {
	u.Trace("umad_release_ca", "ca_name %s", ca.Name)
	u.Trace("umad_release_ca", "releasing %s", ca.Name)
}

// ReadCA is libibumad's get_ca without umad_get_ca's traces (resolve_ca_name's use).
func (u *Lib) ReadCA(name string) (*CA, error) { return u.readCA(name) }

func (u *Lib) readCA(name string) (*CA, error) {
	ca := &CA{Name: TruncName(name)}
	dir := SysInfiniband + "/" + ca.Name
	var err error
	if ca.NodeType, err = u.ReadUint(dir, "node_type"); err != nil {
		return nil, err
	}
	ca.FWVer, _ = u.ReadString(dir, "fw_ver", fwVerLen)
	ca.HWVer, _ = u.ReadString(dir, "hw_rev", hwVerLen)
	ca.CAType, _ = u.ReadString(dir, "hca_type", caTypeLen)
	if ca.NodeGUID, err = u.ReadGUID(dir, "node_guid"); err != nil {
		return nil, err
	}
	if ca.SysImageGUID, err = u.ReadGUID(dir, "sys_image_guid"); err != nil {
		return nil, err
	}
	portsDir := dir + "/ports"
	entries, err := sysfs.Names(u.Abs(portsDir))
	if err != nil {
		u.SetErr(err)
		return nil, fmt.Errorf("read ports of %s: %w", ca.Name, unix.ENOENT)
	}
	sort.Strings(entries) // scandir(..., alphasort) in the C locale
	for _, e := range entries {
		pn := 0
		if e != "0" {
			pn = int(cstd.Atoi(e))
			if pn <= 0 || pn >= CAMaxPorts {
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
func (u *Lib) readPort(caName, portsDir string, pn int) (*Port, error) {
	p := &Port{CAName: TruncName(caName), PortNum: pn}
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
		v, err := u.ReadUint(dir, f.name)
		if err != nil {
			return nil, err
		}
		*f.dst = v
	}
	ll, err := u.ReadString(dir, "link_layer", CANameLen)
	if err != nil {
		ll = "IB"
	}
	p.LinkLayer = ll
	if p.GIDPrefix, p.PortGUID, err = u.ReadGID(dir, "gids/0"); err != nil {
		return nil, err
	}
	pkeyDir := dir + "/pkeys"
	names, err := sysfs.Names(u.Abs(pkeyDir))
	if err != nil {
		u.SetErr(err)
	}
	var pkeys []string
	for _, n := range names {
		if strings.Trim(n, "0123456789") == "" {
			pkeys = append(pkeys, n)
		}
	}
	if len(pkeys) == 0 {
		u.Warn("get_port", "no pkeys found for %s:%d (at dir %s)...", p.CAName, pn, pkeyDir)
		return nil, fmt.Errorf("read pkeys of %s port %d: %w", p.CAName, pn, unix.EIO)
	}
	for _, n := range pkeys {
		if _, err := u.ReadUint(pkeyDir, n); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// PortGUIDs is umad_get_ca_portguids: the port GUID of ports 0..NumPorts, 0 for absent ports.
func (u *Lib) PortGUIDs(name string) ([]uint64, error) {
	u.Trace("umad_get_ca_portguids", "ca name %s max port guids %d", name, 64)
	ca, err := u.GetCA(name)
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
	u.Trace("umad_get_ca_portguids", "%s: %d ports", name, len(guids))
	return guids, nil
}
