package conformance

import (
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/netlinkrdma"
	"github.com/goverbs/goverbs/rawcmd"
	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// pyverbs: test_device.DeviceTest.test_dev_list, test_open_dev
func TestDeviceListAndOpen(t *testing.T) {
	labtest.Require(t)
	devs, err := uverbs.Devices()
	require.NoError(t, err)
	require.NotEmpty(t, devs)
	found := false
	for _, d := range devs {
		if d.Name == labtest.Device() {
			found = true
		}
		if d.Err != nil {
			continue
		}
		ctx, err := d.Open()
		require.NoError(t, err, "open %s", d.Name)
		require.Equal(t, d.Name, ctx.Name())
		require.NoError(t, ctx.Close())
	}
	require.True(t, found, "device %s not listed in %+v", labtest.Device(), devs)
}

// verifyDeviceAttr is pyverbs' DeviceTest.verify_device_attr.
func verifyDeviceAttr(t *testing.T, a *uverbs.DeviceAttr, nodeType uverbs.NodeType) {
	t.Helper()
	pg := uint64(os.Getpagesize())
	require.NotZero(t, a.NodeGUID)
	require.NotZero(t, a.SysImageGUID)
	require.Greater(t, a.MaxMRSize, pg)
	require.GreaterOrEqual(t, a.PageSizeCap, pg)
	require.NotZero(t, a.VendorID)
	require.NotZero(t, a.MaxQP)
	require.NotZero(t, a.MaxQPWR)
	require.NotZero(t, a.MaxSGE)
	require.NotZero(t, a.MaxCQ)
	require.NotZero(t, a.MaxCQE)
	require.NotZero(t, a.MaxMR)
	require.NotZero(t, a.MaxPD)
	if nodeType == 1 { // CA
		require.NotZero(t, a.MaxPKeys)
	}
}

// pyverbs: test_device.DeviceTest.test_query_device, test_query_device_ex, test_phys_port_cnt_ex
func TestQueryDevice(t *testing.T) {
	e := newEnv(t)
	verifyDeviceAttr(t, e.dev, e.ctx.Device().NodeType)
	// The extended response reaches at least the fields every 6.1 kernel fills.
	require.GreaterOrEqual(t, uintptr(e.dev.ResponseLength), unsafe.Offsetof(e.dev.Raw.DeviceCapFlagsEx)+8)
	// phys_port_cnt (u8) equals the device's port count below 256.
	require.Equal(t, int(e.ctx.Device().NumPorts), int(e.dev.PhysPortCnt))
}

// pyverbs: test_device.DeviceTest.test_query_port
func TestQueryPort(t *testing.T) {
	e := newEnv(t)
	for p := 1; p <= int(e.dev.PhysPortCnt); p++ {
		pa, err := e.ctx.QueryPort(p)
		require.NoError(t, err)
		require.LessOrEqual(t, pa.State, uverbs.PortActiveDefer)
		require.True(t, pa.MaxMTU >= uverbs.MTU256 && pa.MaxMTU <= uverbs.MTU4096, "max_mtu %d", pa.MaxMTU)
		require.True(t, pa.ActiveMTU >= uverbs.MTU256 && pa.ActiveMTU <= pa.MaxMTU, "active_mtu %d", pa.ActiveMTU)
		require.Contains(t, []uverbs.LinkLayer{uverbs.LinkLayerInfiniBand, uverbs.LinkLayerEthernet, uverbs.LinkLayerUnspecified}, pa.LinkLayer)
		require.Greater(t, pa.MaxMsgSz, uint32(0x1000))
		require.NotZero(t, pa.ActiveWidth)
		require.NotZero(t, pa.ActiveSpeed)
	}
}

// pyverbs: test_device.DeviceTest.test_query_pkey, test_get_pkey_index (P_Key table entry 0 is the default
// partition's full-member key, readable as ibv_query_pkey does)
func TestQueryPKey(t *testing.T) {
	e := newEnv(t)
	e.skipIWARP(gapPKey)
	if e.ctx.Device().NodeType != 1 {
		t.Skipf("node type %v has no P_Key table", e.ctx.Device().NodeType)
	}
	pk, err := e.ctx.QueryPKey(e.pnum, 0)
	require.NoError(t, err)
	require.Equal(t, uint16(0x7fff), pk&0x7fff, "pkey 0 is %#x", pk)
	// ibv_get_pkey_index: the P_Key is found where it was read; one the table does not hold is ENOENT; a port
	// that does not exist is EINVAL.
	i, err := e.ctx.PKeyIndex(e.pnum, pk)
	require.NoError(t, err)
	require.Equal(t, 0, i)
	_, err = e.ctx.PKeyIndex(e.pnum, 0x1234)
	requireErrno(t, err, unix.ENOENT)
	_, err = e.ctx.PKeyIndex(e.pnum+100, pk)
	requireErrno(t, err, unix.EINVAL)
}

// pyverbs: test_device.DeviceTest.test_query_gid, test_query_gid_ex, test_query_gid_table
func TestQueryGID(t *testing.T) {
	e := newEnv(t)
	require.NotZero(t, e.port.GIDTblLen)
	g0, err := e.ctx.QueryGID(e.pnum, 0)
	require.NoError(t, err)
	require.False(t, g0.GID.IsZero())
	require.Equal(t, 0, g0.Index)
	require.Equal(t, e.pnum, g0.Port)
	tbl, err := e.ctx.QueryGIDTable()
	require.NoError(t, err)
	require.NotEmpty(t, tbl)
	for _, g := range tbl {
		one, err := e.ctx.QueryGID(g.Port, g.Index)
		require.NoError(t, err)
		require.Equal(t, g, one, "GID table entry vs single query")
	}
}

// pyverbs: test_device.DeviceTest.test_query_gid_table_bad_flow — a GID table query into a zero-entry buffer
// fails with EINVAL.
func TestNegQueryGIDTableZeroEntries(t *testing.T) {
	e := newEnv(t)
	var entry abi.IbUverbsGidEntry
	num := new(uint64)
	cmd := rawcmd.New(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_TABLE, uint32(e.ctx.DriverID()))
	cmd.ConstIn(abi.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, uint64(unsafe.Sizeof(entry)))
	cmd.U32In(abi.UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, 0)
	cmd.PtrOut(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, unsafe.Pointer(&entry), 0)
	cmd.PtrOut(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, unsafe.Pointer(num), 8)
	requireErrno(t, cmd.Invoke(e.ctx.FD()), unix.EINVAL)
}

// pyverbs: test_device.DeviceTest.test_query_gid_ex_bad_flow — an empty GID table index answers ENODATA.
func TestNegQueryGIDEmptyIndex(t *testing.T) {
	e := newEnv(t)
	empty := e.emptyGIDIndex(e.port.GIDTblLen)
	if empty < 0 {
		t.Skip("every GID index is populated: no empty index to query")
	}
	_, err := e.ctx.QueryGID(e.pnum, empty)
	requireErrno(t, err, unix.ENODATA)
}

// Negative: a GID index beyond the table is EINVAL.
func TestNegQueryGIDIndexOutOfRange(t *testing.T) {
	e := newEnv(t)
	_, err := e.ctx.QueryGID(e.pnum, e.port.GIDTblLen)
	requireErrno(t, err, unix.EINVAL)
}

// pyverbs: test_device.DeviceTest.test_query_port_bad_flow — a port beyond phys_port_cnt is EINVAL.
func TestNegQueryPortOutOfRange(t *testing.T) {
	e := newEnv(t)
	for _, p := range []int{int(e.dev.PhysPortCnt) + 1, int(e.dev.PhysPortCnt) + 10} {
		_, err := e.ctx.QueryPort(p)
		requireErrno(t, err, unix.EINVAL, "query port %d", p)
	}
}

// Negative: GID query on a port beyond phys_port_cnt is EINVAL.
func TestNegQueryGIDPortOutOfRange(t *testing.T) {
	e := newEnv(t)
	_, err := e.ctx.QueryGID(int(e.dev.PhysPortCnt)+1, 0)
	requireErrno(t, err, unix.EINVAL)
}

// pyverbs: test_fork.ForkAPITest.test_is_fork_initialized — the kernel reports copy-on-fork, which is what makes
// ibv_fork_init unneeded (IBV_FORK_UNNEEDED); goverbs relies on it and never calls madvise(DONTFORK).
func TestCopyOnFork(t *testing.T) {
	labtest.Require(t)
	c, err := netlinkrdma.Dial()
	require.NoError(t, err)
	defer c.Close()
	sys, err := c.System()
	require.NoError(t, err)
	if !sys.Present.Has(abi.RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK) {
		t.Skip("kernel does not report copy-on-fork (before 5.13): fork safety needs madvise")
	}
	require.True(t, sys.CopyOnFork)
}
