package rdmacm

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// fakeResolver answers from tables: "localhost" (127.0.0.1, ::1), "v6only" (2001:db8::1), services echo (tcp
// and udp 7), ssh (tcp 22), bootps (udp 67). lookups counts the host lookups.
func fakeResolver(v4, v6, loop6 bool, lookups *int) resolver {
	return resolver{
		lookupIP: func(_ context.Context, network, host string) ([]netip.Addr, error) {
			*lookups++
			var all []netip.Addr
			switch host {
			case "localhost":
				all = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}
			case "v6only":
				all = []netip.Addr{netip.MustParseAddr("2001:db8::1")}
			default:
				return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
			var out []netip.Addr
			for _, a := range all {
				if network == "ip" || (network == "ip4") == a.Is4() {
					out = append(out, a)
				}
			}
			if len(out) == 0 {
				return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
			}
			return out, nil
		},
		lookupPort: func(_ context.Context, network, service string) (int, error) {
			p, ok := map[string]int{"tcp/echo": 7, "udp/echo": 7, "tcp/ssh": 22, "udp/bootps": 67}[network+"/"+service]
			if !ok {
				return 0, &net.DNSError{Err: "unknown port", Name: network + "/" + service, IsNotFound: true}
			}
			return p, nil
		},
		addrConfig: func() (bool, bool) { return v4, v6 },
		v6Loopback: func() bool { return loop6 },
	}
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// GetAddrInfo's translation, case by case, against what rdma_getaddrinfo gives (the lab test compares the
// same kinds of input with the C library itself: TestLabGetAddrInfoMatchesLibrdmacm).
func TestGetAddrInfoTable(t *testing.T) {
	rc, ud, uc := uverbs.QPTypeRC, uverbs.QPTypeUD, uverbs.QPTypeUC
	active := func(fam Family, qp uverbs.QPType, ps PortSpace, dst string) AddrInfo {
		return AddrInfo{Family: fam, QPType: qp, PortSpace: ps, DstAddr: ap(dst)}
	}
	in4, in6 := FamilyInet, FamilyInet6
	for _, tc := range []struct {
		name          string
		node, service string
		hints         *AddrInfoHints
		want          AddrInfo
		err           error
	}{
		{"numeric v4, nil hints", "10.233.0.1", "7471", nil, active(in4, rc, PortSpaceTCP, "10.233.0.1:7471"), nil},
		{"inet_aton short form", "10.1", "", &AddrInfoHints{}, active(in4, rc, PortSpaceTCP, "10.0.0.1:0"), nil},
		{"inet_aton hex and octal", "0x0a.010.0.1", "1", &AddrInfoHints{}, active(in4, rc, PortSpaceTCP, "10.8.0.1:1"), nil},
		{"numeric v6", "fe80::1%eth0", "7", &AddrInfoHints{}, active(in6, rc, PortSpaceTCP, "[fe80::1%eth0]:7"), nil},
		{"v4-mapped v6 stays v6", "::ffff:10.0.0.1", "7", nil, active(in6, rc, PortSpaceTCP, "[::ffff:10.0.0.1]:7"), nil},
		{"v4-mapped with AF_INET is v4", "::ffff:10.0.0.1", "7", &AddrInfoHints{Family: in4},
			active(in4, rc, PortSpaceTCP, "10.0.0.1:7"), nil},
		{"passive, no node", "", "7471", &AddrInfoHints{Flags: AIPassive},
			AddrInfo{Flags: AIPassive, Family: in4, QPType: rc, PortSpace: PortSpaceTCP, SrcAddr: ap("0.0.0.0:7471")}, nil},
		{"passive, no node, AF_INET6", "", "7471", &AddrInfoHints{Flags: AIPassive, Family: in6},
			AddrInfo{Flags: AIPassive, Family: in6, QPType: rc, PortSpace: PortSpaceTCP, SrcAddr: ap("[::]:7471")}, nil},
		{"passive keeps only RAI_PASSIVE", "10.0.0.1", "1", &AddrInfoHints{Flags: AIPassive | AINumericHost | AINoRoute},
			AddrInfo{Flags: AIPassive, Family: in4, QPType: rc, PortSpace: PortSpaceTCP, SrcAddr: ap("10.0.0.1:1")}, nil},
		{"active, no node: ::1", "", "7", &AddrInfoHints{}, active(in6, rc, PortSpaceTCP, "[::1]:7"), nil},
		{"active, no node, AF_INET", "", "7", &AddrInfoHints{Family: in4}, active(in4, rc, PortSpaceTCP, "127.0.0.1:7"), nil},
		{"node *", "*", "7", &AddrInfoHints{Flags: AIPassive},
			AddrInfo{Flags: AIPassive, Family: in4, QPType: rc, PortSpace: PortSpaceTCP, SrcAddr: ap("0.0.0.0:7")}, nil},
		{"service name", "10.0.0.1", "echo", nil, active(in4, rc, PortSpaceTCP, "10.0.0.1:7"), nil},
		{"udp-only service name: UD", "10.0.0.1", "bootps", nil, active(in4, ud, PortSpaceUDP, "10.0.0.1:67"), nil},
		{"UD hint", "10.0.0.1", "echo", &AddrInfoHints{QPType: ud}, active(in4, ud, PortSpaceUDP, "10.0.0.1:7"), nil},
		{"UC hint is a stream", "10.0.0.1", "echo", &AddrInfoHints{QPType: uc}, active(in4, uc, PortSpaceTCP, "10.0.0.1:7"), nil},
		{"port space IB", "10.0.0.1", "7", &AddrInfoHints{PortSpace: PortSpaceIB}, active(in4, rc, PortSpaceIB, "10.0.0.1:7"), nil},
		{"port space IB, UD", "10.0.0.1", "7", &AddrInfoHints{PortSpace: PortSpaceIB, QPType: ud},
			active(in4, ud, PortSpaceIB, "10.0.0.1:7"), nil},
		{"port space IPoIB", "10.0.0.1", "7", &AddrInfoHints{PortSpace: PortSpaceIPoIB}, active(in4, ud, PortSpaceIPoIB, "10.0.0.1:7"), nil},
		{"port space UDP", "10.0.0.1", "echo", &AddrInfoHints{PortSpace: PortSpaceUDP}, active(in4, ud, PortSpaceUDP, "10.0.0.1:7"), nil},
		{"unknown port space", "10.0.0.1", "7", &AddrInfoHints{PortSpace: 0x1234}, active(in4, rc, 0x1234, "10.0.0.1:7"), nil},
		{"tcp-only service for UD", "10.0.0.1", "ssh", &AddrInfoHints{QPType: ud}, AddrInfo{}, EAIService},
		{"UD with TCP", "10.0.0.1", "7", &AddrInfoHints{QPType: ud, PortSpace: PortSpaceTCP}, AddrInfo{}, EAISockType},
		{"RC with UDP", "10.0.0.1", "7", &AddrInfoHints{QPType: rc, PortSpace: PortSpaceUDP}, AddrInfo{}, EAISockType},
		{"name", "localhost", "7", &AddrInfoHints{}, active(in4, rc, PortSpaceTCP, "127.0.0.1:7"), nil},
		{"name, AF_INET6", "localhost", "7", &AddrInfoHints{Family: in6}, active(in6, rc, PortSpaceTCP, "[::1]:7"), nil},
		{"RAI_NUMERICHOST with a name", "localhost", "7", &AddrInfoHints{Flags: AINumericHost}, AddrInfo{}, EAINoName},
		{"unknown name", "nosuch.invalid", "7", nil, AddrInfo{}, EAINoName},
		{"unknown service", "10.0.0.1", "no-such-service", nil, AddrInfo{}, EAIService},
		{"bad family", "10.0.0.1", "7", &AddrInfoHints{Family: 99}, AddrInfo{}, EAIFamily},
		{"v6 literal, AF_INET", "::1", "7", &AddrInfoHints{Family: in4}, AddrInfo{}, EAIAddrFamily},
		{"v4 literal, AF_INET6", "10.0.0.1", "7", &AddrInfoHints{Family: in6}, AddrInfo{}, EAIAddrFamily},
		{"AF_IB alone is any family", "10.0.0.1", "7", &AddrInfoHints{Family: FamilyIB}, active(in4, rc, PortSpaceTCP, "10.0.0.1:7"), nil},
		{"AF_IB sockaddr refused", "fe80::1", "7", &AddrInfoHints{Family: FamilyIB, Flags: AIFamily | AINumericHost},
			AddrInfo{}, ErrNotSupported},
		{"RAI_SA refused", "", "0x1234", &AddrInfoHints{Flags: AISA}, AddrInfo{}, ErrNotSupported},
		{"nothing", "", "", nil, AddrInfo{}, unix.EINVAL},
		{"hints only", "", "", &AddrInfoHints{Flags: AINoRoute | AIPassive, Family: in4, QPType: ud, PortSpace: 0x99,
			SrcAddr: ap("10.0.0.2:3"), DstAddr: ap("10.0.0.1:4")},
			AddrInfo{Flags: AINoRoute | AIPassive, Family: in4, QPType: ud, PortSpace: 0x99, SrcAddr: ap("10.0.0.2:3"),
				DstAddr: ap("10.0.0.1:4")}, nil},
		{"hints' source in an active result", "10.0.0.1", "7", &AddrInfoHints{SrcAddr: ap("10.0.0.2:0")},
			AddrInfo{Family: in4, QPType: rc, PortSpace: PortSpaceTCP, DstAddr: ap("10.0.0.1:7"), SrcAddr: ap("10.0.0.2:0")}, nil},
		{"port truncated to 16 bits", "10.0.0.1", "70000", nil, active(in4, rc, PortSpaceTCP, "10.0.0.1:4464"), nil},
		{"port 2^32 is 0", "10.0.0.1", "4294967296", nil, active(in4, rc, PortSpaceTCP, "10.0.0.1:0"), nil},
		{"port over INT_MAX is a name", "10.0.0.1", "2147483648", nil, AddrInfo{}, EAIService},
		{"-1 is a name", "10.0.0.1", "-1", nil, AddrInfo{}, EAIService},
		{"strtoul's white space and sign", "10.0.0.1", " +7", nil, active(in4, rc, PortSpaceTCP, "10.0.0.1:7"), nil},
		{"hex port is a name", "10.0.0.1", "0x10", nil, AddrInfo{}, EAIService},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n int
			got, err := fakeResolver(true, true, true, &n).getAddrInfo(t.Context(), tc.node, tc.service, tc.hints)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("got %+v, %v; want error %v", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v;\nwant %+v", got, err, tc.want)
			}
		})
	}
}

