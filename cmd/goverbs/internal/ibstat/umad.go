package ibstat

import (
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/libumad"
)

// Port and CA are what libibumad's umad_port_t and umad_ca_t hold and ibstat prints (package libumad reads
// them, as libibumad does for ibstat.c).
type (
	Port = libumad.Port
	CA   = libumad.CA
)

// getCA is umad_get_ca with ibstat's is_fdr10 filled in for every port.
func getCA(u *libumad.Lib, name string) (*CA, error) {
	ca, err := u.GetCA(name)
	if err != nil {
		return nil, err
	}
	for _, p := range ca.Ports[:ca.NumPorts+1] {
		if p != nil {
			p.FDR10 = isFDR10(u, p)
		}
	}
	return ca, nil
}

// isFDR10 is ibstat's is_fdr10: the rate text has "fdr10" (any case) in the five bytes before its first ')'.
func isFDR10(u *libumad.Lib, p *Port) bool {
	dir := path.Join(libumad.SysInfiniband, p.CAName, "ports", strconv.Itoa(p.PortNum))
	rate, err := u.ReadString(dir, "rate", 32)
	if err != nil {
		return false
	}
	i := strings.IndexByte(rate, ')')
	return i >= 5 && strings.EqualFold(rate[i-5:i], "fdr10")
}

// portHasGID is ibstat's port_has_gid: the port's gids/0 opens for reading.
func portHasGID(u *libumad.Lib, caName string, port int) bool {
	f, err := os.Open(u.Abs(fmt.Sprintf("%s/%s/ports/%d/gids/0", libumad.SysInfiniband, caName, port)))
	if err != nil {
		u.SetErr(err)
		return false
	}
	f.Close()
	return true
}

// portCapCM is the port capability bit of a Connection Manager (IB spec, PortInfo:CapabilityMask bit 16).
const portCapCM = 0x10000

// portHasCMCap is ibstat's port_has_cm_cap: the port's cap_mask has the CM bit.
func portHasCMCap(u *libumad.Lib, caName string, port int) bool {
	s, err := u.ReadString(fmt.Sprintf("%s/%s/ports/%d", libumad.SysInfiniband, caName, port), "cap_mask", 32)
	if err != nil {
		return false
	}
	v, _, _ := cstd.Strtoul(s, 0)
	return uint32(v)&portCapCM != 0
}
