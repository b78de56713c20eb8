package conformance

import (
	"testing"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// Where kernels differ, the suite asserts what the running kernel does, keyed on its version
// (labtest.Kernel, from uname) and named here with the reason. docs/kernels.md has the whole list.

// requesterErrStatuses returns the statuses accepted for an error the requester detects while building a request
// (a send whose SGE has a wrong lkey, a memory-window bind the MR does not allow): want, except on rxe from
// Linux 6.4. There "RDMA/rxe: Remove qp->req.state" (Bob Pearson, v6.4) made the requester's error path move the
// QP to ERR itself (later rxe_qp_error()) instead of handing the failed WQE to the completer first; the completer
// then finds the QP in ERR and flushes the whole send queue, the failed WQE included, so its completion is
// WR_FLUSH_ERR and the cause is lost. Since 67f57892f9b2 "RDMA/rxe: Merge request and complete tasks" (v6.10)
// requester and completer run in one task, one after the other, which makes it deterministic. Still so in 7.3.
func (e *env) requesterErrStatuses(t *testing.T, want ...uverbs.WCStatus) []uverbs.WCStatus {
	t.Helper()
	if e.ctx.DriverID() == uverbs.DriverRXE && labtest.Kernel().AtLeast(6, 4) {
		t.Logf("rxe on Linux %s: a requester-side error completes as WR_FLUSH_ERR (since 6.4, RDMA/rxe: Remove qp->req.state), not %v", labtest.Kernel(), want)
		return []uverbs.WCStatus{uverbs.WCWRFlushErr}
	}
	return want
}