// NULL hints: getaddrinfo's AI_ADDRCONFIG. With ::1 unreachable an active lookup without node gives 127.0.0.1.
func TestGetAddrInfoNilHints(t *testing.T) {
	var n int
	r := fakeResolver(true, false, true, &n) // IPv4 addresses only
	if _, err := r.getAddrInfo(t.Context(), "v6only", "7", nil); !errors.Is(err, EAINoName) {
		t.Errorf("v6-only name on a v4-only host: %v", err)
	}
	if _, err := r.getAddrInfo(t.Context(), "::1", "7", nil); !errors.Is(err, EAIAddrFamily) {
		t.Errorf("::1 on a v4-only host: %v", err)
	}
	if ai, err := r.getAddrInfo(t.Context(), "v6only", "7", &AddrInfoHints{}); err != nil || ai.DstAddr != ap("[2001:db8::1]:7") {
		t.Errorf("with hints (no AI_ADDRCONFIG): %+v, %v", ai, err)
	}
	r = fakeResolver(true, true, false, &n)
	if ai, err := r.getAddrInfo(t.Context(), "", "7", nil); err != nil || ai.DstAddr != ap("127.0.0.1:7") {
		t.Errorf("no ::1: %+v, %v", ai, err)
	}
	r = fakeResolver(false, true, true, &n)
	if _, err := r.getAddrInfo(t.Context(), "10.0.0.1", "7", &AddrInfoHints{}); err != nil {
		t.Errorf("with hints: %v", err)
	}
	if _, err := r.getAddrInfo(t.Context(), "", "7", &AddrInfoHints{Family: FamilyInet}); err != nil {
		t.Errorf("with hints: %v", err)
	}
	if _, err := r.getAddrInfo(t.Context(), "127.0.0.1", "7", nil); !errors.Is(err, EAIAddrFamily) {
		t.Errorf("v4 literal on a v6-only host with NULL hints: %v", err)
	}
}

