package netlinkrdma

import (
	"errors"
	"fmt"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/enumstr"
)

// HWCounter is one hardware counter of a port, a QP counter or an MR.
type HWCounter struct {
	Name  string
	Value uint64
	// Index identifies the counter in optional-counter requests; sent by
	// RDMA_NLDEV_CMD_STAT_GET_STATUS (see Present).
	Index uint32
	// Optional is set for optional (dynamically enabled) counters, and
	// Enabled tells whether such a counter is on.
	Optional, Enabled bool
	Present           AttrSet
}

// decodeHWCounters decodes a RDMA_NLDEV_ATTR_STAT_HWCOUNTERS table.
func decodeHWCounters(ad *attrDecoder, needValue bool) []HWCounter {
	return decodeTable(ad, abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY, func(hc *HWCounter, e *attrDecoder) error {
		e.each(&hc.Present, func(e *attrDecoder) {
			switch e.Type() {
			case abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME:
				hc.Name = e.String()
			case abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE:
				hc.Value = e.Uint64()
			case abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX:
				hc.Index = e.Uint32()
			case abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_DYNAMIC:
				hc.Optional, hc.Enabled = true, e.Uint8() != 0
			}
		})
		if !hc.Present.Has(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME) ||
			(needValue && !hc.Present.Has(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE)) {
			return errors.New("netlinkrdma: hw counter lacks name or value")
		}
		return nil
	})
}

// PortStats is the hardware counters of one port (RDMA_NLDEV_CMD_STAT_GET).
type PortStats struct {
	DevIndex uint32
	DevName  string
	Port     uint32
	Counters []HWCounter
}

func decodePortStats(b []byte, needValue bool) (PortStats, error) {
	var s PortStats
	var present AttrSet
	err := walk(b, &present, func(ad *attrDecoder) {
		switch ad.Type() {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			s.DevIndex = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			s.DevName = ad.String()
		case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
			s.Port = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS:
			s.Counters = decodeHWCounters(ad, needValue)
		}
	})
	if err != nil {
		return PortStats{}, err
	}
	if t, ok := present.lacks(abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_DEV_NAME,
		abi.RDMA_NLDEV_ATTR_PORT_INDEX, abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS); ok {
		return PortStats{}, fmt.Errorf("netlinkrdma: port statistics lack attribute %d", t)
	}
	return s, nil
}

// portStats gets the counters of a port with STAT_GET (needValue) or
// STAT_GET_STATUS.
func (c *Conn) portStats(op uint16, devIndex, port uint32, needValue bool) (PortStats, error) {
	return get(c, op, portAttrs(devIndex, port).Encode(), func(b []byte) (PortStats, error) {
		return decodePortStats(b, needValue)
	})
}

// PortStats returns the hardware counters of a port. Devices without
// counters give an error matching ErrNotSupported.
//
// Equivalent to: rdma statistic show link DEV/PORT
func (c *Conn) PortStats(devIndex, port uint32) (PortStats, error) {
	s, err := c.portStats(abi.RDMA_NLDEV_CMD_STAT_GET, devIndex, port, true)
	if err != nil {
		return PortStats{}, opErr("get statistics of port", fmt.Sprintf("%d/%d", devIndex, port), err)
	}
	return s, nil
}

// CounterStatus lists a port's counters with their index and, for optional
// counters, whether they are enabled (RDMA_NLDEV_CMD_STAT_GET_STATUS).
//
// Equivalent to: rdma statistic mode supported link DEV/PORT
func (c *Conn) CounterStatus(devIndex, port uint32) (PortStats, error) {
	s, err := c.portStats(abi.RDMA_NLDEV_CMD_STAT_GET_STATUS, devIndex, port, false)
	if err != nil {
		return PortStats{}, opErr("get counter status of port", fmt.Sprintf("%d/%d", devIndex, port), err)
	}
	return s, nil
}

// SetOptionalCounters enables exactly the optional counters with the given
// indices (from CounterStatus) on a port; none disables them all.
//
// Equivalent to: rdma statistic set link DEV/PORT optional-counters A,B
func (c *Conn) SetOptionalCounters(devIndex, port uint32, indices []uint32) error {
	e := portAttrs(devIndex, port)
	e.Nested(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, func(ne *attrEncoder) {
		for _, i := range indices {
			ne.Uint32(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX, i)
		}
	})
	return opErr("set optional counters of port", fmt.Sprintf("%d/%d", devIndex, port),
		c.doit(abi.RDMA_NLDEV_CMD_STAT_SET, e.Encode(), nil))
}

