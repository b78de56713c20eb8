package uverbs

import (
	"fmt"
	"math"

	"github.com/goverbs/goverbs/internal/provider"
	"golang.org/x/sys/unix"
)

// Four optional verbs a provider has or lacks, as in libibverbs (where a provider without the op gets
// libibverbs' answer, EOPNOTSUPP, which matches ErrNotSupported): a QP's ECE options (SetECE, QueryECE), a QP's
// rate limit (SetRateLimit), the device clock (Context.QueryRTValues) and the null MR (PD.AllocNullMR).
// goverbs' mlx5 provider has all four, as libmlx5 does; rxe and siw have none, as their rdma-core providers.

// VendorMellanox is the vendor id mlx5 devices put in their ECE options (PCI_VENDOR_ID_MELLANOX).
const VendorMellanox = 0x15b3

// ECE are a QP's enhanced connection establishment options (struct ibv_ece; its comp_mask has no
// counterpart: no extension is defined). rdma_cm carries them in REQ and REP (package rdmacm applies the
// peer's to the QP its ID.CreateQP makes, as librdmacm does).
type ECE struct {
	VendorID uint32 // the provider's vendor (an IEEE OUI or PCI vendor id): mlx5 VendorMellanox
	Options  uint32 // provider-specific options
}

// SetECE sets the ECE options the QP's next Modify applies (ibv_set_ece); after that Modify, QueryECE reports
// what the device accepted. VendorID 0 is refused with ErrNotSupported (unix.EOPNOTSUPP) as libibverbs refuses
// it, and so is a QP whose provider has no ECE (rxe, siw). mlx5 refuses another vendor than VendorMellanox
// with unix.EINVAL, and answers EOPNOTSUPP on a device whose kernel does not report ECE support, as libmlx5.
func (qp *QP) SetECE(e ECE) error {
	c := qp.ctx
	if err := qp.enter(); err != nil {
		return wrapf(c.dev.Name, err, "set ECE of QP %#x", qp.qpn)
	}
	defer qp.exit()
	p, ok := qp.prov.(provider.ECEQP)
	switch {
	case e.VendorID == 0:
		return wrapf(c.dev.Name, fmt.Errorf("vendor id 0: %w", unix.EOPNOTSUPP), "set ECE of QP %#x", qp.qpn)
	case !ok:
		return wrapf(c.dev.Name, fmt.Errorf("goverbs' provider for %v has no ECE: %w", c.dev.DriverID, unix.EOPNOTSUPP),
			"set ECE of QP %#x", qp.qpn)
	}
	if err := p.SetECE(provider.ECE{VendorID: e.VendorID, Options: e.Options}); err != nil {
		return wrapf(c.dev.Name, err, "set ECE of QP %#x (vendor %#x, options %#x)", qp.qpn, e.VendorID, e.Options)
	}
	return nil
}

// QueryECE returns the QP's current ECE options (ibv_query_ece): on mlx5 the options the device answered at
// creation or at the Modify after the last SetECE (0 where the device has no ECE), with VendorMellanox. A QP
// whose provider has no ECE (rxe, siw) answers ErrNotSupported (unix.EOPNOTSUPP), as libibverbs does.
func (qp *QP) QueryECE() (ECE, error) {
	c := qp.ctx
	if err := qp.enter(); err != nil {
		return ECE{}, wrapf(c.dev.Name, err, "query ECE of QP %#x", qp.qpn)
	}
	defer qp.exit()
	p, ok := qp.prov.(provider.ECEQP)
	if !ok {
		return ECE{}, wrapf(c.dev.Name, fmt.Errorf("goverbs' provider for %v has no ECE: %w", c.dev.DriverID, unix.EOPNOTSUPP),
			"query ECE of QP %#x", qp.qpn)
	}
	e, err := p.QueryECE()
	if err != nil {
		return ECE{}, wrapf(c.dev.Name, err, "query ECE of QP %#x", qp.qpn)
	}
	return ECE{VendorID: e.VendorID, Options: e.Options}, nil
}

// RateLimit is a QP's packet-pacing limit (struct ibv_qp_rate_limit_attr; its comp_mask has no counterpart).
type RateLimit struct {
	Rate              uint32 // kbit/s; 0 removes the limit
	MaxBurstSize      uint32 // bytes; 0 for the device's default (needs Rate)
	TypicalPacketSize uint16 // bytes; 0 for the device's default (needs Rate)
}

// qpAttrRateLimit is IBV_QP_RATE_LIMIT, the attribute-mask bit of the extended MODIFY_QP's rate limit.
const qpAttrRateLimit QPAttrMask = 1 << 25

