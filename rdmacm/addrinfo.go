package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/goverbs/goverbs/internal/enumstr"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// AIFlags are rdma_getaddrinfo's RAI_* flags (struct rdma_addrinfo's ai_flags).
type AIFlags uint32

// Address-info flags, with librdmacm's values.
const (
	AIPassive     AIFlags = 1 << iota // RAI_PASSIVE: the result is for the listening side (SrcAddr)
	AINumericHost                     // RAI_NUMERICHOST: the node must be a numeric address; no name lookup
	AINoRoute                         // RAI_NOROUTE: no route resolution (goverbs never resolves one)
	AIFamily                          // RAI_FAMILY: Family interprets the node (only AF_IB changes anything)
	AISA                              // RAI_SA: resolve through the InfiniBand SA (refused: see GetAddrInfo)
	AIDNS                             // RAI_DNS: resolve through DNS, the default (only rdma_resolve_addrinfo reads it)
)

var aiFlagNames = []string{"RAI_PASSIVE", "RAI_NUMERICHOST", "RAI_NOROUTE", "RAI_FAMILY", "RAI_SA", "RAI_DNS"}

// String joins the flags' C names with "|" ("0" for none, unknown bits in hex).
func (f AIFlags) String() string { return enumstr.Flags(aiFlagNames, uint64(f)) }

// Family is an address family of rdma_addrinfo (ai_family).
type Family uint16

// Address families.
const (
	FamilyUnspec Family = unix.AF_UNSPEC
	FamilyInet   Family = unix.AF_INET
	FamilyInet6  Family = unix.AF_INET6
	FamilyIB     Family = afIB // AF_IB: sockaddr_ib, InfiniBand's native addressing (GID and service id)
)

// String is the family's C name ("AF_INET"), or "Family(n)".
func (f Family) String() string {
	switch f {
	case FamilyUnspec:
		return "AF_UNSPEC"
	case FamilyInet:
		return "AF_INET"
	case FamilyInet6:
		return "AF_INET6"
	case FamilyIB:
		return "AF_IB"
	}
	return "Family(" + strconv.Itoa(int(f)) + ")"
}

// AddrInfoHints are the hints of GetAddrInfo (the input fields of struct rdma_addrinfo). The zero value asks
// for nothing in particular; a nil *AddrInfoHints is librdmacm's NULL hints, which differs in one point: the
// lookup then applies getaddrinfo's default AI_ADDRCONFIG (a family the host has no address of, other than
// the loopback one, is not returned).
type AddrInfoHints struct {
	Flags  AIFlags
	Family Family // FamilyUnspec, FamilyInet, FamilyInet6; FamilyIB: see GetAddrInfo
	// QPType: 0 takes it from the service's socket type: RC for a stream (TCP) service, UD for a datagram
	// (UDP) one. RC, UC and XRC ask for a stream service, UD for a datagram one.
	QPType uverbs.QPType
	// PortSpace: 0 takes it from the service's protocol (PortSpaceTCP, PortSpaceUDP). TCP asks for a TCP
	// service, UDP and IPoIB for a UDP one, IB for the one the QP type implies.
	PortSpace PortSpace
	// SrcAddr is given to a result without a source address (every active one); DstAddr is the result's
	// destination when node and service are both empty (ai_src_addr, ai_dst_addr).
	SrcAddr, DstAddr netip.AddrPort
}

// AddrInfo is one result of GetAddrInfo (struct rdma_addrinfo's output fields).
type AddrInfo struct {
	// Flags is AIPassive for a passive result, 0 for an active one (librdmacm keeps no other hint flag;
	// with node and service both empty it is the hints' flags).
	Flags     AIFlags
	Family    Family
	QPType    uverbs.QPType
	PortSpace PortSpace
	// SrcAddr is the address to bind (passive results, or the hints' source); DstAddr the one to
	// resolve and connect to (active results).
	SrcAddr, DstAddr netip.AddrPort
	// SrcCanonName and DstCanonName are the canonical names librdmacm fills from getaddrinfo's ai_canonname:
	// it never asks for one (no AI_CANONNAME), so they are empty, as in librdmacm, unless a future
	// resolution source (the SA, ibacm) provides them.
	SrcCanonName, DstCanonName string
}