// CounterMode is a port's QP counter binding mode.
type CounterMode uint32

// Counter modes (enum rdma_nl_counter_mode).
const (
	CounterModeNone   = CounterMode(abi.RDMA_COUNTER_MODE_NONE)
	CounterModeAuto   = CounterMode(abi.RDMA_COUNTER_MODE_AUTO)
	CounterModeManual = CounterMode(abi.RDMA_COUNTER_MODE_MANUAL)
)

var counterModeNames = [...]string{CounterModeNone: "none", CounterModeAuto: "auto", CounterModeManual: "manual"}

// String is the mode's name as iproute2's rdma prints it ("auto"), or "CounterMode(N)".
func (m CounterMode) String() string {
	return enumstr.Name(counterModeNames[:], uint64(m), "CounterMode")
}

// CounterMask is the set of criteria of the auto counter mode.
type CounterMask uint32

// Auto mode criteria (enum rdma_nl_counter_mask).
const (
	CounterMaskQPType = CounterMask(abi.RDMA_COUNTER_MASK_QP_TYPE)
	CounterMaskPID    = CounterMask(abi.RDMA_COUNTER_MASK_PID)
)

// String names the set criteria ("QP_TYPE|PID", enum rdma_nl_counter_mask's names; "0" for none).
func (m CounterMask) String() string { return enumstr.Flags([]string{"QP_TYPE", "PID"}, uint64(m)) }

// QPCounterMode is a port's QP counter configuration.
type QPCounterMode struct {
	DevIndex uint32
	DevName  string
	Port     uint32
	Mode     CounterMode
	AutoMask CounterMask // valid in CounterModeAuto
	// OptionalCounters reports that auto-bound counters also count the
	// optional (operation) counters (RDMA_NLDEV_ATTR_STAT_OPCOUNTER_ENABLED,
	// Linux 6.14+, drivers with optional counters).
	OptionalCounters bool
	Present          AttrSet
}

func decodeQPCounterMode(b []byte) (QPCounterMode, error) {
	var m QPCounterMode
	err := walk(b, &m.Present, func(ad *attrDecoder) {
		switch ad.Type() {
		case abi.RDMA_NLDEV_ATTR_DEV_INDEX:
			m.DevIndex = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_DEV_NAME:
			m.DevName = ad.String()
		case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
			m.Port = ad.Uint32()
		case abi.RDMA_NLDEV_ATTR_STAT_MODE:
			m.Mode = CounterMode(ad.Uint32())
		case abi.RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK:
			m.AutoMask = CounterMask(ad.Uint32())
		case abi.RDMA_NLDEV_ATTR_STAT_OPCOUNTER_ENABLED:
			m.OptionalCounters = ad.Uint8() != 0
		}
	})
	if err != nil {
		return QPCounterMode{}, err
	}
	if _, ok := m.Present.lacks(abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_PORT_INDEX); ok {
		return QPCounterMode{}, errors.New("netlinkrdma: counter mode reply lacks device or port")
	}
	if m.Mode == CounterModeAuto && !m.Present.Has(abi.RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK) {
		return QPCounterMode{}, errors.New("netlinkrdma: auto counter mode without mask")
	}
	return m, nil
}

// QPCounterMode returns a port's QP counter mode.
//
// Equivalent to: rdma statistic qp mode link DEV/PORT
func (c *Conn) QPCounterMode(devIndex, port uint32) (QPCounterMode, error) {
	e := portAttrs(devIndex, port)
	// A STAT_MODE attribute asks the kernel for the mode instead of the
	// counters.
	e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_MODE, abi.RDMA_COUNTER_MODE_MANUAL)
	e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_RES, abi.RDMA_NLDEV_ATTR_RES_QP)
	m, err := get(c, abi.RDMA_NLDEV_CMD_STAT_GET, e.Encode(), decodeQPCounterMode)
	if err != nil {
		return QPCounterMode{}, opErr("get qp counter mode of port", fmt.Sprintf("%d/%d", devIndex, port), err)
	}
	return m, nil
}

// SetQPCounterAuto sets the auto QP counter mode of a port with the given
// criteria; an empty mask turns auto mode off. Needs CAP_NET_ADMIN and a
// driver with counter support (rxe has none: EOPNOTSUPP).
//
// Equivalent to: rdma statistic qp set link DEV/PORT auto type on
func (c *Conn) SetQPCounterAuto(devIndex, port uint32, mask CounterMask) error {
	return c.SetQPCounterAutoWith(devIndex, port, mask, nil)
}

