package uverbs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// NoVLAN is EthL2.VLAN when the route leaves through a netdev that is not a VLAN device.
const NoVLAN = 0xffff

// EthL2 is the Ethernet next hop of a RoCE destination: the MAC address packets to it are sent to, and the
// VLAN id of the netdev they leave through (NoVLAN for none).
type EthL2 struct {
	MAC  net.HardwareAddr
	VLAN uint16
}

// resolveTimeout and resolveTries are libibverbs' neighbour resolution bounds (NEIGH_GET_DEFAULT_TIMEOUT_MS,
// NUM_OF_TRIES): the probe is sent again every resolveTimeout/resolveTries until the kernel has the
// neighbour, at most resolveTries times.
const (
	resolveTimeout = 3 * time.Second
	resolveTries   = 11
)

// ResolveEthL2 finds the Ethernet next hop of a RoCE address handle (ibv_resolve_eth_l2_from_gid): the source
// is the port's GID at attr.GRH.SGIDIndex and the netdev holding that address, the destination
// attr.GRH.DGID. As libibverbs it asks the kernel's routing table for the way from that netdev (a gateway
// replaces the destination; a blackhole, unreachable or prohibited route is EHOSTUNREACH), answers a local
// destination with the netdev's own MAC and a multicast or IPv6 link-local one with the MAC its address
// encodes, and otherwise takes the neighbour table's entry, first provoking resolution with a UDP datagram to
// the discard port and waiting for the kernel's neighbour event — within 3 seconds, or ctx's deadline if
// sooner. Errors: the GID query's; EINVAL when no netdev holds the source address; EHOSTUNREACH when no
// next hop is found.
func (c *Context) ResolveEthL2(ctx context.Context, attr AHAttr) (EthL2, error) {
	op := "resolve Ethernet L2 from GID"
	sgid, err := c.QueryGID(int(attr.PortNum), int(attr.GRH.SGIDIndex))
	if err != nil {
		return EthL2{}, err
	}
	fail := func(errno unix.Errno, format string, args ...any) (EthL2, error) {
		return EthL2{}, wrapf(c.dev.Name, fmt.Errorf(format+": %w", append(args, errno)...), "%s", op)
	}
	src, dst := gidIP(sgid.GID), gidIP(attr.GRH.DGID)
	oif := ifindexOf(src)
	if oif <= 0 {
		return fail(unix.EINVAL, "no netdev holds the source address %v (GID index %d)", src, attr.GRH.SGIDIndex)
	}
	l2, err := resolveL2(ctx, src, dst, oif)
	if err != nil {
		return EthL2{}, wrapf(c.dev.Name, fmt.Errorf("%v from %v: %w: %w", dst, src, err, unix.EHOSTUNREACH), "%s", op)
	}
	return l2, nil
}

// gidIP is the IP address a RoCE GID holds: IPv4 for a v4-mapped GID.
func gidIP(g GID) netip.Addr { return netip.AddrFrom16(g).Unmap() }

// ifindexOf is the index of the interface that holds a, or 0 (libibverbs' get_ifindex over getifaddrs).
func ifindexOf(a netip.Addr) int {
	ifs, err := net.Interfaces()
	if err != nil {
		return 0
	}
	for _, ifi := range ifs {
		addrs, err := ifi.Addrs()
		if err != nil {
			continue
		}
		for _, ad := range addrs {
			if n, ok := ad.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == a {
					return ifi.Index
				}
			}
		}
	}
	return 0
}

// resolveL2 is libibverbs' neighbour lookup (neigh.c) from src on interface oif to dst.
func resolveL2(ctx context.Context, src, dst netip.Addr, oif int) (EthL2, error) {
	link, err := netlink.LinkByIndex(oif)
	if err != nil {
		return EthL2{}, fmt.Errorf("link %d: %w", oif, err)
	}
	vlan := uint16(NoVLAN)
	if v, ok := link.(*netlink.Vlan); ok && v.VlanId >= 0 && v.VlanId <= 0xfff {
		vlan = uint16(v.VlanId)
	}
	routes, err := netlink.RouteGetWithOptions(dst.AsSlice(), &netlink.RouteGetOptions{OifIndex: oif})
	if err != nil {
		return EthL2{}, fmt.Errorf("route: %w", err)
	}
	if len(routes) == 0 {
		return EthL2{}, errors.New("no route")
	}
	r := routes[0]
	switch r.Type {
	case unix.RTN_BLACKHOLE, unix.RTN_UNREACHABLE, unix.RTN_PROHIBIT, unix.RTN_THROW:
		return EthL2{}, fmt.Errorf("route type %d: %w", r.Type, unix.ENETUNREACH)
	case unix.RTN_LOCAL:
		if len(link.Attrs().HardwareAddr) == 0 {
			return EthL2{}, fmt.Errorf("local destination on %s, which has no link-layer address", link.Attrs().Name)
		}
		return EthL2{MAC: link.Attrs().HardwareAddr, VLAN: vlan}, nil
	}
	if gw, ok := netip.AddrFromSlice(r.Gw); ok && r.Gw != nil {
		dst = gw.Unmap()
	}
	if mac := encodedMAC(dst); mac != nil {
		return EthL2{MAC: mac, VLAN: vlan}, nil
	}
	mac, err := neighbour(ctx, src, dst, oif)
	if err != nil {
		return EthL2{}, err
	}
	return EthL2{MAC: mac, VLAN: vlan}, nil
}

