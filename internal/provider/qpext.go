package provider

// Optional provider operations a libibverbs provider has as ops and libibverbs' dummy ops refuse with
// EOPNOTSUPP: ECE on a QP (set_ece, query_ece), a QP's rate limit (modify_qp_rate_limit), the device clock
// (query_rt_values) and the null MR (alloc_null_mr). A provider object that does not implement the interface
// has no such op, and the core answers EOPNOTSUPP without asking the kernel, as libibverbs does (rxe, siw).

// ModifyQP is the core's MODIFY_QP for the request at hand: the legacy command (IB_USER_VERBS_CMD_MODIFY_QP,
// no driver data: uhwIn and uhwOut must be nil) when extended is false, else the extended one
// (IB_USER_VERBS_EX_CMD_MODIFY_QP, the core's attributes, the rate limit where the request sets one, the
// provider's driver request uhwIn and a buffer for its driver response uhwOut; either may be nil). It returns
// the kernel's error.
type ModifyQP func(extended bool, uhwIn, uhwOut []byte) error

// QPModifier is implemented by a provider QP that takes part in every MODIFY_QP of the QP (mlx5: ECE options
// set by SetECE travel with the next modify, in the extended command's driver data, as libmlx5's
// mlx5_modify_qp sends them). Modify issues the command through modify exactly once, or returns an error
// without issuing it; the core calls StateChanged afterwards as for any QP.
type QPModifier interface {
	Modify(modify ModifyQP) error
}

// ECE are a QP's enhanced connection establishment options (struct ibv_ece, without comp_mask).
type ECE struct {
	VendorID uint32
	Options  uint32
}

// ECEQP is implemented by a provider QP with ECE (the provider's set_ece and query_ece ops). SetECE records
// the options the next modify applies (the core has refused vendor id 0 already, as libibverbs does);
// QueryECE returns the QP's current options.
type ECEQP interface {
	SetECE(e ECE) error
	QueryECE() (ECE, error)
}

// RateLimit is the request of a QP's rate limit (struct ibv_qp_rate_limit_attr, without comp_mask).
type RateLimit struct {
	Rate              uint32 // kbps; 0: no limit
	MaxBurstSize      uint32 // bytes
	TypicalPacketSize uint16 // bytes
}

// RateLimiter is implemented by a provider QP that sets a packet-pacing rate limit (modify_qp_rate_limit).
// SetRateLimit issues the extended MODIFY_QP through modify with extended true (the core sets the attribute
// mask's rate-limit bit, IB_QP_RATE_LIMIT, and the rate), adding its driver data, or refuses without issuing it.
type RateLimiter interface {
	SetRateLimit(r RateLimit, modify ModifyQP) error
}

// ClockReader is implemented by a Context whose provider reads the device's free-running clock
// (query_rt_values: mlx5 reads the HCA core clock from the page the kernel maps). ReadClock returns the raw
// clock in device cycles, or an error matching EOPNOTSUPP where this context has no clock mapped (as libmlx5
// answers without its clock page).
type ClockReader interface {
	ReadClock() (uint64, error)
}

// NullMRAllocator is implemented by a Context whose provider has a null MR (alloc_null_mr: an lkey whose
// writes the device drops and whose reads return nothing meaningful; mlx5's is the kernel's dump-fill mkey,
// no kernel object of its own). NullMRKey returns that key, or an error matching EOPNOTSUPP where this context
// has none.
type NullMRAllocator interface {
	NullMRKey() (uint32, error)
}

// OptionalOps names the optional interfaces of this file, wq.go, dm.go and dmabuf.go that a provider's Context ctx and QP qp implement
// (values of their types; nil pointers do): for a provider's test that it has exactly the ops its rdma-core
// counterpart has.
func OptionalOps(ctx, qp any) []string {
	var names []string
	for _, o := range []struct {
		name string
		has  bool
	}{
		{"QPModifier", is[QPModifier](qp)}, {"ECEQP", is[ECEQP](qp)}, {"RateLimiter", is[RateLimiter](qp)},
		{"ClockReader", is[ClockReader](ctx)}, {"NullMRAllocator", is[NullMRAllocator](ctx)},
		{"WQCreator", is[WQCreator](ctx)}, {"RWQIndTableCreator", is[RWQIndTableCreator](ctx)},
		{"DMAllocator", is[DMAllocator](ctx)}, {"DMImporter", is[DMImporter](ctx)},
		{"DmabufMRRegistrar", is[DmabufMRRegistrar](ctx)},
	} {
		if o.has {
			names = append(names, o.name)
		}
	}
	return names
}

func is[I any](v any) bool {
	_, ok := v.(I)
	return ok
}
