// Package provider is the contract between the verbs core (package uverbs) and the per-driver providers
// (providers/rxe, providers/mlx5). It is internal: our providers implement it, users cannot.
//
// # Shape
//
// The core owns the kernel command path: it builds every uverbs command (core attributes) and issues it. A
// provider takes part in the commands that carry driver data ("udata": the UHW_IN / UHW_OUT attributes) through
// a callback: the provider prepares its request bytes (for mlx5: ring and doorbell-record addresses, UAR page
// ids), calls Exec (or, for a create, Create with the request it sizes), and then finishes its side with the
// response bytes (rxe: mmap the rings the kernel describes; mlx5: record the CQN/QPN and the BlueFlame
// register). A create returns its result (handle, number, granted sizes) to the provider, which returns the one
// the core keeps: no structure is written by both sides. If the provider fails after the command succeeded, it
// returns the error and the core destroys the kernel object it just created, so nothing leaks. Kernel objects
// a provider needs for itself (mlx5's UAR pages) go through the core too, with Device.Objects: the core issues
// the command, counts the object and maps a cgroup refusal, as for the objects users create.
//
// The data path (PostSend, PostRecv, Poll, Arm) is entirely the provider's: it writes WQEs into user-mapped rings
// and rings its doorbell (rxe: a POST_SEND write() with no work requests; mlx5: doorbell record + UAR MMIO), with
// caller-owned slices and no allocation.
package provider

import (
	"fmt"
	"sort"
	"sync"

	"github.com/goverbs/goverbs/rawcmd"
	"github.com/goverbs/goverbs/verbs"
)

// Exec runs the core command a provider takes part in, with the provider's driver request (sent as UHW_IN;
// nil for none) and a buffer for the driver response (UHW_OUT; nil for none). It returns the kernel's error.
type Exec func(uhwIn, uhwOut []byte) error

// Create runs the core's create command for an object: the core attributes from req (the provider passes the
// request it was given, adjusted where the driver sizes things itself: mlx5 rounds a CQ up, fixes the inline
// size), its driver request and response buffers, and returns what the kernel made. Nothing is shared: the
// provider returns the result the verbs layer keeps (the kernel's, or narrowed to what the driver grants).
type Create[Req, Res any] func(req Req, uhwIn, uhwOut []byte) (Res, error)

// Device describes the opened uverbs device to a provider.
type Device struct {
	Name     string // e.g. "rxe0"
	FD       int    // the /dev/infiniband/uverbsN command fd
	DriverID uint32 // RDMA_DRIVER_*
	ABI      uint32 // the driver's uverbs ABI version
	PageSize int
	// Objects runs a provider's own object command through the core: a driver-specific create or destroy
	// method with no core counterpart (mlx5's MLX5_IB_METHOD_UAR_OBJ_ALLOC / _DESTROY). The provider builds cmd
	// completely (its driver id included) and reads the outputs back after a nil return; create tells whether
	// the command creates a kernel object or destroys one. The core issues cmd on the command fd, turns a
	// cgroup refusal of a create into the typed limit error its own creates return (hca_object), and counts the
	// live driver objects of the context, separately from the objects users hold: Context.Close is not refused
	// because of them, and after Context.Close has called the provider's Close the count must be 0 (every
	// object the provider created through Objects destroyed through it), else Close reports the leak. A failed
	// destroy leaves the object counted. Providers never issue their own object commands on the fd.
	Objects func(cmd *rawcmd.Cmd, create bool) error
}

// Driver is one provider. It is registered at init time with Register.
type Driver interface {
	// Name is the provider's short name ("rxe", "mlx5").
	Name() string
	// DriverID is the kernel's RDMA_DRIVER_* id this provider serves.
	DriverID() uint32
	// ABI is the range of driver uverbs ABI versions this provider speaks.
	ABI() (min, max uint32)
	// AllocContext takes part in GET_CONTEXT and returns the provider's per-context state.
	AllocContext(dev *Device, exec Exec) (Context, error)
}

