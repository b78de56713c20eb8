package uverbs

import "github.com/goverbs/goverbs/verbs"

// The data-path vocabulary is package verbs'; these names make it part of the verbs API, so a program needs
// only this package. See package verbs for the fields and values. go doc does not follow an alias to its
// methods and fields: `go doc ./uverbs WC.Err` finds nothing, `go doc ./verbs WC.Err` (or
// `go doc github.com/goverbs/goverbs/verbs WC`) shows them.
type (
	SGE        = verbs.SGE        // a scatter/gather element (struct ibv_sge)
	SendWR     = verbs.SendWR     // a send work request (struct ibv_send_wr)
	RecvWR     = verbs.RecvWR     // a receive work request (struct ibv_recv_wr)
	WC         = verbs.WC         // a work completion (struct ibv_wc)
	WROpcode   = verbs.WROpcode   // a send work request's operation
	SendFlags  = verbs.SendFlags  // a send work request's flags
	WCStatus   = verbs.WCStatus   // a work completion's status (an error through WC.Err)
	WCOpcode   = verbs.WCOpcode   // a work completion's operation
	WCFlags    = verbs.WCFlags    // a work completion's flags
	MWBind     = verbs.MWBind     // a memory-window bind in a send work request
	Flush      = verbs.Flush      // an RDMA FLUSH's length, placement and selectivity
	FlushType  = verbs.FlushType  // where an RDMA FLUSH places the data
	FlushLevel = verbs.FlushLevel // what an RDMA FLUSH covers
	AHData     = verbs.AHData     // the data path's view of an address handle (AH.Data)
	QPType     = verbs.QPType     // a queue pair's transport type
	QPState    = verbs.QPState    // a queue pair's state
	QPCap      = verbs.QPCap      // a queue pair's capacities
)

// Send work request opcodes.
const (
	WRRDMAWrite         = verbs.WRRDMAWrite
	WRRDMAWriteWithImm  = verbs.WRRDMAWriteWithImm
	WRSend              = verbs.WRSend
	WRSendWithImm       = verbs.WRSendWithImm
	WRRDMARead          = verbs.WRRDMARead
	WRAtomicCmpAndSwp   = verbs.WRAtomicCmpAndSwp
	WRAtomicFetchAndAdd = verbs.WRAtomicFetchAndAdd
	WRLocalInv          = verbs.WRLocalInv
	WRBindMW            = verbs.WRBindMW
	WRSendWithInv       = verbs.WRSendWithInv
	WRFlush             = verbs.WRFlush
	WRAtomicWrite       = verbs.WRAtomicWrite
)

// RDMA FLUSH placement types and selectivity levels.
const (
	FlushGlobal     = verbs.FlushGlobal
	FlushPersistent = verbs.FlushPersistent
	FlushRange      = verbs.FlushRange
	FlushMR         = verbs.FlushMR
)

// Send flags.
const (
	SendFence     = verbs.SendFence
	SendSignaled  = verbs.SendSignaled
	SendSolicited = verbs.SendSolicited
	SendInline    = verbs.SendInline
)

// Work completion statuses.
const (
	WCSuccess          = verbs.WCSuccess
	WCLocLenErr        = verbs.WCLocLenErr
	WCLocQPOpErr       = verbs.WCLocQPOpErr
	WCLocEECOpErr      = verbs.WCLocEECOpErr
	WCLocProtErr       = verbs.WCLocProtErr
	WCWRFlushErr       = verbs.WCWRFlushErr
	WCMWBindErr        = verbs.WCMWBindErr
	WCBadRespErr       = verbs.WCBadRespErr
	WCLocAccessErr     = verbs.WCLocAccessErr
	WCRemInvReqErr     = verbs.WCRemInvReqErr
	WCRemAccessErr     = verbs.WCRemAccessErr
	WCRemOpErr         = verbs.WCRemOpErr
	WCRetryExcErr      = verbs.WCRetryExcErr
	WCRNRRetryExcErr   = verbs.WCRNRRetryExcErr
	WCLocRDDViolErr    = verbs.WCLocRDDViolErr
	WCRemInvRDReqErr   = verbs.WCRemInvRDReqErr
	WCRemAbortErr      = verbs.WCRemAbortErr
	WCInvEECNErr       = verbs.WCInvEECNErr
	WCInvEECStateErr   = verbs.WCInvEECStateErr
	WCFatalErr         = verbs.WCFatalErr
	WCRespTimeoutErr   = verbs.WCRespTimeoutErr
	WCGeneralErr       = verbs.WCGeneralErr
	WCTMErr            = verbs.WCTMErr
	WCTMRndvIncomplete = verbs.WCTMRndvIncomplete
)

// Work completion opcodes.
const (
	WCSend            = verbs.WCSend
	WCRDMAWrite       = verbs.WCRDMAWrite
	WCRDMARead        = verbs.WCRDMARead
	WCCompSwap        = verbs.WCCompSwap
	WCFetchAdd        = verbs.WCFetchAdd
	WCBindMW          = verbs.WCBindMW
	WCLocalInv        = verbs.WCLocalInv
	WCFlush           = verbs.WCFlush
	WCAtomicWrite     = verbs.WCAtomicWrite
	WCRecv            = verbs.WCRecv
	WCRecvRDMAWithImm = verbs.WCRecvRDMAWithImm
)

// Work completion flags.
const (
	WCWithGRH  = verbs.WCWithGRH
	WCWithImm  = verbs.WCWithImm
	WCIPCSumOK = verbs.WCIPCSumOK
	WCWithInv  = verbs.WCWithInv
)

// QP types.
const (
	QPTypeRC        = verbs.QPTypeRC
	QPTypeUC        = verbs.QPTypeUC
	QPTypeUD        = verbs.QPTypeUD
	QPTypeRawPacket = verbs.QPTypeRawPacket
	QPTypeXRCSend   = verbs.QPTypeXRCSend
	QPTypeXRCRecv   = verbs.QPTypeXRCRecv
)

// QP states.
const (
	QPStateReset = verbs.QPStateReset
	QPStateInit  = verbs.QPStateInit
	QPStateRTR   = verbs.QPStateRTR
	QPStateRTS   = verbs.QPStateRTS
	QPStateSQD   = verbs.QPStateSQD
	QPStateSQE   = verbs.QPStateSQE
	QPStateErr   = verbs.QPStateErr
)
