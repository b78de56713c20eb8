package rdmacm

import "github.com/goverbs/goverbs/uverbs"

// The package's only uses of uverbs' QP state machine go through here, so
// that a change of uverbs' Modify signature touches one line.

// modifyQP applies attributes to the QP (ibv_modify_qp).
func modifyQP(qp *uverbs.QP, a *uverbs.QPAttr, mask uverbs.QPAttrMask) error {
	return qp.Modify(*a, mask)
}

// toErr moves the QP to the error state (flushing its work requests).
func toErr(qp *uverbs.QP) error {
	return modifyQP(qp, &uverbs.QPAttr{State: uverbs.QPStateErr}, uverbs.QPAttrState)
}

var qpStateNames = [...]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}

// stateName is ibv_qp_state_str's name of a QP state.
func stateName(s uverbs.QPState) string {
	if int(s) < len(qpStateNames) {
		return qpStateNames[s]
	}
	return "UNKNOWN"
}
