package siw

import (
	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"github.com/goverbs/goverbs/verbs"
	"golang.org/x/sys/unix"
)

func init() { provider.Register(driver{}) }

// driver is the siw provider. siw's uverbs ABI has one version (SIW_ABI_VERSION 1), as rdma-core matches it.
type driver struct{}

func (driver) Name() string           { return "siw" }
func (driver) DriverID() uint32       { return abi.RDMA_DRIVER_SIW }
func (driver) ABI() (min, max uint32) { return abi.SIW_ABI_VERSION, abi.SIW_ABI_VERSION }
func (driver) String() string         { return "siw (soft-iWARP)" }

// AllocContext takes part in GET_CONTEXT: the driver response is struct siw_uresp_alloc_ctx (the device id),
// which rdma-core always asks for (the kernel refuses a shorter response buffer).
func (driver) AllocContext(dev *provider.Device, exec provider.Exec) (provider.Context, error) {
	resp := new(abi.SiwUrespAllocCtx)
	if err := exec(nil, rawcmd.Bytes(resp)); err != nil {
		return nil, err
	}
	c := newContext(dev)
	c.devID = resp.DevId
	return c, nil
}

// context is the per-device-context state: the command fd (queues are mapped from it, doorbells written to
// it).
type context struct {
	fd       int
	driverID uint32
	name     string
	devID    uint32 // siw's device id from GET_CONTEXT (0 for an imported context)
}

var (
	_ provider.Context      = (*context)(nil)
	_ provider.MRDriverData = (*context)(nil)
)

func newContext(dev *provider.Device) *context {
	return &context{fd: dev.FD, driverID: dev.DriverID, name: dev.Name}
}

// pd is siw's protection domain: no driver state.
type pd struct{}

func (pd) PDN() uint32 { return 0 }

// AllocPD takes part in ALLOC_PD (no driver data).
func (c *context) AllocPD(exec provider.Exec) (provider.PD, error) {
	if err := exec(nil, nil); err != nil {
		return nil, err
	}
	return pd{}, nil
}

// CreateAH is refused without asking the kernel: iWARP has no address handles (no UD), the kernel's siw has no
// create_ah, and rdma-core's siw provider has none either (libibverbs answers EOPNOTSUPP).
func (c *context) CreateAH(provider.AHParams, provider.Create[provider.AHParams, provider.AHResult]) (*verbs.AHData, error) {
	return nil, opError("create AH", "iWARP has no address handles", unix.EOPNOTSUPP)
}

// RegMRData implements provider.MRDriverData: rdma-core's siw provider sends struct siw_ureq_reg_mr (stag_key
// 0: the kernel keeps the key byte it chose) and takes struct siw_uresp_reg_mr (the STag, which the core's
// response repeats as lkey and rkey) with every REG_MR.
func (c *context) RegMRData() (uhwIn, uhwOut []byte) {
	return rawcmd.Bytes(new(abi.SiwUreqRegMr)), rawcmd.Bytes(new(abi.SiwUrespRegMr))
}

// Close releases nothing: every queue belongs to a CQ, QP or SRQ and is unmapped when it is destroyed.
func (c *context) Close() error { return nil }

var (
	_ provider.ContextImporter = driver{}
	_ provider.PDImporter      = (*context)(nil)
)

// ImportContext builds the context state on an imported command file: the provider keeps nothing from
// GET_CONTEXT that its data path needs, so the kernel's QUERY_CONTEXT is all there is to run. The kernel's siw
// has no query_ucontext, so today the kernel refuses the import (EOPNOTSUPP), as rdma-core's siw provider,
// which has no import_context, refuses it.
func (driver) ImportContext(dev *provider.Device, query provider.Exec) (provider.Context, error) {
	if err := query(nil, nil); err != nil {
		return nil, err
	}
	return newContext(dev), nil
}

// ImportPD: a siw PD has no provider state.
func (c *context) ImportPD(uint32) (provider.PD, error) { return pd{}, nil }
