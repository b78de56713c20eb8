package conformance

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// TestResolveEthL2MatchesLibibverbs: Context.ResolveEthL2 answers what libibverbs' ibv_resolve_eth_l2_from_gid
// answers (test/cpeer/l2peer.c, the VM's libibverbs) for destinations that take each of its ways: the port's
// own address (the netdev's MAC), a neighbour the kernel's table holds (a permanent entry made for the test),
// IPv4 and IPv6 multicast and an IPv6 link-local address (the MAC the address encodes), veth1's address (local
// to the VM but not reached through veth0: both probe and give up, EHOSTUNREACH), an address on the subnet
// nobody answers (EHOSTUNREACH after libibverbs' 3 seconds of probes) and one no route reaches. On rxe five
// resolve to the same MAC and three are refused alike (seen with -v, 6.12); on iWARP the source GID holds no IP
// address, and both refuse alike.
func TestResolveEthL2MatchesLibibverbs(t *testing.T) {
	e := newEnv(t)
	labtest.RequireRoot(t)
	peer := labtest.BuildCPeer(t, "l2peer")
	netdev := labtest.Netdev()
	const staticIP, staticMAC = "10.233.0.99", "02:00:00:00:00:99"
	if out, err := exec.Command("ip", "neigh", "replace", staticIP, "lladdr", staticMAC, "dev", netdev, "nud", "permanent").CombinedOutput(); err != nil {
		t.Fatalf("ip neigh replace: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "neigh", "del", staticIP, "dev", netdev).Run() })

	v6 := -1 // a link-local IPv6 GID of the port, the source for IPv6 destinations
	tbl, err := e.ctx.QueryGIDTable()
	require.NoError(t, err)
	for _, g := range tbl {
		if a := netip.AddrFrom16(g.GID); g.Port == e.pnum && a.Is6() && !a.Is4In6() && a.IsLinkLocalUnicast() {
			v6 = g.Index
			break
		}
	}
	gid := func(s string) uverbs.GID { return uverbs.GID(netip.MustParseAddr(s).As16()) }
	own := netip.AddrFrom16(e.gid.GID).Unmap()
	cases := []struct {
		name string
		sgid int
		dgid uverbs.GID
	}{
		{"own address", e.gid.Index, e.gid.GID},
		{"other local address", e.gid.Index, gid("::ffff:10.233.0.2")},
		{"neighbour table", e.gid.Index, gid("::ffff:" + staticIP)},
		{"IPv4 multicast", e.gid.Index, gid("::ffff:239.1.2.3")},
		{"unanswered", e.gid.Index, gid("::ffff:10.233.0.77")},
		{"no route", e.gid.Index, gid("::ffff:198.51.100.1")},
	}
	if v6 >= 0 {
		cases = append(cases,
			struct {
				name string
				sgid int
				dgid uverbs.GID
			}{"IPv6 link-local", v6, gid("fe80::ff:fe00:99")},
			struct {
				name string
				sgid int
				dgid uverbs.GID
			}{"IPv6 multicast", v6, gid("ff02::1:ff00:99")})
	}
	t.Logf("source %v (GID index %d), IPv6 source GID index %d", own, e.gid.Index, v6)
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			out, err := exec.Command(peer, e.ctx.Name(), strconv.Itoa(e.pnum), strconv.Itoa(tc.sgid), fmt.Sprintf("%x", tc.dgid[:])).Output()
			require.NoError(t, err, "l2peer")
			f := strings.Fields(string(out))
			require.Len(t, f, 3, "l2peer printed %q", out)
			ret, err := strconv.Atoi(f[0])
			require.NoError(t, err)
			attr := uverbs.AHAttr{IsGlobal: true, PortNum: uint8(e.pnum), GRH: uverbs.GlobalRoute{DGID: tc.dgid, SGIDIndex: uint8(tc.sgid)}}
			l2, gerr := e.ctx.ResolveEthL2(context.Background(), attr)
			if ret != 0 {
				require.Error(t, gerr, "libibverbs answers %d (%v)", ret, unix.Errno(-ret))
				require.ErrorIs(t, gerr, unix.Errno(-ret), "libibverbs answers %v", unix.Errno(-ret))
				t.Logf("both refuse: %v", gerr)
				return
			}
			require.NoError(t, gerr, "libibverbs resolves %s vlan %s", f[1], f[2])
			require.Equal(t, f[1], l2.MAC.String(), "MAC")
			require.Equal(t, f[2], strconv.Itoa(int(l2.VLAN)), "VLAN id")
			t.Logf("both resolve %s vlan %d", l2.MAC, l2.VLAN)
		})
	}
}