// QPCounterAutoOptions are the optional settings of SetQPCounterAutoWith;
// nil means none.
type QPCounterAutoOptions struct {
	// OptionalCounters, when set, turns the counting of optional counters
	// by auto-bound counters on or off (Linux 6.14+; other kernels and
	// drivers without optional counters refuse it).
	OptionalCounters *bool
}

// SetQPCounterAutoWith is SetQPCounterAuto with options.
//
// Equivalent to: rdma statistic qp set link DEV/PORT auto CRITERIA on optional-counters on|off
func (c *Conn) SetQPCounterAutoWith(devIndex, port uint32, mask CounterMask, opts *QPCounterAutoOptions) error {
	e := portAttrs(devIndex, port)
	e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_RES, abi.RDMA_NLDEV_ATTR_RES_QP)
	e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_MODE, abi.RDMA_COUNTER_MODE_AUTO)
	e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK, uint32(mask))
	if opts != nil && opts.OptionalCounters != nil {
		e.Bool(abi.RDMA_NLDEV_ATTR_STAT_OPCOUNTER_ENABLED, *opts.OptionalCounters)
	}
	return opErr("set qp counter mode of port", fmt.Sprintf("%d/%d", devIndex, port),
		c.doit(abi.RDMA_NLDEV_CMD_STAT_SET, e.Encode(), nil))
}

// BindQPCounter binds QP lqpn to counter cntn, or to a new counter when
// cntn is nil.
//
// Equivalent to: rdma statistic qp bind link DEV/PORT lqpn N [cntn M]
func (c *Conn) BindQPCounter(devIndex, port, lqpn uint32, cntn *uint32) error {
	var e attrEncoder
	e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_MODE, abi.RDMA_COUNTER_MODE_MANUAL)
	e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_RES, abi.RDMA_NLDEV_ATTR_RES_QP)
	e.Uint32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, devIndex)
	e.Uint32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, port)
	e.Uint32(abi.RDMA_NLDEV_ATTR_RES_LQPN, lqpn)
	if cntn != nil {
		e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ID, *cntn)
	}
	return opErr("bind qp counter", fmt.Sprintf("lqpn %d on %d/%d", lqpn, devIndex, port),
		c.doit(abi.RDMA_NLDEV_CMD_STAT_SET, e.Encode(), nil))
}

// UnbindQPCounter unbinds QP lqpn from counter cntn.
//
// Equivalent to: rdma statistic qp unbind link DEV/PORT cntn M lqpn N
func (c *Conn) UnbindQPCounter(devIndex, port, cntn, lqpn uint32) error {
	var e attrEncoder
	e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_MODE, abi.RDMA_COUNTER_MODE_MANUAL)
	e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_RES, abi.RDMA_NLDEV_ATTR_RES_QP)
	e.Uint32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, devIndex)
	e.Uint32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, port)
	e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ID, cntn)
	e.Uint32(abi.RDMA_NLDEV_ATTR_RES_LQPN, lqpn)
	return opErr("unbind qp counter", fmt.Sprintf("%d lqpn %d on %d/%d", cntn, lqpn, devIndex, port),
		c.doit(abi.RDMA_NLDEV_CMD_STAT_DEL, e.Encode(), nil))
}

// QPCounter is one QP counter of a port (STAT_GET with STAT_RES = QP).
type QPCounter struct {
	ResBase
	Port     uint32
	ID       uint32 // RDMA_NLDEV_ATTR_STAT_COUNTER_ID
	Type     QPType // when the counter is bound by QP type
	Counters []HWCounter
	LQPNs    []uint32
}

func (q *QPCounter) decodeAttr(ad *attrDecoder) {
	switch ad.Type() {
	case abi.RDMA_NLDEV_ATTR_PORT_INDEX:
		q.Port = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ID:
		q.ID = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_RES_TYPE:
		q.Type = QPType(ad.Uint8())
	case abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS:
		q.Counters = decodeHWCounters(ad, true)
	case abi.RDMA_NLDEV_ATTR_RES_QP:
		ad.entries(abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY, func(e *attrDecoder) error {
			found := false
			for e.Next() {
				if e.Type() == abi.RDMA_NLDEV_ATTR_RES_LQPN {
					q.LQPNs = append(q.LQPNs, e.Uint32())
					found = true
				}
			}
			if !found {
				return errors.New("netlinkrdma: counter qp entry lacks lqpn")
			}
			return nil
		})
	}
}

func (q *QPCounter) check() error {
	if t, ok := q.Present.lacks(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS, abi.RDMA_NLDEV_ATTR_RES_QP,
		abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ID); ok {
		return fmt.Errorf("netlinkrdma: qp counter lacks attribute %d", t)
	}
	return nil
}