// Context is a provider's per-device-context state: the factory for provider objects.
type Context interface {
	// AllocPD takes part in ALLOC_PD (mlx5 returns its pdn in the driver response).
	AllocPD(exec Exec) (PD, error)
	// CreateCQ takes part in CQ_CREATE and returns its CQ and the result the core keeps.
	CreateCQ(p CQParams, create Create[CQParams, CQResult]) (CQ, CQResult, error)
	// CreateQP takes part in QP_CREATE and returns its QP and the result the core keeps (capacities as granted).
	CreateQP(p QPParams, create Create[QPParams, QPResult]) (QP, QPResult, error)
	// CreateSRQ takes part in SRQ_CREATE and returns its SRQ and the result the core keeps.
	CreateSRQ(p SRQParams, create Create[SRQParams, SRQResult]) (SRQ, SRQResult, error)
	// CreateAH takes part in CREATE_AH, or builds the address vector in userspace without calling create where
	// the device needs no kernel object (mlx5 on InfiniBand links).
	CreateAH(p AHParams, create Create[AHParams, AHResult]) (*verbs.AHData, error)
	// Close releases the provider's context resources (UAR mappings, doorbell pages) after the core has closed
	// every object. The core closes the command fd afterwards.
	Close() error
}

// InitRecvFlusher is implemented by a Context whose device, when a QP in INIT that holds a posted receive moves
// to ERR, flushes that receive with a completion (and so an event on its armed CQ's channel). A completion
// channel's WaitRead wait relies on it to end a sleeping read(2) (uverbs' kicker); on a device that does not
// say so, WaitRead waits as WaitEpoll does. A provider implements it only once the lab has shown the flush on
// its device on every kernel.
type InitRecvFlusher interface {
	FlushesInitRecv() bool
}

// SendOpsSupporter is implemented by a Context whose provider builds extended-QP work requests: SendOps is the
// set of operations its QPs of type t may be created for, as the provider's libibverbs counterpart accepts them
// (less any its PostSend refuses). Without it, a QP created with send operations is refused as not supported.
type SendOpsSupporter interface {
	SendOps(t verbs.QPType) verbs.SendOps
}

// PortSpeedQuerier is implemented by a Context whose device reports a port's effective speed through the
// kernel's QUERY_PORT_SPEED (rdma-core 65's query_port_speed: mlx5, efa). Without it the query is refused as
// libibverbs refuses it, without asking the kernel.
type PortSpeedQuerier interface {
	QueriesPortSpeed() bool
}

// PD is a provider's protection-domain state (may be empty).
type PD interface {
	// PDN is the provider's protection domain number where the driver reports one (mlx5), else 0.
	PDN() uint32
}

// CQParams is the core's CQ_CREATE request.
type CQParams struct {
	CQE        int    // requested minimum number of entries
	CompVector uint32 // completion vector
	Handle     uint64 // user handle reported back in completion events
	// ParentDomain is the parent domain the CQ is made in (ibv_cq_init_attr_ex.parent_domain), or nil.
	ParentDomain ParentDomain
}

// CQResult is what CQ_CREATE made.
type CQResult struct {
	CQE    int    // the actual number of entries
	Handle uint32 // kernel object handle
}

// CQ is a provider's completion-queue data path.
type CQ interface {
	// Poll fills wc with up to len(wc) completions and returns how many it wrote, and OK or why it stopped
	// (UnknownCQE, Destroyed). It never allocates.
	Poll(wc []verbs.WC) (int, Status)
	// Arm requests a completion event for the next completion (only solicited ones if solicitedOnly).
	Arm(solicitedOnly bool) error
	// EventReceived is called once for every completion event read from the channel for this CQ (mlx5 advances
	// its arm sequence number).
	EventReceived()
	// Resize takes part in RESIZE_CQ for at least cqe entries and returns the size the core keeps; resize
	// issues the command for the (possibly adjusted) size and returns the kernel's.
	Resize(cqe int, resize Create[int, int]) (int, error)
	// Destroyed is called after the kernel destroyed the CQ: release rings and mappings.
	Destroyed()
}

