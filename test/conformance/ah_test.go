package conformance

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/uverbs"
)

// errorsIsAny reports whether err wraps one of errnos.
func errorsIsAny(err error, errnos ...unix.Errno) bool {
	for _, e := range errnos {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func (e *env) globalAH() uverbs.AHAttr {
	return uverbs.AHAttr{IsGlobal: true, PortNum: uint8(e.pnum),
		GRH: uverbs.GlobalRoute{DGID: e.gid.GID, SGIDIndex: uint8(e.gid.Index), HopLimit: 1}}
}

// pyverbs: test_addr.AHTest.test_create_ah, test_destroy_ah — an AH with a global route to the port's own GID;
// destroy twice is a no-op the second time.
func TestAH(t *testing.T) {
	e := newEnv(t)
	e.skipIWARP(gapAH)
	if e.port.State != uverbs.PortActive && e.port.State != uverbs.PortInit {
		t.Skipf("port %d is %v", e.pnum, e.port.State)
	}
	pd := e.pd()
	ah, err := pd.CreateAH(e.globalAH())
	skipIfUnsupported(t, err, "address handle")
	require.NoError(t, err)
	require.Equal(t, e.globalAH(), ah.Attr())
	require.NoError(t, ah.Close())
	require.NoError(t, ah.Close())
}

// pyverbs: test_addr.AHTest.test_create_ah_roce — on an Ethernet (RoCE) port an AH without GRH is EINVAL.
func TestNegCreateAHRoCEWithoutGRH(t *testing.T) {
	e := newEnv(t)
	e.skipIWARP(gapAH)
	if e.port.LinkLayer != uverbs.LinkLayerEthernet {
		t.Skip("port is not RoCE: a local-route AH is legal")
	}
	pd := e.pd()
	ah, err := pd.CreateAH(uverbs.AHAttr{PortNum: uint8(e.pnum)})
	if err == nil {
		ah.Close()
	}
	requireErrno(t, err, unix.EINVAL)
}

// Negative: an AH on a port beyond phys_port_cnt is EINVAL.
func TestNegCreateAHBadPort(t *testing.T) {
	e := newEnv(t)
	e.skipIWARP(gapAH)
	pd := e.pd()
	a := e.globalAH()
	a.PortNum = e.dev.PhysPortCnt + 1
	ah, err := pd.CreateAH(a)
	if err == nil {
		ah.Close()
	}
	requireErrno(t, err, unix.EINVAL)
}

// Negative: an AH whose source GID index names an empty GID table entry is rejected (the kernel finds no GID
// attribute for it).
func TestNegCreateAHEmptySGIDIndex(t *testing.T) {
	e := newEnv(t)
	e.skipIWARP(gapAH)
	idx := e.emptyGIDIndex(min(e.port.GIDTblLen, 256))
	if idx < 0 {
		t.Skip("no empty GID index below 256")
	}
	pd := e.pd()
	a := e.globalAH()
	a.GRH.SGIDIndex = uint8(idx)
	ah, err := pd.CreateAH(a)
	if err == nil {
		ah.Close()
	}
	require.Error(t, err)
	if !errorsIsAny(err, unix.EINVAL, unix.ENOENT, unix.ENODATA) {
		t.Fatalf("create AH with empty sgid_index %d: %v, want EINVAL/ENOENT/ENODATA", idx, err)
	}
}