// SetRateLimit sets the QP's send rate limit (ibv_modify_qp_rate_limit), through the extended MODIFY_QP with
// the rate-limit attribute. A QP whose provider has no packet pacing (rxe, siw) answers ErrNotSupported
// (unix.EOPNOTSUPP), as libibverbs does. mlx5 (as libmlx5) refuses a burst or packet size without a rate, and
// on a device without burst support, with unix.EINVAL; the kernel checks the rate against the device's
// packet-pacing range (DeviceAttr.Raw's packet_pacing_caps) and refuses a QP type it cannot pace.
func (qp *QP) SetRateLimit(r RateLimit) error {
	c := qp.ctx
	op := func() string { return fmt.Sprintf("set rate limit of QP %#x to %d kbit/s", qp.qpn, r.Rate) }
	if err := qp.enter(); err != nil {
		return wrapf(c.dev.Name, err, "%s", op())
	}
	defer qp.exit()
	p, ok := qp.prov.(provider.RateLimiter)
	if !ok {
		return wrapf(c.dev.Name, fmt.Errorf("goverbs' provider for %v has no packet pacing: %w", c.dev.DriverID, unix.EOPNOTSUPP),
			"%s", op())
	}
	in := c.modifyQPIn(qp, &QPAttr{}, qpAttrRateLimit)
	err := p.SetRateLimit(provider.RateLimit{Rate: r.Rate, MaxBurstSize: r.MaxBurstSize, TypicalPacketSize: r.TypicalPacketSize},
		func(extended bool, uhwIn, uhwOut []byte) error {
			if !extended {
				return fmt.Errorf("a rate limit needs the extended MODIFY_QP: %w", unix.EINVAL)
			}
			return c.cmdModifyQP(in, true, r.Rate, uhwIn, uhwOut)
		})
	if err != nil {
		return wrapf(c.dev.Name, err, "%s (burst %d bytes, typical packet %d bytes)", op(), r.MaxBurstSize, r.TypicalPacketSize)
	}
	return nil
}

// RTValues are a device's real-time values (struct ibv_values_ex).
type RTValues struct {
	// RawClock is the device's free-running clock in cycles (libibverbs returns it as raw_clock.tv_nsec, with
	// tv_sec 0); DeviceAttr.HCACoreClock is its frequency in kHz.
	RawClock uint64
}

// QueryRTValues reads the device's real-time values (ibv_query_rt_values_ex with IBV_VALUES_MASK_RAW_CLOCK,
// the only value libibverbs defines). mlx5 reads the HCA core clock from the page the kernel maps for it, as
// libmlx5 does, without a system call; a context without that page (an old kernel) answers ErrNotSupported.
// A provider without a clock read (rxe, siw) answers ErrNotSupported (unix.EOPNOTSUPP), as libibverbs does.
func (c *Context) QueryRTValues() (RTValues, error) {
	const op = "query real-time values"
	r, ok := c.prov.(provider.ClockReader)
	if !ok {
		return RTValues{}, wrap(op, c.dev.Name, fmt.Errorf("goverbs' provider for %v reads no device clock: %w",
			c.dev.DriverID, unix.EOPNOTSUPP))
	}
	// Under the context's lock: Close, which holds it, unmaps the clock page.
	c.mu.Lock()
	var v uint64
	err := ErrClosed
	if !c.closed {
		v, err = r.ReadClock()
	}
	c.mu.Unlock()
	if err != nil {
		return RTValues{}, wrap(op, c.dev.Name, err)
	}
	return RTValues{RawClock: v}, nil
}

// AllocNullMR returns the null MR (ibv_alloc_null_mr): an MR whose LKey, in a receive or a local SGE, makes
// the device drop what it would write there and read nothing meaningful from it (a receive that discards its
// data, a send of padding). It has no address (Addr 0) and covers every length (Len math.MaxInt); its RKey is
// 0: it cannot be the target of remote access. Close it as any MR. On mlx5 its key is the kernel's dump-fill
// mkey, reported at context creation: there is no kernel object, as in libmlx5; a device whose kernel reports
// none answers ErrNotSupported. A provider without null MRs (rxe, siw) answers ErrNotSupported
// (unix.EOPNOTSUPP), as libibverbs does.
func (pd *PD) AllocNullMR() (*MR, error) {
	c := pd.ctx
	const op = "alloc null MR"
	if err := pd.checkOpen(); err != nil {
		return nil, wrap(op, c.dev.Name, err)
	}
	a, ok := c.prov.(provider.NullMRAllocator)
	if !ok {
		return nil, wrap(op, c.dev.Name, fmt.Errorf("goverbs' provider for %v has no null MR: %w", c.dev.DriverID, unix.EOPNOTSUPP))
	}
	key, err := a.NullMRKey()
	if err != nil {
		return nil, wrap(op, c.dev.Name, err)
	}
	if err := c.addObject(); err != nil {
		return nil, wrap(op, c.dev.Name, err)
	}
	return &MR{pd: pd, lkey: key, length: math.MaxInt, null: true}, nil
}

// IsNull reports whether the MR is a null MR (PD.AllocNullMR).
func (mr *MR) IsNull() bool { return mr.null }