// QPParams is the core's QP_CREATE request.
type QPParams struct {
	Type   verbs.QPType
	Cap    verbs.QPCap
	SigAll bool // every send WR generates a completion
	HasSRQ bool // receives come from an SRQ: no receive queue of its own
	SRQ    SRQ  // that SRQ's provider object (nil without one)
	SendCQ CQ
	RecvCQ CQ
	Handle uint64 // user handle
	// DeviceCaps are the device's capability flags (IB_UVERBS_DEVICE_*): which optional opcodes (FLUSH,
	// ATOMIC WRITE) the QP may post.
	DeviceCaps uint64
	// ParentDomain is the parent domain the QP is made in (its PD was one), or nil.
	ParentDomain ParentDomain
}

// QPResult is what QP_CREATE made.
type QPResult struct {
	Cap    verbs.QPCap // capacities granted
	QPN    uint32      // QP number
	Handle uint32      // kernel object handle
}

// QP is a provider's queue-pair data path.
type QP interface {
	// PostSend posts wrs in order and rings the doorbell once. It returns how many were posted and OK, or why
	// it stopped at wrs[n].
	PostSend(wrs []verbs.SendWR) (n int, st Status)
	// PostSendAll posts wrs as PostSend does, or none of them: when wrs[bad] cannot be posted, the ring and the
	// doorbell are left as they were and it returns bad and why (the extended QP's Complete, which posts a
	// built chain whole, as ibv_wr_complete does).
	PostSendAll(wrs []verbs.SendWR) (bad int, st Status)
	// PostRecv posts receive requests (not for QPs on an SRQ).
	PostRecv(wrs []verbs.RecvWR) (n int, st Status)
	// StateChanged is called after the kernel accepted a transition to state (mlx5 resets its rings on RESET;
	// both gate posting on the state).
	StateChanged(state verbs.QPState)
	// Destroyed is called after the kernel destroyed the QP.
	Destroyed()
}

// SRQParams is the core's SRQ_CREATE request.
type SRQParams struct {
	MaxWR  uint32
	MaxSGE uint32
	Limit  uint32
	Handle uint64
	// ParentDomain is the parent domain the SRQ is made in (its PD was one), or nil.
	ParentDomain ParentDomain
}

// SRQResult is what SRQ_CREATE made.
type SRQResult struct {
	MaxWR  uint32
	MaxSGE uint32
	SRQN   uint32
	Handle uint32
}

// SRQ is a provider's shared-receive-queue data path.
type SRQ interface {
	PostRecv(wrs []verbs.RecvWR) (n int, st Status)
	// Modify takes part in MODIFY_SRQ (rxe passes a pointer for the resized ring's mmap info).
	Modify(maxWR uint32, exec Exec) error
	Destroyed()
}

// AHParams is the address an AH is created for (struct ibv_ah_attr with its GRH), plus what the core knows
// about the port.
type AHParams struct {
	DLID         uint16
	SL           uint8
	SrcPathBits  uint8
	StaticRate   uint8
	IsGlobal     bool
	PortNum      uint8
	DGID         [16]byte
	FlowLabel    uint32
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
	// Ethernet is true on a RoCE port.
	Ethernet bool
	// RoCEv2 is true when the source GID is a RoCE v2 GID.
	RoCEv2 bool
}

// AHResult is what CREATE_AH made.
type AHResult struct {
	Handle uint32 // kernel object handle
}

var (
	mu      sync.RWMutex
	drivers = map[uint32]Driver{}
)

// Register makes a provider available for its driver id. Providers call it from init.
func Register(d Driver) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := drivers[d.DriverID()]; dup {
		panic(fmt.Sprintf("provider: driver id %d registered twice", d.DriverID()))
	}
	drivers[d.DriverID()] = d
}

// Lookup returns the provider for a driver id.
func Lookup(driverID uint32) (Driver, bool) {
	mu.RLock()
	defer mu.RUnlock()
	d, ok := drivers[driverID]
	return d, ok
}

// Names lists the registered providers, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	var n []string
	for _, d := range drivers {
		n = append(n, d.Name())
	}
	sort.Strings(n)
	return n
}
