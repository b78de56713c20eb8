package rdmacm

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// Sizes of the socket addresses the kernel accepts (rdma_addr_size).
const (
	sizeofSockaddrIn  = 16
	sizeofSockaddrIn6 = 28
	sizeofSockaddrIB  = 48
	afIB              = 27
)

// putSockaddr encodes ap into s as a sockaddr_in (4-byte addresses) or a
// sockaddr_in6 (16-byte addresses) and returns its size.
func putSockaddr(s *abi.KernelSockaddrStorage, ap netip.AddrPort) (uint16, error) {
	*s = abi.KernelSockaddrStorage{}
	a := ap.Addr()
	if !a.IsValid() {
		return 0, fmt.Errorf("invalid address: %w", unix.EINVAL)
	}
	// Data starts at byte 2 of the sockaddr (after the family).
	d := s.Data[:]
	binary.BigEndian.PutUint16(d[0:2], ap.Port())
	if a.Is4() {
		s.Family = unix.AF_INET
		a4 := a.As4()
		copy(d[2:6], a4[:])
		return sizeofSockaddrIn, nil
	}
	s.Family = unix.AF_INET6
	a16 := a.As16()
	copy(d[6:22], a16[:])
	if z := a.Zone(); z != "" {
		idx, err := strconv.ParseUint(z, 10, 32) // a numeric zone is the scope id itself
		if err != nil {
			ifi, err := net.InterfaceByName(z)
			if err != nil {
				return 0, fmt.Errorf("zone of %v: %w", a, err)
			}
			idx = uint64(ifi.Index)
		}
		binary.NativeEndian.PutUint32(d[22:26], uint32(idx))
	}
	return sizeofSockaddrIn6, nil
}

// sockaddr decodes a sockaddr_in/sockaddr_in6 (AF_IB and unknown families
// give the zero AddrPort).
func sockaddr(s *abi.KernelSockaddrStorage) netip.AddrPort {
	d := s.Data[:]
	port := binary.BigEndian.Uint16(d[0:2])
	switch s.Family {
	case unix.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(d[2:6])), port)
	case unix.AF_INET6:
		a := netip.AddrFrom16([16]byte(d[6:22]))
		if sc := binary.NativeEndian.Uint32(d[22:26]); sc != 0 {
			if ifi, err := net.InterfaceByIndex(int(sc)); err == nil {
				a = a.WithZone(ifi.Name)
			}
		}
		return netip.AddrPortFrom(a, port)
	}
	return netip.AddrPort{}
}

// ParseAddr parses "host", "host:port" or "[v6]:port" with a default port, as a client's command line
// names a server: it is GetAddrInfo (active, RC, port space TCP) on the host and port, whose DstAddr it
// returns; the port may be a number or a TCP service name, the host a numeric address or a name (the
// first address the resolver gives), empty for the loopback address. A string that is already an
// address and port is taken as it is.
func ParseAddr(s string, defPort uint16) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	host, port := s, strconv.Itoa(int(defPort))
	if _, err := netip.ParseAddr(s); err != nil {
		if h, p, err := net.SplitHostPort(s); err == nil {
			host, port = h, p
		}
	}
	ai, err := GetAddrInfo(host, port, &AddrInfoHints{QPType: uverbs.QPTypeRC, PortSpace: PortSpaceTCP})
	if err != nil {
		return netip.AddrPort{}, err
	}
	return ai[0].DstAddr, nil
}