// Errors name the call and its input and wrap the code and the resolver's error; RAI_NUMERICHOST never
// asks the resolver.
func TestGetAddrInfoErrors(t *testing.T) {
	_, err := GetAddrInfo("name.invalid", "7", &AddrInfoHints{Flags: AINumericHost})
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, EAINoName) ||
		!strings.Contains(err.Error(), `getaddrinfo node "name.invalid" service "7"`) ||
		!strings.Contains(err.Error(), "RAI_NUMERICHOST") {
		t.Errorf("got %v", err)
	}
	var n int
	r := fakeResolver(true, true, true, &n)
	_, err = r.getAddrInfo(t.Context(), "nosuch", "7", nil)
	var de *net.DNSError
	if !errors.As(err, &de) || !errors.Is(err, EAINoName) {
		t.Errorf("resolver error not wrapped: %v", err)
	}
	n = 0
	r.getAddrInfo(t.Context(), "localhost", "7", &AddrInfoHints{Flags: AINumericHost})
	if n != 0 {
		t.Errorf("RAI_NUMERICHOST looked the name up")
	}
	_, err = GetAddrInfo("fe80::1", "", &AddrInfoHints{Family: FamilyIB, Flags: AIFamily | AINumericHost})
	if !errors.Is(err, ErrNotSupported) || !errors.Is(err, unix.EOPNOTSUPP) || !errors.Is(err, errors.ErrUnsupported) ||
		!strings.Contains(err.Error(), "sockaddr_ib") {
		t.Errorf("AF_IB: %v", err)
	}
	if EAIService.Error() != "Servname not supported for ai_socktype" || EAIService.String() != "EAI_SERVICE" ||
		GAIError(-100).String() != "EAI(-100)" {
		t.Errorf("GAIError texts: %q %q", EAIService.Error(), EAIService.String())
	}
}

