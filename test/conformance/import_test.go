package conformance

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/uverbs"
)

// rdma-core: ibv_import_device(3). The kernel builds an imported context with the driver's query_ucontext
// (QUERY_CONTEXT), which rxe does not have: on rxe the import is refused by the kernel with EOPNOTSUPP, as
// libibverbs' rxe provider refuses it. The refusal is typed and names the device found by the command file's
// character device number; a file that is not a character device is EINVAL, a character device of no RDMA
// device ErrNoDevice (ENODEV in libibverbs). Nothing is left behind (the suite's leak check).
func TestImportContext(t *testing.T) {
	e := newEnv(t)
	_, err := uverbs.ImportContext(e.ctx.FD())
	require.ErrorIs(t, err, uverbs.ErrNotSupported)
	require.ErrorIs(t, err, unix.EOPNOTSUPP)
	require.ErrorContains(t, err, e.ctx.Name())

	mfd, err := unix.MemfdCreate("goverbs-import", unix.MFD_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(mfd)
	_, err = uverbs.ImportContext(mfd)
	require.ErrorIs(t, err, unix.EINVAL, "import a memfd")

	null, err := os.Open("/dev/null")
	require.NoError(t, err)
	defer null.Close()
	_, err = uverbs.ImportContext(int(null.Fd()))
	require.ErrorIs(t, err, uverbs.ErrNoDevice, "import /dev/null")
}

// rdma-core: ibv_import_pd, ibv_import_mr, ibv_unimport_pd, ibv_unimport_mr, as pyverbs' tests/test_shared_pd.py
// uses them, on the handles of the context's own objects (rxe cannot import a context, TestImportContext): the
// imported PD takes a registration and the imported MR, read back with QUERY_MR, has the exporter's keys,
// length and IOVA; RDMA moves through its rkey; closing the imported objects only forgets them, so the
// originals still carry traffic and then deregister and deallocate; a handle that names no MR is a typed error.
func TestImportPDMR(t *testing.T) {
	e := newEnv(t)
	e.requireActive()
	client, server := e.pair(playerOpts{qpType: uverbs.QPTypeRC})

	pd, err := e.ctx.ImportPD(server.pd.Handle())
	require.NoError(t, err)
	require.True(t, pd.Imported())
	b := e.buffer(4096)
	mr2, err := pd.RegMR(b.Bytes(), uverbs.AccessLocalWrite)
	require.NoError(t, err, "register on the imported PD")
	require.NoError(t, mr2.Close())

	mr, err := pd.ImportMR(server.mr.Handle())
	require.NoError(t, err)
	require.True(t, mr.Imported())
	require.Equal(t, []uint64{uint64(server.mr.LKey()), uint64(server.mr.RKey()), uint64(server.mr.Len())},
		[]uint64{uint64(mr.LKey()), uint64(mr.RKey()), uint64(mr.Len())})
	require.Equal(t, server.mr.IOVA(), mr.IOVA(), "QUERY_MR's IOVA (Linux 5.13+; the lab's kernels are newer)")
	require.Zero(t, mr.Addr(), "the imported MR's memory is the exporter's")
	fill(client.buf.Bytes()[client.sendOff():client.sendOff()+msgSize], 3)
	requireSuccess(t, rdmaWriteOnce(t, client, mr.RKey(), mr.IOVA()+uint64(server.recvOff()), msgSize))
	checkFill(t, server.buf.Bytes()[server.recvOff():server.recvOff()+msgSize], 3)

	_, err = pd.ImportMR(server.mr.Handle() + 1000)
	var ue *uverbs.Error
	require.True(t, errors.As(err, &ue), "import an MR handle that names nothing: %T %v", err, err)

	require.NoError(t, mr.Close(), "unimport MR")
	require.NoError(t, pd.Close(), "unimport PD")
	rdmaTraffic(t, client, server, uverbs.WRRDMAWrite) // the originals are untouched (and close at cleanup)
}
