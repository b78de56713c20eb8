package conformance

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/uverbs"
)

// Thread domains and parent domains (ibv_alloc_td, ibv_alloc_parent_domain). rxe's rdma-core provider has
// neither op, so libibverbs answers EOPNOTSUPP: goverbs must answer the same (ErrNotSupported and
// unix.EOPNOTSUPP), count nothing, and leave the context fully usable (a PD allocated and closed afterwards, the
// context closing cleanly at cleanup; TestMain's leak check covers the kernel's objects). On a device whose
// provider has them (mlx5), the lifetime rules are exercised instead: a QP and a CQ made in a parent domain
// with a TD, EBUSY for the TD, the protection domain and the parent domain while they are held.
func TestThreadAndParentDomains(t *testing.T) {
	e := newEnv(t)
	pd := e.pd()
	td, err := e.ctx.AllocTD()
	if e.ctx.DriverID() == uverbs.DriverRXE {
		require.Nil(t, td)
		require.ErrorIs(t, err, uverbs.ErrNotSupported, "rxe has no thread domains")
		require.ErrorIs(t, err, unix.EOPNOTSUPP)
		dom, err := e.ctx.AllocParentDomain(uverbs.ParentDomainAttr{PD: pd})
		require.Nil(t, dom)
		require.ErrorIs(t, err, uverbs.ErrNotSupported, "rxe has no parent domains")
		require.ErrorIs(t, err, unix.EOPNOTSUPP)
		// Nothing leaked: a PD comes and goes, and the PD given above closes.
		pd2, err := e.ctx.AllocPD()
		require.NoError(t, err)
		require.NoError(t, pd2.Close())
		return
	}
	skipIfUnsupported(t, err, "thread domains")
	require.NoError(t, err)
	dom, err := e.ctx.AllocParentDomain(uverbs.ParentDomainAttr{PD: pd, TD: td})
	skipIfUnsupported(t, err, "parent domains")
	require.NoError(t, err)
	require.True(t, dom.IsParentDomain())
	require.Same(t, pd, dom.Protection())
	require.Same(t, td, dom.TD())
	requireErrno(t, td.Close(), unix.EBUSY, "TD held by a parent domain")
	requireErrno(t, pd.Close(), unix.EBUSY, "PD held by a parent domain")

	cq, err := e.ctx.CreateCQEx(uverbs.CQExAttr{CQE: 16, ParentDomain: dom})
	require.NoError(t, err)
	qp, err := dom.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	require.NoError(t, err)
	buf := e.buffer(4096)
	mr, err := dom.RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
	require.NoError(t, err, "MR in a parent domain (its protection domain's)")
	requireErrno(t, dom.Close(), unix.EBUSY, "parent domain with a QP and a CQ")
	require.NoError(t, qp.Close())
	require.NoError(t, cq.Close())
	require.NoError(t, dom.Close())
	require.NoError(t, td.Close())
	require.NoError(t, mr.Close())
	require.NoError(t, pd.Close(), "PD once the parent domain is gone")
}