// The system's resolver, with what needs no network: numeric hosts, localhost, the built-in services.
func TestGetAddrInfoSystem(t *testing.T) {
	ai, err := GetAddrInfo("localhost", "ssh", &AddrInfoHints{Family: FamilyInet})
	if err != nil || len(ai) != 1 || ai[0].DstAddr != ap("127.0.0.1:22") || ai[0].QPType != uverbs.QPTypeRC {
		t.Errorf("localhost ssh: %+v, %v", ai, err)
	}
	ai, err = GetAddrInfo("localhost", "", nil)
	if err != nil || !ai[0].DstAddr.Addr().IsLoopback() {
		t.Errorf("localhost: %+v, %v", ai, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := GetAddrInfoContext(ctx, "10.0.0.1", "7", nil); err != nil {
		t.Errorf("numeric lookup with a done context: %v", err)
	}
}

func TestAddrInfoStrings(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{(AIPassive | AINumericHost).String(), "RAI_PASSIVE|RAI_NUMERICHOST"},
		{(AIFamily | AISA | AIDNS | AINoRoute).String(), "RAI_NOROUTE|RAI_FAMILY|RAI_SA|RAI_DNS"},
		{AIFlags(0).String(), "0"},
		{AIFlags(0x41).String(), "RAI_PASSIVE|0x40"},
		{FamilyInet.String(), "AF_INET"},
		{FamilyInet6.String(), "AF_INET6"},
		{FamilyIB.String(), "AF_IB"},
		{FamilyUnspec.String(), "AF_UNSPEC"},
		{Family(99).String(), "Family(99)"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if AIPassive != 1 || AINumericHost != 2 || AINoRoute != 4 || AIFamily != 8 || AISA != 0x10 || AIDNS != 0x20 {
		t.Error("RAI_* values differ from librdmacm's")
	}
}

func TestInetAton(t *testing.T) {
	for in, want := range map[string]string{
		"1.2.3.4": "1.2.3.4", "1": "0.0.0.1", "1.2": "1.0.0.2", "1.2.3": "1.2.0.3", "0x7f.1": "127.0.0.1",
		"017.0.0.1": "15.0.0.1", "1.256": "1.0.1.0", "0x": "0.0.0.0", "4294967295": "255.255.255.255",
		"0XFF.0.0.0": "255.0.0.0", "1.2.65535": "1.2.255.255",
		"256.1.1.1": "", "1.2.3.4.5": "", "1..2": "", "": "", "1.2.3.4 ": "", "08": "", "4294967296": "",
		"1.2.3.256": "", "a.b.c.d": "", ".1": "", "1.": "", "-1": "", "1.2.65536": "",
	} {
		a, ok := inetAton(in)
		if got := map[bool]string{true: a.String(), false: ""}[ok]; got != want {
			t.Errorf("inetAton(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzGetAddrInfoParse drives the parsing half of GetAddrInfo (the numeric host and service rules, the
// hints' combinations) with a resolver that knows no names: it must not panic, and what it returns must
// hold together.
func FuzzGetAddrInfoParse(f *testing.F) {
	f.Add("10.233.0.1", "7471", uint32(0), uint16(0), uint8(0), uint16(0), true)
	f.Add("fe80::1%eth0", "echo", uint32(AIPassive), uint16(10), uint8(4), uint16(0x106), true)
	f.Add("0x7f.1", " -1", uint32(AINumericHost), uint16(2), uint8(2), uint16(0x111), false)
	f.Add("", "", uint32(0), uint16(27), uint8(0), uint16(0x13f), true)
	f.Fuzz(func(t *testing.T, node, service string, flags uint32, fam uint16, qp uint8, ps uint16, withHints bool) {
		var h *AddrInfoHints
		if withHints {
			h = &AddrInfoHints{Flags: AIFlags(flags), Family: Family(fam), QPType: uverbs.QPType(qp), PortSpace: PortSpace(ps)}
		}
		var n int
		ai, err := fakeResolver(true, true, true, &n).getAddrInfo(context.Background(), node, service, h)
		if h != nil && h.Flags&AINumericHost != 0 && n != 0 {
			t.Fatalf("RAI_NUMERICHOST looked %q up", node)
		}
		if err != nil {
			var g GAIError
			if !errors.As(err, &g) && !errors.Is(err, ErrNotSupported) && !errors.Is(err, unix.EINVAL) {
				t.Fatalf("error of no known kind: %v", err)
			}
			return
		}
		if node == "" && service == "" {
			return // the hints, copied
		}
		addr := ai.DstAddr
		if h != nil && h.Flags&AIPassive != 0 {
			addr = ai.SrcAddr
			if ai.Flags != AIPassive || ai.DstAddr.IsValid() {
				t.Fatalf("passive result %+v", ai)
			}
		} else if ai.Flags != 0 {
			t.Fatalf("active result %+v", ai)
		}
		if !addr.IsValid() || (ai.Family == FamilyInet) != addr.Addr().Is4() {
			t.Fatalf("result %+v", ai)
		}
		if p, ok := parseServiceNumber(service); ok && addr.Port() != p {
			t.Fatalf("service %q: port %d, want %d", service, addr.Port(), p)
		}
		if ai.QPType == 0 || ai.PortSpace == 0 {
			t.Fatalf("result without QP type or port space: %+v", ai)
		}
		if a, ok := inetAton(node); ok && addr.Addr() != a {
			t.Fatalf("node %q: %v, inet_aton says %v", node, addr.Addr(), a)
		}
	})
}