// encodedMAC is the MAC address an IP address encodes, or nil: an IPv4 multicast group (01:00:5e and its low
// 23 bits), an IPv6 multicast address (33:33 and its last 4 bytes), an IPv6 link-local address (its
// EUI-64 interface id, universal/local bit flipped back).
func encodedMAC(a netip.Addr) net.HardwareAddr {
	b := a.AsSlice()
	switch {
	case a.Is4() && b[0]&0xf0 == 0xe0:
		return net.HardwareAddr{0x01, 0x00, 0x5e, b[1] & 0x7f, b[2], b[3]}
	case a.Is6() && b[0] == 0xff:
		return net.HardwareAddr{0x33, 0x33, b[12], b[13], b[14], b[15]}
	case a.Is6() && b[0] == 0xfe && b[1] == 0x80 && b[2] == 0 && b[3] == 0 && b[4] == 0 && b[5] == 0 && b[6] == 0 && b[7] == 0:
		return net.HardwareAddr{b[8] ^ 2, b[9], b[10], b[13], b[14], b[15]}
	}
	return nil
}

// neighbour returns the link-layer address of dst on oif from the kernel's neighbour table, provoking
// resolution when the table has none: a 2-byte UDP datagram from src to dst's discard port, sent again on
// every tick of resolveTimeout/resolveTries while the kernel has not answered, until resolveTries ticks or
// ctx end.
func neighbour(ctx context.Context, src, dst netip.Addr, oif int) (net.HardwareAddr, error) {
	family := unix.AF_INET
	if dst.Is6() {
		family = unix.AF_INET6
	}
	lookup := func() net.HardwareAddr {
		ns, err := netlink.NeighList(oif, family)
		if err != nil {
			return nil
		}
		for _, n := range ns {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == dst && len(n.HardwareAddr) > 0 {
				return n.HardwareAddr
			}
		}
		return nil
	}
	if mac := lookup(); mac != nil {
		return mac, nil
	}
	updates := make(chan netlink.NeighUpdate, 16)
	done := make(chan struct{})
	defer close(done)
	if err := netlink.NeighSubscribe(updates, done); err != nil {
		return nil, fmt.Errorf("neighbour events: %w", err)
	}
	probe, err := newProbe(src, dst, oif)
	if err != nil {
		return nil, err
	}
	defer probe.Close()
	if err := probe.send(); err != nil {
		return nil, err
	}
	tick := time.NewTicker(resolveTimeout / resolveTries)
	defer tick.Stop()
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	for tries := 0; ; {
		select {
		case u, ok := <-updates:
			if !ok {
				return nil, errors.New("neighbour events ended")
			}
			if ip, ok := netip.AddrFromSlice(u.IP); ok && ip.Unmap() == dst && u.LinkIndex == oif && len(u.HardwareAddr) > 0 {
				return u.HardwareAddr, nil
			}
		case <-tick.C:
			if mac := lookup(); mac != nil {
				return mac, nil
			}
			if tries++; tries >= resolveTries {
				return nil, fmt.Errorf("no neighbour entry for %v after %d probes", dst, tries)
			}
			probe.send()
		case <-ctx.Done():
			return nil, fmt.Errorf("neighbour %v: %w", dst, ctx.Err())
		}
	}
}

// probe is the UDP socket libibverbs provokes neighbour resolution with.
type probe struct {
	fd int
	to unix.Sockaddr
}

func newProbe(src, dst netip.Addr, oif int) (*probe, error) {
	var from, to unix.Sockaddr
	family := unix.AF_INET
	if dst.Is4() {
		from, to = &unix.SockaddrInet4{Addr: src.As4()}, &unix.SockaddrInet4{Port: 9, Addr: dst.As4()}
	} else {
		family = unix.AF_INET6
		from, to = &unix.SockaddrInet6{Addr: src.As16()}, &unix.SockaddrInet6{Port: 9, Addr: dst.As16(), ZoneId: uint32(oif)}
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("probe socket: %w", err)
	}
	if err := unix.Bind(fd, from); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("probe socket: bind %v: %w", src, err)
	}
	return &probe{fd: fd, to: to}, nil
}

// send sends the probe ("H" and its NUL, as libibverbs), retrying while the kernel says EADDRNOTAVAIL (an
// address still tentative).
func (p *probe) send() error {
	for i := 0; ; i++ {
		err := unix.Sendto(p.fd, []byte("H\x00"), 0, p.to)
		if !errors.Is(err, unix.EADDRNOTAVAIL) || i == 1000 {
			if err != nil {
				return fmt.Errorf("probe: %w", err)
			}
			return nil
		}
		time.Sleep(time.Millisecond)
	}
}

func (p *probe) Close() error { return unix.Close(p.fd) }