// GAIError is a getaddrinfo error code (EAI_*, glibc's negative values), which rdma_getaddrinfo returns
// unchanged when the lookup of node or service fails. GetAddrInfo's errors wrap one; errors.Is(err,
// EAINoName) works. Error is gai_strerror's text.
type GAIError int

// The EAI_* codes GetAddrInfo returns (glibc's values).
const (
	EAIBadFlags   GAIError = -1  // EAI_BADFLAGS (unused: the hints' flags cannot be bad)
	EAINoName     GAIError = -2  // EAI_NONAME: node or service not known; RAI_NUMERICHOST with a name
	EAIAgain      GAIError = -3  // EAI_AGAIN: temporary resolver failure
	EAIFail       GAIError = -4  // EAI_FAIL: permanent resolver failure
	EAINoData     GAIError = -5  // EAI_NODATA: the name has no address
	EAIFamily     GAIError = -6  // EAI_FAMILY: Family not AF_UNSPEC, AF_INET, AF_INET6 or AF_IB
	EAISockType   GAIError = -7  // EAI_SOCKTYPE: QPType and PortSpace disagree (UD with TCP, RC with UDP)
	EAIService    GAIError = -8  // EAI_SERVICE: the service is not known for the QP type's protocol
	EAIAddrFamily GAIError = -9  // EAI_ADDRFAMILY: a numeric node of another family than Family
	EAIMemory     GAIError = -10 // EAI_MEMORY
	EAISystem     GAIError = -11 // EAI_SYSTEM
)

var gaiNames = map[GAIError][2]string{
	EAIBadFlags:   {"EAI_BADFLAGS", "Bad value for ai_flags"},
	EAINoName:     {"EAI_NONAME", "Name or service not known"},
	EAIAgain:      {"EAI_AGAIN", "Temporary failure in name resolution"},
	EAIFail:       {"EAI_FAIL", "Non-recoverable failure in name resolution"},
	EAINoData:     {"EAI_NODATA", "No address associated with hostname"},
	EAIFamily:     {"EAI_FAMILY", "ai_family not supported"},
	EAISockType:   {"EAI_SOCKTYPE", "ai_socktype not supported"},
	EAIService:    {"EAI_SERVICE", "Servname not supported for ai_socktype"},
	EAIAddrFamily: {"EAI_ADDRFAMILY", "Address family for hostname not supported"},
	EAIMemory:     {"EAI_MEMORY", "Memory allocation failure"},
	EAISystem:     {"EAI_SYSTEM", "System error"},
}

// Error is gai_strerror's text ("Name or service not known").
func (e GAIError) Error() string {
	if n, ok := gaiNames[e]; ok {
		return n[1]
	}
	return "Unknown error"
}

// String is the code's C name ("EAI_NONAME"); Error is gai_strerror's text.
func (e GAIError) String() string {
	if n, ok := gaiNames[e]; ok {
		return n[0]
	}
	return "EAI(" + strconv.Itoa(int(e)) + ")"
}

// GetAddrInfo is GetAddrInfoContext without a deadline.
func GetAddrInfo(node, service string, hints *AddrInfoHints) ([]AddrInfo, error) {
	return GetAddrInfoContext(context.Background(), node, service, hints)
}

