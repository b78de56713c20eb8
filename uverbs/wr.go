package uverbs

import "github.com/goverbs/goverbs/internal/provider"

// AHData is the data path's view of an address handle (put AH.Data() in SendWR.AH).
type AHData = provider.AHData

// Send work request opcodes.
const (
	WRRDMAWrite         = provider.WRRDMAWrite
	WRRDMAWriteWithImm  = provider.WRRDMAWriteWithImm
	WRSend              = provider.WRSend
	WRSendWithImm       = provider.WRSendWithImm
	WRRDMARead          = provider.WRRDMARead
	WRAtomicCmpAndSwp   = provider.WRAtomicCmpAndSwp
	WRAtomicFetchAndAdd = provider.WRAtomicFetchAndAdd
	WRLocalInv          = provider.WRLocalInv
	WRBindMW            = provider.WRBindMW
	WRSendWithInv       = provider.WRSendWithInv
)

// Send flags.
const (
	SendFence     = provider.SendFence
	SendSignaled  = provider.SendSignaled
	SendSolicited = provider.SendSolicited
	SendInline    = provider.SendInline
)

// Work completion statuses.
const (
	WCSuccess          = provider.WCSuccess
	WCLocLenErr        = provider.WCLocLenErr
	WCLocQPOpErr       = provider.WCLocQPOpErr
	WCLocEECOpErr      = provider.WCLocEECOpErr
	WCLocProtErr       = provider.WCLocProtErr
	WCWRFlushErr       = provider.WCWRFlushErr
	WCMWBindErr        = provider.WCMWBindErr
	WCBadRespErr       = provider.WCBadRespErr
	WCLocAccessErr     = provider.WCLocAccessErr
	WCRemInvReqErr     = provider.WCRemInvReqErr
	WCRemAccessErr     = provider.WCRemAccessErr
	WCRemOpErr         = provider.WCRemOpErr
	WCRetryExcErr      = provider.WCRetryExcErr
	WCRNRRetryExcErr   = provider.WCRNRRetryExcErr
	WCLocRDDViolErr    = provider.WCLocRDDViolErr
	WCRemInvRDReqErr   = provider.WCRemInvRDReqErr
	WCRemAbortErr      = provider.WCRemAbortErr
	WCInvEECNErr       = provider.WCInvEECNErr
	WCInvEECStateErr   = provider.WCInvEECStateErr
	WCFatalErr         = provider.WCFatalErr
	WCRespTimeoutErr   = provider.WCRespTimeoutErr
	WCGeneralErr       = provider.WCGeneralErr
	WCTMErr            = provider.WCTMErr
	WCTMRndvIncomplete = provider.WCTMRndvIncomplete
)

// Work completion opcodes.
const (
	WCSend            = provider.WCSend
	WCRDMAWrite       = provider.WCRDMAWrite
	WCRDMARead        = provider.WCRDMARead
	WCCompSwap        = provider.WCCompSwap
	WCFetchAdd        = provider.WCFetchAdd
	WCBindMW          = provider.WCBindMW
	WCLocalInv        = provider.WCLocalInv
	WCRecv            = provider.WCRecv
	WCRecvRDMAWithImm = provider.WCRecvRDMAWithImm
)

// Work completion flags.
const (
	WCWithGRH  = provider.WCWithGRH
	WCWithImm  = provider.WCWithImm
	WCIPCSumOK = provider.WCIPCSumOK
	WCWithInv  = provider.WCWithInv
)

var wcStatusNames = [...]string{"success", "local length error", "local QP operation error",
	"local EE context operation error", "local protection error", "Work Request Flushed Error",
	"memory bind operation error", "bad response error", "local access error", "remote invalid request error",
	"remote access error", "remote operation error", "transport retry counter exceeded",
	"RNR retry counter exceeded", "local RDD violation error", "remote invalid RD request",
	"aborted error", "invalid EE context number", "invalid EE context state", "fatal error",
	"response timeout error", "general error", "TM error", "TM software rendezvous"}

// WCStatusString is the status text rdma-core's ibv_wc_status_str prints.
func WCStatusString(s WCStatus) string {
	if int(s) < len(wcStatusNames) {
		return wcStatusNames[s]
	}
	return "unknown"
}
