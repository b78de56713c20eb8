package labtest

import (
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// IPv6Addr returns the first IPv6 address of the lab's RDMA netdev (Netdev), with the netdev as its zone when
// it is link-local, once duplicate address detection is over (no address of the netdev tentative: until then
// the kernel cannot route from it and rdma_cm's resolution fails). It skips t when the netdev has none.
func IPv6Addr(t testing.TB) netip.Addr {
	t.Helper()
	ifi, err := net.InterfaceByName(Netdev())
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	var a6 netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is6() && !p.Addr().Is4In6() {
			a6 = p.Addr()
			if a6.IsLinkLocalUnicast() {
				a6 = a6.WithZone(ifi.Name)
			}
			break
		}
	}
	if !a6.IsValid() {
		t.Skipf("%s has no IPv6 address (%v)", ifi.Name, addrs)
	}
	waitDAD(t, ifi.Name)
	return a6
}

// waitDAD waits (bounded) until no IPv6 address of netdev is tentative (IFA_F_TENTATIVE in
// /proc/net/if_inet6).
func waitDAD(t testing.TB, netdev string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile("/proc/net/if_inet6")
		if err != nil {
			t.Fatal(err)
		}
		tentative := false
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			// address ifindex prefixlen scope flags name; IFA_F_TENTATIVE = 0x40
			if len(f) == 6 && f[5] == netdev {
				if v, err := strconv.ParseUint(f[4], 16, 32); err == nil && v&0x40 != 0 {
					tentative = true
				}
			}
		}
		if !tentative {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still has tentative IPv6 addresses after 10 s", netdev)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