// GetAddrInfoContext translates node and service into the addresses, QP type and port space of an rdma_cm
// connection (rdma_getaddrinfo): for an active side (DstAddr, to ResolveAddr and Connect) or, with
// AIPassive, a listening one (SrcAddr, to Bind). An empty node or service is C's NULL; ctx bounds name
// lookups.
//
// It follows librdmacm, which runs getaddrinfo(3) on node and service with hints made from these and
// keeps the first answer:
//
//   - node: a numeric IPv4 address in inet_aton's forms ("10.1", "0x0a000001") or IPv6 (with a zone),
//     or, without AINumericHost, a name looked up with Go's resolver (/etc/hosts and DNS); the first
//     address is taken (Go orders DNS answers by RFC 6724 as glibc does, but keeps /etc/hosts' order
//     where glibc sorts them too). Empty (or "*"): the wildcard address for AIPassive, the loopback
//     address otherwise (0.0.0.0 / ::1 with Family unspecified, as glibc's address sorting gives).
//   - service: a decimal port number as strtoul reads it (glibc's rule: the number is truncated to 16
//     bits; one that overflows an int is taken as a name), or a service name from /etc/services for the
//     QP type's protocol (TCP for RC, UDP for UD; with neither QP type nor port space, TCP first and then
//     UDP, whose match makes the result UD).
//   - QPType and PortSpace default as in AddrInfoHints; the result's QP type and port space are the
//     hints' when given.
//   - Family FamilyIB: librdmacm asks getaddrinfo for any family and, only with AIFamily and
//     AINumericHost both set, turns the IPv6 answer into an AF_IB sockaddr_ib. GetAddrInfo does the
//     same lookup but refuses that last conversion with ErrNotSupported: package rdmacm's ids bind and
//     resolve IPv4 and IPv6 addresses only (netip.AddrPort), never sockaddr_ib.
//   - AISA (IB service resolution through the SA) is refused with ErrNotSupported: its results are AF_IB
//     addresses, which the package does not represent (ID.ResolveAddrInfo sends the SA request itself, for
//     the kernel to answer).
//   - Node and service both empty with hints: the hints' flags, family, QP type, port space and
//     addresses are the result. With nil hints too: unix.EINVAL.
//
// It returns one result (librdmacm adds more only from ibacm). No route or connect data: librdmacm fills
// ai_route and ai_connect only from ibacm (the InfiniBand address cache service), which goverbs does not
// talk to; on a host without ibacm (and on RoCE, where ibacm has nothing to say) librdmacm returns none
// either. Unlike librdmacm it needs no RDMA device: it is address translation only.
//
// Errors are *Error and wrap, as rdma_getaddrinfo's return codes map: an EAI_* code (GAIError, with the
// resolver's *net.DNSError where there is one); -1 with errno EINVAL (unix.EINVAL); -1 with errno
// EOPNOTSUPP (ErrNotSupported, which matches unix.EOPNOTSUPP).
func GetAddrInfoContext(ctx context.Context, node, service string, hints *AddrInfoHints) ([]AddrInfo, error) {
	ai, err := sysResolver.getAddrInfo(ctx, node, service, hints)
	if err != nil {
		return nil, &Error{Op: fmt.Sprintf("getaddrinfo node %q service %q", node, service), Err: err}
	}
	return []AddrInfo{ai}, nil
}

// resolver is what GetAddrInfo asks the system; tests give their own.
type resolver struct {
	lookupIP   func(ctx context.Context, network, host string) ([]netip.Addr, error)
	lookupPort func(ctx context.Context, network, service string) (int, error)
	// addrConfig reports whether the host has an IPv4 / IPv6 address other than 127.0.0.1 / ::1
	// (glibc's __check_pf, for AI_ADDRCONFIG).
	addrConfig func() (v4, v6 bool)
	// v6Loopback reports whether ::1 is reachable (glibc's sorting puts ::1 before 127.0.0.1 then).
	v6Loopback func() bool
}

var sysResolver = resolver{
	lookupIP:   net.DefaultResolver.LookupNetIP,
	lookupPort: net.DefaultResolver.LookupPort,
	addrConfig: hostAddrConfig,
	v6Loopback: func() bool {
		c, err := net.DialUDP("udp6", nil, &net.UDPAddr{IP: net.IPv6loopback, Port: 9})
		if err != nil {
			return false
		}
		c.Close()
		return true
	},
}

