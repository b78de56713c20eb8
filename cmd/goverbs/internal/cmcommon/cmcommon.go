// Package cmcommon is what librdmacm's example programs share (their common.c): address lookup as
// get_rdma_addr does it, and the first event channel with its diagnostics (create_first_event_channel). The tool
// clones cmatose, udaddy, mckey, cmtime and rping use it.
package cmcommon

import (
	"fmt"
	"io"
	"net"
	"net/netip"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/rdmacm"
	"golang.org/x/sys/unix"
)

// GetAddr is get_rdma_addr: host (or, with none, the wildcard for a passive lookup and 127.0.0.1 for an active
// one) and the service port looked up for network ("tcp" for RC tools, "udp" for UD ones). On failure it returns
// getaddrinfo's gai_strerror text, which the tools print.
func GetAddr(network, service, host string, numeric, passive bool) (netip.AddrPort, string) {
	port, err := net.LookupPort(network, service)
	if err != nil {
		return netip.AddrPort{}, "Servname not supported for ai_socktype"
	}
	if host == "" {
		if passive {
			return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(port)), ""
		}
		return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)), ""
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(a, uint16(port)), ""
	}
	if numeric {
		return netip.AddrPort{}, "Name or service not known"
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, "Name or service not known"
	}
	a, _ := netip.AddrFromSlice(ips[0])
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), ""
}

// RdmaGetaddrinfo is rdma_getaddrinfo as rdma_server, rdma_client, rdma_xserver and rdma_xclient call it for IP
// names: host (with wildcard, "" is the passive 0.0.0.0) and the TCP service port. On failure it returns
// gai_strerror's text and getaddrinfo's (negative) code, which the tools print and return.
func RdmaGetaddrinfo(host, service string, wildcard bool) (netip.AddrPort, string, int) {
	port, err := net.LookupPort("tcp", service)
	if err != nil {
		return netip.AddrPort{}, "Servname not supported for ai_socktype", -8
	}
	if wildcard && host == "" {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(port)), "", 0
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(a, uint16(port)), "", 0
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, "Name or service not known", -2
	}
	a, _ := netip.AddrFromSlice(ips[0])
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), "", 0
}

// CreateFirstEventChannel is common.c's create_first_event_channel: rdma_create_event_channel, and when it
// fails, "No RDMA devices were detected" (ENODEV) or perror's line on stderr.
func CreateFirstEventChannel(stderr io.Writer) (*rdmacm.Channel, error) {
	ch, err := rdmacm.NewChannel()
	if err != nil {
		if cstd.ErrnoOf(err, 0) == unix.ENODEV {
			fmt.Fprintf(stderr, "No RDMA devices were detected\n")
		} else {
			cstd.Perror(stderr, "failed to create RDMA CM event channel", err)
		}
		return nil, err
	}
	return ch, nil
}
