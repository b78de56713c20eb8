package rdmacm_test

import (
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"github.com/goverbs/goverbs/rdmacm"
	"github.com/goverbs/goverbs/test/labtest"
	"golang.org/x/sys/unix"
)

// rdma_resolve_addrinfo and rdma_query_addrinfo. The DNS path: on 7.3.4 the lookup's result (GetAddrInfo's)
// is announced by ADDRINFO_RESOLVED on the id's channel and QueryAddrInfo hands it over once; on 6.1 and
// 6.12, which lack WRITE_CM_EVENT, the typed refusal. The SA path (RESOLVE_IB_SERVICE): librdmacm's
// refusals before the kernel, the kernel's EINVAL for an id bound to no device (7.3.4: not taken for a
// missing command), and for an id bound to rxe the kernel's EOPNOTSUPP (RoCE has no SA) on 7.3.4 and the
// missing command on 6.1 and 6.12.
func TestLabResolveAddrInfo(t *testing.T) {
	labtest.Require(t)
	ctx := testCtx(t)
	newer := labtest.Kernel().AtLeast(6, 13) // the lab's 7.3.4; 6.1 and 6.12 lack both commands
	id := newRCID(t)
	if _, err := id.QueryAddrInfo(); !errors.Is(err, unix.ENOENT) {
		t.Errorf("query with nothing resolved: %v, want ENOENT", err)
	}
	hints := &rdmacm.AddrInfoHints{Flags: rdmacm.AINumericHost}
	err := id.ResolveAddrInfo("10.233.0.1", "7471", hints)
	if !newer {
		if !errors.Is(err, rdmacm.ErrNotSupported) || !errors.Is(err, unix.EINVAL) {
			t.Errorf("resolve addrinfo on %v: %v, want ErrNotSupported (EINVAL)", labtest.Kernel(), err)
		}
		if _, err := id.QueryAddrInfo(); !errors.Is(err, unix.ENOENT) {
			t.Errorf("query after the refusal: %v, want ENOENT", err)
		}
	} else {
		if err != nil {
			t.Fatal(err)
		}
		if err := id.ResolveAddrInfo("10.233.0.1", "7471", hints); !errors.Is(err, unix.EBUSY) {
			t.Errorf("second resolve while one is pending: %v, want EBUSY", err)
		}
		if ev := nextEvent(t, ctx, id.Channel(), rdmacm.EventAddrInfoResolved); ev.ID != id || ev.Status != 0 {
			t.Errorf("ADDRINFO_RESOLVED for id %d status %d, want id %d status 0", ev.ID.Num(), ev.Status, id.Num())
		}
		got, err := id.QueryAddrInfo()
		if err != nil {
			t.Fatal(err)
		}
		want, err := rdmacm.GetAddrInfo("10.233.0.1", "7471", hints)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) || got[0].DstAddr != netip.MustParseAddrPort("10.233.0.1:7471") {
			t.Errorf("query: %+v, want %+v", got, want)
		}
		if _, err := id.QueryAddrInfo(); !errors.Is(err, unix.ENOENT) {
			t.Errorf("second query: %v, want ENOENT", err)
		}
	}

	sa := &rdmacm.AddrInfoHints{Flags: rdmacm.AISA}
	for _, c := range []struct {
		node  string
		hints *rdmacm.AddrInfoHints
	}{{"10.233.0.1", sa}, {"", &rdmacm.AddrInfoHints{Flags: rdmacm.AISA | rdmacm.AIDNS}}} {
		if err := id.ResolveAddrInfo(c.node, "0x1234", c.hints); !errors.Is(err, rdmacm.ErrNotSupported) || errors.Is(err, unix.EINVAL) {
			t.Errorf("RAI_SA with node %q flags %v: %v, want ErrNotSupported before the kernel", c.node, c.hints.Flags, err)
		}
	}
	if err := id.ResolveAddrInfo("", "", sa); !errors.Is(err, unix.EINVAL) || errors.Is(err, rdmacm.ErrNotSupported) {
		t.Errorf("RAI_SA without a service: %v, want EINVAL", err)
	}
	err = id.ResolveAddrInfo("", "0x1234", sa) // no device yet
	if newer && (!errors.Is(err, unix.EINVAL) || errors.Is(err, rdmacm.ErrNotSupported)) {
		t.Errorf("RESOLVE_IB_SERVICE on an unbound id: %v, want the kernel's EINVAL", err)
	} else if !newer && (!errors.Is(err, rdmacm.ErrNotSupported) || !errors.Is(err, unix.EINVAL)) {
		t.Errorf("RESOLVE_IB_SERVICE on %v: %v, want ErrNotSupported (EINVAL)", labtest.Kernel(), err)
	}
	if err := id.Bind(labAddr(0)); err != nil {
		t.Fatal(err)
	}
	for _, service := range []string{"0x1234", "goverbs service"} {
		err = id.ResolveAddrInfo("", service, sa)
		var en unix.Errno
		errors.As(err, &en)
		if newer && (!errors.Is(err, rdmacm.ErrNotSupported) || en != unix.EOPNOTSUPP) {
			t.Errorf("RESOLVE_IB_SERVICE %q on rxe: %v, want the kernel's EOPNOTSUPP as ErrNotSupported", service, err)
		} else if !newer && (!errors.Is(err, rdmacm.ErrNotSupported) || en != unix.EINVAL) {
			t.Errorf("RESOLVE_IB_SERVICE %q on %v: %v, want ErrNotSupported (EINVAL)", service, labtest.Kernel(), err)
		}
	}
	if _, err := id.QueryAddrInfo(); !errors.Is(err, unix.ENOENT) {
		t.Errorf("query after the SA refusals: %v, want ENOENT", err)
	}
}