func hostAddrConfig() (v4, v6 bool) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true, true
	}
	for _, a := range addrs {
		p, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(p.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		switch {
		case ip.Is4() && ip != netip.AddrFrom4([4]byte{127, 0, 0, 1}):
			v4 = true
		case ip.Is6() && ip != netip.IPv6Loopback():
			v6 = true
		}
	}
	return v4, v6
}

// Socket types and protocols of the getaddrinfo hints librdmacm makes.
const (
	sockStream = unix.SOCK_STREAM
	sockDgram  = unix.SOCK_DGRAM
	protoTCP   = unix.IPPROTO_TCP
	protoUDP   = unix.IPPROTO_UDP
)

// gaiProto is a row of glibc's socket type / protocol table that an rdma_cm lookup can reach.
type gaiProto struct {
	socktype, protocol int
	network            string
}

var gaiProtos = []gaiProto{{sockStream, protoTCP, "tcp"}, {sockDgram, protoUDP, "udp"}}

// socktype is ucma_convert_to_ai's socket type for a QP type.
func socktype(t uverbs.QPType) int {
	switch t {
	case uverbs.QPTypeRC, uverbs.QPTypeUC, uverbs.QPTypeXRCSend, uverbs.QPTypeXRCRecv:
		return sockStream
	case uverbs.QPTypeUD:
		return sockDgram
	}
	return 0
}

// protocol is ucma_convert_to_ai's protocol for a port space (and the socket type, for IB).
func protocol(ps PortSpace, st int) int {
	switch ps {
	case PortSpaceTCP:
		return protoTCP
	case PortSpaceUDP, PortSpaceIPoIB:
		return protoUDP
	case PortSpaceIB:
		switch st {
		case sockStream:
			return protoTCP
		case sockDgram:
			return protoUDP
		}
	}
	return 0
}

// parseServiceNumber reads service as glibc's getaddrinfo does: strtoul(service, &end, 10), a number
// only when it consumed the whole string, stored in an int; a negative int means "look it up by name".
// It returns the port and whether service is a number.
func parseServiceNumber(s string) (uint16, bool) {
	v, ok := strtoul(s)
	if !ok {
		return 0, false
	}
	n := int32(uint32(v)) // unsigned long to int: the low 32 bits
	if n < 0 {
		return 0, false
	}
	return uint16(n), true
}

// strtoul is C's strtoul(s, &end, 10) with *end == '\0' required: leading white space, an optional sign
// (a minus negates in unsigned arithmetic), at least one digit, ULONG_MAX on overflow.
func strtoul(s string) (uint64, bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || (s[i] >= '\t' && s[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if i == len(s) {
		return 0, false
	}
	var v uint64
	over := false
	for ; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (^uint64(0)-d)/10 {
			over = true
		}
		v = v*10 + d
	}
	if over {
		return ^uint64(0), true
	}
	if neg {
		v = -v
	}
	return v, true
}

// inetAton parses an IPv4 address as glibc's inet_aton (getaddrinfo's numeric test) does: one to four
// parts separated by dots, each decimal, octal (leading 0) or hex (0x), the last filling the remaining
// bytes ("10.1" is 10.0.0.1). Nothing may follow but white space (glibc's __inet_aton_exact: nothing).
func inetAton(s string) (netip.Addr, bool) {
	var parts []uint64
	rest := s
	for {
		v, n, ok := cNumber(rest)
		if !ok {
			return netip.Addr{}, false
		}
		parts = append(parts, v)
		rest = rest[n:]
		if rest == "" {
			break
		}
		if rest[0] != '.' || len(parts) == 4 {
			return netip.Addr{}, false
		}
		rest = rest[1:]
	}
	var a uint32
	last := parts[len(parts)-1]
	lim := [...]uint64{0xffffffff, 0xffffff, 0xffff, 0xff}[len(parts)-1]
	if last > lim {
		return netip.Addr{}, false
	}
	for i, p := range parts[:len(parts)-1] {
		if p > 0xff {
			return netip.Addr{}, false
		}
		a |= uint32(p) << (24 - 8*i)
	}
	a |= uint32(last)
	return netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), true
}