var qpCounterKind = resKind{name: "qp counter", cmd: abi.RDMA_NLDEV_CMD_STAT_GET,
	table: abi.RDMA_NLDEV_ATTR_STAT_COUNTER, entry: abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY,
	id: abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ID}

// QPCounters lists the QP counters of a port.
//
// Equivalent to: rdma statistic qp show link DEV/PORT
func (c *Conn) QPCounters(devIndex, port uint32) ([]QPCounter, error) {
	e := portAttrs(devIndex, port)
	e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_RES, abi.RDMA_NLDEV_ATTR_RES_QP)
	out, err := listTables(c, abi.RDMA_NLDEV_CMD_STAT_GET, e.Encode(), func(b []byte) ([]QPCounter, error) {
		return decodeResDump[QPCounter](b, qpCounterKind)
	})
	if err != nil {
		return nil, opErr("list qp counters of port", fmt.Sprintf("%d/%d", devIndex, port), err)
	}
	return out, nil
}

// MRStats is the per-MR counters of a device (STAT_GET with STAT_RES = MR).
type MRStats struct {
	ResBase
	MRN      uint32
	Counters []HWCounter
}

func (m *MRStats) decodeAttr(ad *attrDecoder) {
	switch ad.Type() {
	case abi.RDMA_NLDEV_ATTR_RES_MRN:
		m.MRN = ad.Uint32()
	case abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTERS:
		m.Counters = decodeHWCounters(ad, true)
	}
}

func (m *MRStats) check() error { return nil }

var mrStatKind = resKind{name: "mr statistics", cmd: abi.RDMA_NLDEV_CMD_STAT_GET,
	table: abi.RDMA_NLDEV_ATTR_RES_MR, entry: abi.RDMA_NLDEV_ATTR_RES_MR_ENTRY,
	id: abi.RDMA_NLDEV_ATTR_RES_MRN}

// MRStats lists the per-MR counters of a device (drivers without MR
// counters, such as rxe, report none).
//
// Equivalent to: rdma statistic mr show dev DEV
func (c *Conn) MRStats(devIndex uint32) ([]MRStats, error) {
	e := devAttrs(devIndex)
	e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_RES, abi.RDMA_NLDEV_ATTR_RES_MR)
	out, err := listTables(c, abi.RDMA_NLDEV_CMD_STAT_GET, e.Encode(), func(b []byte) ([]MRStats, error) {
		return decodeResDump[MRStats](b, mrStatKind)
	})
	if err != nil {
		return nil, opErr("list mr statistics of device", fmt.Sprintf("index %d", devIndex), err)
	}
	return out, nil
}

// QPCounter returns the QP counter cntn of a port.
//
// Used by: rdma statistic qp unbind link DEV/PORT cntn M
func (c *Conn) QPCounter(devIndex, port, cntn uint32) (QPCounter, error) {
	e := portAttrs(devIndex, port)
	e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_RES, abi.RDMA_NLDEV_ATTR_RES_QP)
	e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_COUNTER_ID, cntn)
	out, err := get(c, abi.RDMA_NLDEV_CMD_STAT_GET, e.Encode(), func(b []byte) (QPCounter, error) {
		vs, err := decodeResDump[QPCounter](b, qpCounterKind)
		if err == nil && len(vs) != 1 {
			err = fmt.Errorf("netlinkrdma: want one qp counter, got %d", len(vs))
		}
		if err != nil {
			return QPCounter{}, err
		}
		return vs[0], nil
	})
	if err != nil {
		return QPCounter{}, opErr("get qp counter", fmt.Sprintf("%d of port %d/%d", cntn, devIndex, port), err)
	}
	return out, nil
}

// MRStat returns the counters of MR mrn.
//
// Equivalent to: rdma statistic mr mrn N
func (c *Conn) MRStat(devIndex, mrn uint32) (MRStats, error) {
	e := devAttrs(devIndex)
	e.Uint32(abi.RDMA_NLDEV_ATTR_RES_MRN, mrn)
	e.Uint32(abi.RDMA_NLDEV_ATTR_STAT_RES, abi.RDMA_NLDEV_ATTR_RES_MR)
	out, err := get(c, abi.RDMA_NLDEV_CMD_STAT_GET, e.Encode(), func(b []byte) (MRStats, error) {
		return decodeResOne[MRStats](b, mrStatKind)
	})
	if err != nil {
		return MRStats{}, opErr("get mr statistics", fmt.Sprintf("%d of device index %d", mrn, devIndex), err)
	}
	return out, nil
}
