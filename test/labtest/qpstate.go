package labtest

import (
	"testing"
	"time"

	"github.com/goverbs/goverbs/uverbs"
)

// WaitQPErr returns the state of qp once it is ERR, or its last state after two seconds of asking. It is for a
// requester that has just polled an error completion: rxe's completer posts that completion first and moves the QP
// to ERR right after (rxe_comp.c, COMPST_ERROR: do_complete, then rxe_qp_error), so a poll that wins the race finds
// the QP in RTS for a moment (once in about a thousand runs on 7.3, CI 2026-11-28). A QP that never leaves its
// state still fails the caller's check.
func WaitQPErr(t testing.TB, qp *uverbs.QP) uverbs.QPState {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for n := 1; ; n++ {
		q, err := qp.Query(uverbs.QPAttrState)
		if err != nil {
			t.Fatalf("query QP %#x: %v", qp.QPN(), err)
		}
		if q.State == uverbs.QPStateErr || time.Now().After(deadline) {
			if n > 1 {
				t.Logf("QP %#x: state %v at query %d (its error completion came first)", qp.QPN(), q.State, n)
			}
			return q.State
		}
		time.Sleep(time.Millisecond)
	}
}