// cNumber reads one inet_aton part: 0x/0X hex, leading 0 octal, else decimal; at least one digit (a lone
// "0x" is 0, as in glibc).
func cNumber(s string) (v uint64, n int, ok bool) {
	base := uint64(10)
	i := 0
	if len(s) == 0 || s[0] < '0' || s[0] > '9' {
		return 0, 0, false
	}
	if s[0] == '0' {
		base, i = 8, 1
		if len(s) > 1 && (s[1] == 'x' || s[1] == 'X') {
			base, i = 16, 2
		}
	}
digits:
	for ; i < len(s); i++ {
		c := s[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case base == 16 && c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case base == 16 && c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			d = 99
		}
		if d >= base {
			break digits
		}
		if v > 0xffffffff { // already too big for any part; keep it so
			continue
		}
		v = v*base + d
	}
	return v, i, true
}

// numericHost parses node as getaddrinfo's numeric forms: IPv4 as inet_aton reads it, else IPv6 with an
// optional zone.
func numericHost(node string) (netip.Addr, bool) {
	if a, ok := inetAton(node); ok {
		return a, true
	}
	if !strings.Contains(node, ":") {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(node)
	if err != nil || !a.Is6() {
		return netip.Addr{}, false
	}
	return a, true
}

func (r resolver) getAddrInfo(ctx context.Context, node, service string, hints *AddrInfoHints) (AddrInfo, error) {
	if node == "" && service == "" && hints == nil {
		return AddrInfo{}, fmt.Errorf("no node, service or hints: %w", unix.EINVAL)
	}
	var h AddrInfoHints
	if hints != nil {
		h = *hints
	}
	if h.Flags&AISA != 0 {
		return AddrInfo{}, fmt.Errorf("%v: resolution through the InfiniBand SA gives AF_IB addresses, which package "+
			"rdmacm does not represent: %w", h.Flags, ErrNotSupported)
	}
	if node == "" && service == "" {
		ai := AddrInfo{Flags: h.Flags, Family: h.Family, QPType: h.QPType, PortSpace: h.PortSpace, DstAddr: h.DstAddr,
			SrcAddr: h.SrcAddr}
		return ai, nil
	}

	fam := h.Family
	if fam == FamilyIB {
		fam = FamilyUnspec
	}
	if fam != FamilyUnspec && fam != FamilyInet && fam != FamilyInet6 {
		return AddrInfo{}, fmt.Errorf("family %v: %w", h.Family, EAIFamily)
	}
	passive := h.Flags&AIPassive != 0
	st := socktype(h.QPType)
	proto := protocol(h.PortSpace, st)
	var cands []gaiProto
	for _, p := range gaiProtos {
		if (st == 0 || st == p.socktype) && (proto == 0 || proto == p.protocol) {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		if st != 0 {
			return AddrInfo{}, fmt.Errorf("QP type %v with port space %v: %w", h.QPType, h.PortSpace, EAISockType)
		}
		return AddrInfo{}, fmt.Errorf("port space %v: %w", h.PortSpace, EAIService)
	}

	// The service: a number, or a name looked up for each protocol in turn.
	pick := cands[0]
	var port uint16
	if service != "" {
		if p, ok := parseServiceNumber(service); ok {
			port = p
		} else {
			found := false
			var lerr error
			for _, c := range cands {
				p, err := r.lookupPort(ctx, c.network, service)
				if err == nil && p >= 0 && p <= 0xffff {
					pick, port, found = c, uint16(p), true
					break
				}
				lerr = err
			}
			if !found {
				if ctx.Err() != nil {
					return AddrInfo{}, fmt.Errorf("%w: %w", EAIAgain, ctx.Err())
				}
				if lerr != nil {
					return AddrInfo{}, fmt.Errorf("%w (%v)", EAIService, lerr)
				}
				return AddrInfo{}, EAIService
			}
		}
	}

	// AI_ADDRCONFIG, in getaddrinfo's default hints (librdmacm's NULL hints) only.
	if hints == nil {
		v4, v6 := r.addrConfig()
		switch {
		case fam == FamilyUnspec && v4 != v6:
			fam = map[bool]Family{true: FamilyInet, false: FamilyInet6}[v4]
		case fam == FamilyInet && !v4, fam == FamilyInet6 && !v6:
			return AddrInfo{}, fmt.Errorf("no %v address on this host (AI_ADDRCONFIG): %w", fam, EAINoName)
		}
	}

	// The node.
	var addr netip.Addr
	switch {
	case node == "" || node == "*":
		switch {
		case passive && fam == FamilyInet6:
			addr = netip.IPv6Unspecified()
		case passive:
			addr = netip.IPv4Unspecified()
		case fam == FamilyInet6 || (fam == FamilyUnspec && r.v6Loopback()):
			addr = netip.IPv6Loopback()
		default:
			addr = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		}
	default:
		if a, ok := numericHost(node); ok {
			switch {
			case a.Is4() && fam == FamilyInet6, a.Is6() && fam == FamilyInet && !a.Is4In6():
				return AddrInfo{}, fmt.Errorf("%s is not %v: %w", node, fam, EAIAddrFamily)
			case fam == FamilyInet:
				a = a.Unmap()
			}
			addr = a
			break
		}
		if h.Flags&AINumericHost != 0 {
			return AddrInfo{}, fmt.Errorf("%s is not a numeric address (%v): %w", node, AINumericHost, EAINoName)
		}
		network := map[Family]string{FamilyUnspec: "ip", FamilyInet: "ip4", FamilyInet6: "ip6"}[fam]
		addrs, err := r.lookupIP(ctx, network, node)
		if err != nil {
			return AddrInfo{}, fmt.Errorf("%w: %w", gaiCode(err), err)
		}
		if len(addrs) == 0 {
			return AddrInfo{}, fmt.Errorf("%s: %w", node, EAINoData)
		}
		addr = addrs[0]
		if fam != FamilyInet6 {
			addr = addr.Unmap()
		}
	}

	if h.Family == FamilyIB && h.Flags&(AIFamily|AINumericHost) == AIFamily|AINumericHost {
		return AddrInfo{}, fmt.Errorf("%v with %v|%v asks for an AF_IB sockaddr_ib (a GID and service id), "+
			"which package rdmacm's ids cannot bind or resolve (IPv4 and IPv6 only): %w",
			h.Family, AIFamily, AINumericHost, ErrNotSupported)
	}
	ai := AddrInfo{Family: FamilyInet6, QPType: h.QPType, PortSpace: h.PortSpace}
	if addr.Is4() {
		ai.Family = FamilyInet
	}
	if ai.QPType == 0 {
		ai.QPType = map[int]uverbs.QPType{sockStream: uverbs.QPTypeRC, sockDgram: uverbs.QPTypeUD}[pick.socktype]
	}
	if ai.PortSpace == 0 {
		ai.PortSpace = map[int]PortSpace{protoTCP: PortSpaceTCP, protoUDP: PortSpaceUDP}[pick.protocol]
	}
	ap := netip.AddrPortFrom(addr, port)
	if passive {
		ai.Flags, ai.SrcAddr = AIPassive, ap
	} else {
		ai.DstAddr = ap
	}
	if !ai.SrcAddr.IsValid() && h.SrcAddr.IsValid() {
		ai.SrcAddr = h.SrcAddr
	}
	return ai, nil
}

// gaiCode maps a Go resolver error to getaddrinfo's code.
func gaiCode(err error) GAIError {
	var de *net.DNSError
	switch {
	case errors.As(err, &de) && de.IsNotFound:
		return EAINoName
	case errors.As(err, &de) && (de.IsTemporary || de.IsTimeout):
		return EAIAgain
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return EAIAgain
	}
	return EAIFail
}
