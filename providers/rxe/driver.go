package rxe

import (
	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

func init() { provider.Register(driver{}) }

// ABI versions of the rxe driver's uverbs interface this provider speaks (RXE_UVERBS_ABI_VERSION is 2 since
// Linux 4.8; 1 has the same queue and WQE layouts for what this provider uses).
const (
	abiMin = 1
	abiMax = 2
)

// driver is the rxe provider.
type driver struct{}

func (driver) Name() string           { return "rxe" }
func (driver) DriverID() uint32       { return abi.RDMA_DRIVER_RXE }
func (driver) ABI() (min, max uint32) { return abiMin, abiMax }
func (driver) String() string         { return "rxe (Soft-RoCE)" }
func (driver) newContext(dev *provider.Device) *context {
	return &context{fd: dev.FD, driverID: dev.DriverID, name: dev.Name}
}

// AllocContext takes part in GET_CONTEXT. rxe sends and receives no driver data.
func (driver) AllocContext(dev *provider.Device, exec provider.Exec) (provider.Context, error) {
	if err := exec(nil, nil); err != nil {
		return nil, err
	}
	return newContext(dev), nil
}

// context is the per-device-context state: the command fd (rings are mapped from it, doorbells written to it).
type context struct {
	fd       int
	driverID uint32
	name     string
}

var (
	_ provider.Context         = (*context)(nil)
	_ provider.InitRecvFlusher = (*context)(nil)
)

// FlushesInitRecv: when a QP moves to ERR, rxe's responder completes the receives it holds with
// IB_WC_WR_FLUSH_ERR, in INIT too; TestLabCompChannelKick shows it on every lab kernel.
func (*context) FlushesInitRecv() bool { return true }

// rxe's extended-QP operations per QP type, as rdma-core's rxe accepts them (RXE_SUP_*_QP_SEND_OPS_FLAGS):
// FLUSH and ATOMIC WRITE are accepted at creation on every device, and refused when posted where the device
// lacks them (before 6.2), as there.
const (
	rxeSendOpsRC = verbs.SendOpRDMAWrite | verbs.SendOpRDMAWriteWithImm | verbs.SendOpSend | verbs.SendOpSendWithImm |
		verbs.SendOpRDMARead | verbs.SendOpAtomicCmpAndSwp | verbs.SendOpAtomicFetchAndAdd | verbs.SendOpLocalInv |
		verbs.SendOpBindMW | verbs.SendOpSendWithInv | verbs.SendOpFlush | verbs.SendOpAtomicWrite
	rxeSendOpsUC = verbs.SendOpRDMAWrite | verbs.SendOpRDMAWriteWithImm | verbs.SendOpSend | verbs.SendOpSendWithImm |
		verbs.SendOpBindMW | verbs.SendOpSendWithInv
	rxeSendOpsUD = verbs.SendOpSend | verbs.SendOpSendWithImm
)

// SendOps implements provider.SendOpsSupporter.
func (*context) SendOps(t verbs.QPType) verbs.SendOps {
	switch t {
	case verbs.QPTypeRC:
		return rxeSendOpsRC
	case verbs.QPTypeUC:
		return rxeSendOpsUC
	case verbs.QPTypeUD:
		return rxeSendOpsUD
	}
	return 0
}

func newContext(dev *provider.Device) *context {
	return &context{fd: dev.FD, driverID: dev.DriverID, name: dev.Name}
}

// pd is rxe's protection domain: no driver state.
type pd struct{}

func (pd) PDN() uint32 { return 0 }

// AllocPD takes part in ALLOC_PD (no driver data).
func (c *context) AllocPD(exec provider.Exec) (provider.PD, error) {
	if err := exec(nil, nil); err != nil {
		return nil, err
	}
	return pd{}, nil
}

// CreateAH takes part in CREATE_AH: the kernel answers with its AH number (struct rxe_create_ah_resp), which UD
// send WQEs carry.
func (c *context) CreateAH(p provider.AHParams, create provider.Create[provider.AHParams, provider.AHResult]) (*verbs.AHData, error) {
	resp := new(abi.RxeCreateAhResp)
	res, err := create(p, nil, rawcmd.Bytes(resp))
	if err != nil {
		return nil, err
	}
	if resp.AhNum == 0 {
		return nil, opError("create AH", "the kernel returned no AH number (ah_num 0): old rxe kernels need a userspace address vector, which this provider does not build", unix.EOPNOTSUPP)
	}
	return &verbs.AHData{Handle: res.Handle, Num: resp.AhNum}, nil
}

// Close releases nothing: every ring belongs to a CQ, QP or SRQ and is unmapped when it is destroyed.
func (c *context) Close() error { return nil }
