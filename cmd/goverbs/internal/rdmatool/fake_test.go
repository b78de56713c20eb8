package rdmatool

import (
	"context"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/netlinkrdma"
)

// present builds an attribute set for fixed test data.
func present(types ...uint16) netlinkrdma.AttrSet {
	var s netlinkrdma.AttrSet
	for _, t := range types {
		s = s.With(t)
	}
	return s
}

func boolp(b bool) *bool { return &b }

// fakeBackend serves fixed, decoded data: an rxe device (index 0, one RoCE
// port) and an mlx5-like IB device (index 1, two ports).
type fakeBackend struct {
	calls   []string
	linkErr error
}

var fakeDevices = []netlinkrdma.Device{
	{Index: 0, Name: "rxe0", NumPorts: 1, NodeType: netlinkrdma.NodeTypeCA, NodeGUID: 0x2c1d93fffec46cfa,
		SysImageGUID: 0x2c1d93fffec46cfa, Caps: 0x1e22271, Protocol: "roce", AdaptiveModeration: boolp(false),
		Present: present(abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_DEV_NAME, abi.RDMA_NLDEV_ATTR_PORT_INDEX,
			abi.RDMA_NLDEV_ATTR_CAP_FLAGS, abi.RDMA_NLDEV_ATTR_NODE_GUID, abi.RDMA_NLDEV_ATTR_SYS_IMAGE_GUID,
			abi.RDMA_NLDEV_ATTR_DEV_NODE_TYPE, abi.RDMA_NLDEV_ATTR_DEV_DIM, abi.RDMA_NLDEV_ATTR_DEV_PROTOCOL)},
	{Index: 1, Name: "mlx5_0", NumPorts: 2, NodeType: netlinkrdma.NodeTypeCA, NodeGUID: 0x0002c90300a1b2c3,
		SysImageGUID: 0x0002c90300a1b2c0, Caps: 1<<36 | 1<<32 | 1<<16 | 1, FirmwareVersion: "16.35.2000",
		Protocol: "ib", AdaptiveModeration: boolp(true),
		Present: present(abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_DEV_NAME, abi.RDMA_NLDEV_ATTR_PORT_INDEX,
			abi.RDMA_NLDEV_ATTR_CAP_FLAGS, abi.RDMA_NLDEV_ATTR_FW_VERSION, abi.RDMA_NLDEV_ATTR_NODE_GUID,
			abi.RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, abi.RDMA_NLDEV_ATTR_DEV_NODE_TYPE, abi.RDMA_NLDEV_ATTR_DEV_DIM,
			abi.RDMA_NLDEV_ATTR_DEV_PROTOCOL)},
}

func (f *fakeBackend) Close() error                           { return nil }
func (f *fakeBackend) Devices() ([]netlinkrdma.Device, error) { return fakeDevices, nil }

func (f *fakeBackend) DeviceByIndex(idx uint32) (netlinkrdma.Device, error) {
	for _, d := range fakeDevices {
		if d.Index == idx {
			return d, nil
		}
	}
	return netlinkrdma.Device{}, unix.EINVAL
}

func (f *fakeBackend) record(s string) { f.calls = append(f.calls, s) }

func (f *fakeBackend) SetDeviceName(idx uint32, name string) error {
	f.record("rename")
	return f.linkErr
}
func (f *fakeBackend) SetDeviceNetNS(idx uint32, fd int) error { return unix.EOPNOTSUPP }
func (f *fakeBackend) SetAdaptiveModeration(idx uint32, on bool) error {
	f.record("dim")
	return nil
}

func (f *fakeBackend) Port(dev, port uint32) (netlinkrdma.Port, error) {
	if dev == 0 {
		return netlinkrdma.Port{DevIndex: 0, DevName: "rxe0", Index: 1, State: netlinkrdma.PortStateActive,
			PhysState: netlinkrdma.PhysStateLinkUp, NetdevName: "veth0", NetdevIndex: 3,
			Present: present(abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_DEV_NAME, abi.RDMA_NLDEV_ATTR_PORT_INDEX,
				abi.RDMA_NLDEV_ATTR_PORT_STATE, abi.RDMA_NLDEV_ATTR_PORT_PHYS_STATE, abi.RDMA_NLDEV_ATTR_NDEV_INDEX,
				abi.RDMA_NLDEV_ATTR_NDEV_NAME)}, nil
	}
	return netlinkrdma.Port{DevIndex: 1, DevName: "mlx5_0", Index: port, State: netlinkrdma.PortStateDown,
		PhysState: netlinkrdma.PhysStatePolling,
		IB:        &netlinkrdma.PortIB{Caps: 0x2651e848, SubnetPrefix: 0xfe80000000000000, LID: 7 + port, SMLID: 1, LMC: 0},
		Present: present(abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_DEV_NAME, abi.RDMA_NLDEV_ATTR_PORT_INDEX,
			abi.RDMA_NLDEV_ATTR_CAP_FLAGS, abi.RDMA_NLDEV_ATTR_SUBNET_PREFIX, abi.RDMA_NLDEV_ATTR_LID,
			abi.RDMA_NLDEV_ATTR_SM_LID, abi.RDMA_NLDEV_ATTR_LMC, abi.RDMA_NLDEV_ATTR_PORT_STATE,
			abi.RDMA_NLDEV_ATTR_PORT_PHYS_STATE)}, nil
}

func (f *fakeBackend) LinkAdd(name, typ, netdev string) error {
	f.record("linkadd " + name + " " + typ + " " + netdev)
	return f.linkErr
}
func (f *fakeBackend) LinkDelIndex(idx uint32) error { f.record("linkdel"); return f.linkErr }

func (f *fakeBackend) System() (netlinkrdma.System, error) {
	return netlinkrdma.System{NetNSMode: netlinkrdma.NetNSShared, CopyOnFork: true, Monitor: true,
		Present: present(abi.RDMA_NLDEV_SYS_ATTR_NETNS_MODE, abi.RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK,
			abi.RDMA_NLDEV_SYS_ATTR_PRIVILEGED_QKEY_MODE, abi.RDMA_NLDEV_SYS_ATTR_MONITOR_MODE)}, nil
}
func (f *fakeBackend) SetPrivilegedQKey(on bool) error {
	f.record(fmt.Sprint("privileged-qkey ", on))
	return nil
}
func (f *fakeBackend) AddSubDevice(parent uint32, name string, typ netlinkrdma.DeviceType) error {
	f.record(fmt.Sprint("newdev ", parent, " ", name, " ", typ))
	return unix.EOPNOTSUPP
}
func (f *fakeBackend) DeleteSubDevice(idx uint32) error {
	f.record(fmt.Sprint("deldev ", idx))
	return unix.EOPNOTSUPP
}
func (f *fakeBackend) SetNetNSMode(m netlinkrdma.NetNSMode) error {
	f.record("netns " + m.String())
	return nil
}

func (f *fakeBackend) ResourceSummary(idx uint32) (netlinkrdma.ResourceSummary, error) {
	s := netlinkrdma.ResourceSummary{DevIndex: idx, DevName: fakeDevices[idx].Name}
	for i, n := range []string{"pd", "cq", "qp", "cm_id", "mr", "ctx", "srq"} {
		c := netlinkrdma.ResourceCount{Name: n, Current: uint64(i % 3)}
		if n != "cm_id" && n != "ctx" { // Linux 7.3 sends limits for these
			c.Max, c.HasMax = 1<<20+uint64(i), true
		}
		s.Counts = append(s.Counts, c)
	}
	return s, nil
}

func resBase(dev uint32, pid uint32, kern string, extra ...uint16) netlinkrdma.ResBase {
	b := netlinkrdma.ResBase{DevIndex: dev, DevName: fakeDevices[dev].Name, PID: pid, KernelName: kern}
	types := append([]uint16{abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_DEV_NAME}, extra...)
	if pid != 0 {
		types = append(types, abi.RDMA_NLDEV_ATTR_RES_PID)
	} else {
		types = append(types, abi.RDMA_NLDEV_ATTR_RES_KERN_NAME)
	}
	b.Present = present(types...)
	return b
}

func (f *fakeBackend) QPs(q netlinkrdma.ResQuery) ([]netlinkrdma.QP, error) {
	if q.DevIndex != 0 {
		return nil, nil
	}
	all := []netlinkrdma.QP{
		{ResBase: resBase(0, 0, "ib_core", abi.RDMA_NLDEV_ATTR_PORT_INDEX, abi.RDMA_NLDEV_ATTR_RES_LQPN,
			abi.RDMA_NLDEV_ATTR_RES_SQ_PSN, abi.RDMA_NLDEV_ATTR_RES_TYPE, abi.RDMA_NLDEV_ATTR_RES_STATE),
			Port: 1, LQPN: 1, SQPSN: 0, Type: 1, State: 3},
		{ResBase: resBase(0, 4242, "", abi.RDMA_NLDEV_ATTR_RES_LQPN, abi.RDMA_NLDEV_ATTR_RES_SQ_PSN,
			abi.RDMA_NLDEV_ATTR_RES_TYPE, abi.RDMA_NLDEV_ATTR_RES_STATE, abi.RDMA_NLDEV_ATTR_RES_PDN),
			LQPN: 17, SQPSN: 0, Type: 2, State: 1, PDN: 2},
		{ResBase: resBase(0, 4243, "", abi.RDMA_NLDEV_ATTR_PORT_INDEX, abi.RDMA_NLDEV_ATTR_RES_LQPN,
			abi.RDMA_NLDEV_ATTR_RES_RQPN, abi.RDMA_NLDEV_ATTR_RES_RQ_PSN, abi.RDMA_NLDEV_ATTR_RES_SQ_PSN,
			abi.RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE, abi.RDMA_NLDEV_ATTR_RES_TYPE, abi.RDMA_NLDEV_ATTR_RES_STATE,
			abi.RDMA_NLDEV_ATTR_RES_PDN),
			Port: 1, LQPN: 18, RQPN: 19, RQPSN: 0x9a1c2, SQPSN: 0x3f00d, Type: 2, State: 3, PDN: 3},
	}
	var out []netlinkrdma.QP
	for _, qp := range all {
		if q.Port == 0 || qp.Port == q.Port {
			out = append(out, qp)
		}
	}
	return out, nil
}

func (f *fakeBackend) QP(q netlinkrdma.ResQuery, lqpn uint32) (netlinkrdma.QP, error) {
	qps, _ := f.QPs(q)
	for _, qp := range qps {
		if qp.LQPN == lqpn {
			return qp, nil
		}
	}
	return netlinkrdma.QP{}, unix.ENOENT
}

func (f *fakeBackend) CQs(q netlinkrdma.ResQuery) ([]netlinkrdma.CQ, error) {
	if q.DevIndex != 0 {
		return nil, nil
	}
	return []netlinkrdma.CQ{
		{ResBase: resBase(0, 0, "ib_core", abi.RDMA_NLDEV_ATTR_RES_CQE, abi.RDMA_NLDEV_ATTR_RES_USECNT,
			abi.RDMA_NLDEV_ATTR_RES_POLL_CTX, abi.RDMA_NLDEV_ATTR_DEV_DIM, abi.RDMA_NLDEV_ATTR_RES_CQN),
			CQN: 0, CQE: 1023, Users: 2, PollCtx: 2, AdaptiveModeration: boolp(false)},
		{ResBase: resBase(0, 4242, "", abi.RDMA_NLDEV_ATTR_RES_CQE, abi.RDMA_NLDEV_ATTR_RES_USECNT,
			abi.RDMA_NLDEV_ATTR_RES_CQN, abi.RDMA_NLDEV_ATTR_RES_CTXN),
			CQN: 1, CQE: 511, Users: 1, CTXN: 0},
	}, nil
}
func (f *fakeBackend) CQ(q netlinkrdma.ResQuery, id uint32) (netlinkrdma.CQ, error) {
	return netlinkrdma.CQ{}, unix.ENOENT
}

func (f *fakeBackend) MRs(q netlinkrdma.ResQuery) ([]netlinkrdma.MR, error) {
	if q.DevIndex != 0 {
		return nil, nil
	}
	return []netlinkrdma.MR{
		{ResBase: resBase(0, 4242, "", abi.RDMA_NLDEV_ATTR_RES_RKEY, abi.RDMA_NLDEV_ATTR_RES_LKEY,
			abi.RDMA_NLDEV_ATTR_RES_IOVA, abi.RDMA_NLDEV_ATTR_RES_MRLEN, abi.RDMA_NLDEV_ATTR_RES_MRN,
			abi.RDMA_NLDEV_ATTR_RES_PDN),
			MRN: 1, RKey: 0x1bd, LKey: 0x1bd, IOVA: 0x7f12_3456_7000, Length: 4096, PDN: 2},
	}, nil
}
func (f *fakeBackend) MR(q netlinkrdma.ResQuery, id uint32) (netlinkrdma.MR, error) {
	return netlinkrdma.MR{}, unix.ENOENT
}

func (f *fakeBackend) PDs(q netlinkrdma.ResQuery) ([]netlinkrdma.PD, error) {
	if q.DevIndex != 0 {
		return nil, nil
	}
	return []netlinkrdma.PD{
		{ResBase: resBase(0, 0, "ib_core", abi.RDMA_NLDEV_ATTR_RES_USECNT, abi.RDMA_NLDEV_ATTR_RES_PDN,
			abi.RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY),
			PDN: 0, Users: 2, LocalDMALKey: 0},
		{ResBase: resBase(0, 4242, "", abi.RDMA_NLDEV_ATTR_RES_USECNT, abi.RDMA_NLDEV_ATTR_RES_PDN,
			abi.RDMA_NLDEV_ATTR_RES_CTXN),
			PDN: 2, Users: 3, CTXN: 0},
	}, nil
}
func (f *fakeBackend) PD(q netlinkrdma.ResQuery, id uint32) (netlinkrdma.PD, error) {
	return netlinkrdma.PD{}, unix.ENOENT
}

func (f *fakeBackend) CMIDs(q netlinkrdma.ResQuery) ([]netlinkrdma.CMID, error) {
	if q.DevIndex != 0 || q.Port > 1 {
		return nil, nil
	}
	return []netlinkrdma.CMID{
		{ResBase: resBase(0, 4242, "", abi.RDMA_NLDEV_ATTR_PORT_INDEX, abi.RDMA_NLDEV_ATTR_RES_STATE,
			abi.RDMA_NLDEV_ATTR_RES_PS, abi.RDMA_NLDEV_ATTR_RES_SRC_ADDR, abi.RDMA_NLDEV_ATTR_RES_CM_IDN),
			Port: 1, State: 8, PortSpace: netlinkrdma.PortSpaceTCP,
			SrcAddr: netip.MustParseAddrPort("10.233.0.1:7471"), CMIDN: 0},
	}, nil
}
func (f *fakeBackend) CMID(q netlinkrdma.ResQuery, id uint32) (netlinkrdma.CMID, error) {
	return netlinkrdma.CMID{}, unix.ENOENT
}

func (f *fakeBackend) Contexts(q netlinkrdma.ResQuery) ([]netlinkrdma.Context, error) {
	if q.DevIndex != 0 {
		return nil, nil
	}
	return []netlinkrdma.Context{{ResBase: resBase(0, 4242, "", abi.RDMA_NLDEV_ATTR_RES_CTXN), CTXN: 0}}, nil
}
func (f *fakeBackend) Context(q netlinkrdma.ResQuery, id uint32) (netlinkrdma.Context, error) {
	return netlinkrdma.Context{}, unix.ENOENT
}

func (f *fakeBackend) SRQs(q netlinkrdma.ResQuery) ([]netlinkrdma.SRQ, error) {
	if q.DevIndex != 0 {
		return nil, nil
	}
	return []netlinkrdma.SRQ{{ResBase: resBase(0, 4242, "", abi.RDMA_NLDEV_ATTR_RES_SRQN, abi.RDMA_NLDEV_ATTR_RES_TYPE,
		abi.RDMA_NLDEV_ATTR_RES_PDN), SRQN: 4, Type: 0, PDN: 2, QPsPresent: true,
		QPs: []netlinkrdma.QPNRange{{Min: 20, Max: 20}, {Min: 22, Max: 25, Range: true}}}}, nil
}
func (f *fakeBackend) SRQ(q netlinkrdma.ResQuery, id uint32) (netlinkrdma.SRQ, error) {
	return netlinkrdma.SRQ{}, unix.ENOENT
}

var rxeCounters = []string{"sent_pkts", "rcvd_pkts", "duplicate_request", "link_downed"}

func (f *fakeBackend) PortStats(dev, port uint32) (netlinkrdma.PortStats, error) {
	if dev != 0 {
		return netlinkrdma.PortStats{}, unix.EOPNOTSUPP
	}
	s := netlinkrdma.PortStats{DevIndex: 0, DevName: "rxe0", Port: port}
	for i, n := range rxeCounters {
		s.Counters = append(s.Counters, netlinkrdma.HWCounter{Name: n, Value: uint64(i * 1000)})
	}
	return s, nil
}

func (f *fakeBackend) CounterStatus(dev, port uint32) (netlinkrdma.PortStats, error) {
	s := netlinkrdma.PortStats{DevIndex: dev, DevName: fakeDevices[dev].Name, Port: port}
	if dev == 1 {
		s.Counters = []netlinkrdma.HWCounter{
			{Name: "rx_write_requests", Index: 0, Present: present(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX)},
			{Name: "cc_rx_ce_pkts", Index: 1, Optional: true, Enabled: true,
				Present: present(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX)},
			{Name: "cc_rx_cnp_pkts", Index: 2, Optional: true, Present: present(abi.RDMA_NLDEV_ATTR_STAT_HWCOUNTER_INDEX)},
		}
	}
	return s, nil
}

func (f *fakeBackend) SetOptionalCounters(dev, port uint32, idx []uint32) error { return nil }

func (f *fakeBackend) QPCounterMode(dev, port uint32) (netlinkrdma.QPCounterMode, error) {
	m := netlinkrdma.QPCounterMode{DevIndex: dev, DevName: fakeDevices[dev].Name, Port: port,
		Present: present(abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_DEV_NAME, abi.RDMA_NLDEV_ATTR_PORT_INDEX)}
	if dev == 1 && port == 1 {
		m.Mode, m.AutoMask = netlinkrdma.CounterModeAuto, netlinkrdma.CounterMaskQPType
	}
	return m, nil
}

func (f *fakeBackend) SetQPCounterAuto(dev, port uint32, mask netlinkrdma.CounterMask, opts *netlinkrdma.QPCounterAutoOptions) error {
	if opts != nil && opts.OptionalCounters != nil {
		f.record(fmt.Sprint("auto ", uint32(mask), " optional-counters ", *opts.OptionalCounters))
		// A kernel before 6.14 rejects the attribute in its policy.
		return &netlinkrdma.KernelError{Errno: unix.EINVAL, Message: "Unknown attribute type"}
	}
	return unix.EOPNOTSUPP
}
func (f *fakeBackend) BindQPCounter(dev, port, lqpn uint32, cntn *uint32) error {
	return unix.EOPNOTSUPP
}
func (f *fakeBackend) UnbindQPCounter(dev, port, cntn, lqpn uint32) error { return unix.EOPNOTSUPP }

func (f *fakeBackend) QPCounters(dev, port uint32) ([]netlinkrdma.QPCounter, error) {
	if dev != 1 || port != 1 {
		return nil, nil
	}
	return []netlinkrdma.QPCounter{{
		ResBase: resBase(1, 4242, "", abi.RDMA_NLDEV_ATTR_PORT_INDEX, abi.RDMA_NLDEV_ATTR_RES_TYPE),
		Port:    1, ID: 4, Type: 2,
		Counters: []netlinkrdma.HWCounter{{Name: "rx_write_requests", Value: 12}, {Name: "rx_read_requests", Value: 0}},
		LQPNs:    []uint32{17, 18},
	}}, nil
}
func (f *fakeBackend) QPCounter(dev, port, cntn uint32) (netlinkrdma.QPCounter, error) {
	return netlinkrdma.QPCounter{}, unix.ENOENT
}
func (f *fakeBackend) MRStats(dev uint32) ([]netlinkrdma.MRStats, error) { return nil, nil }
func (f *fakeBackend) MRStat(dev, mrn uint32) (netlinkrdma.MRStats, error) {
	return netlinkrdma.MRStats{}, unix.ENOENT
}

// fakeEvents are what the fake monitor reports before failing: an rxe link
// added and its netdev attached, and a type this tool does not know.
var fakeEvents = []netlinkrdma.Event{
	{Type: netlinkrdma.EventRegister, DevIndex: 3, DevName: "rxe1",
		Present: present(abi.RDMA_NLDEV_ATTR_EVENT_TYPE, abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_DEV_NAME)},
	{Type: netlinkrdma.EventNetdevAttach, DevIndex: 3, DevName: "rxe1", Port: 1, NetdevIndex: 4, NetdevName: "veth1",
		Present: present(abi.RDMA_NLDEV_ATTR_EVENT_TYPE, abi.RDMA_NLDEV_ATTR_DEV_INDEX, abi.RDMA_NLDEV_ATTR_DEV_NAME,
			abi.RDMA_NLDEV_ATTR_PORT_INDEX, abi.RDMA_NLDEV_ATTR_NDEV_INDEX, abi.RDMA_NLDEV_ATTR_NDEV_NAME)},
	{Type: 9, DevIndex: 3, Present: present(abi.RDMA_NLDEV_ATTR_EVENT_TYPE, abi.RDMA_NLDEV_ATTR_DEV_INDEX)},
}

type fakeMonitor struct {
	events []netlinkrdma.Event
	closed bool
}

func (m *fakeMonitor) Next(ctx context.Context) (netlinkrdma.Event, error) {
	if len(m.events) == 0 {
		return netlinkrdma.Event{}, unix.ENOBUFS
	}
	e := m.events[0]
	m.events = m.events[1:]
	return e, nil
}

func (m *fakeMonitor) Close() error { m.closed = true; return nil }

func (f *fakeBackend) FRMRPools(q netlinkrdma.ResQuery) ([]netlinkrdma.FRMRPool, error) {
	if q.DevIndex != 1 {
		return nil, nil // rxe keeps no FRMR pools
	}
	key := netlinkrdma.FRMRPoolKey{VendorKey: 0x1f, NumDMABlocks: 0x100, AccessFlags: 0x2007, ATS: true,
		KernelVendorKey: 7, Present: present(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ATS,
			abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ACCESS_FLAGS, abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_VENDOR_KEY,
			abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_NUM_DMA_BLOCKS, abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_KERNEL_VENDOR_KEY)}
	counts := present(abi.RDMA_NLDEV_ATTR_FRMR_POOL_QUEUE_HANDLES, abi.RDMA_NLDEV_ATTR_FRMR_POOL_IN_USE,
		abi.RDMA_NLDEV_ATTR_FRMR_POOL_MAX_IN_USE, abi.RDMA_NLDEV_ATTR_FRMR_POOL_PINNED_HANDLES)
	a := netlinkrdma.FRMRPool{Key: key, HasKey: true, QueueHandles: 12, InUse: 3, MaxInUse: 40, PinnedHandles: 8}
	a.DevIndex, a.DevName, a.Present = 1, "mlx5_0", counts
	b := netlinkrdma.FRMRPool{QueueHandles: 2, InUse: 1, MaxInUse: 1}
	b.DevIndex, b.DevName, b.Present = 1, "mlx5_0", counts
	return []netlinkrdma.FRMRPool{a, b}, nil
}
func (f *fakeBackend) SetFRMRPoolAging(dev, period uint32) error {
	f.record(fmt.Sprint("aging ", dev, " ", period))
	return nil
}
func (f *fakeBackend) SetFRMRPoolPinned(dev uint32, k netlinkrdma.FRMRPoolKey, pinned uint32) error {
	f.record(fmt.Sprintf("pinned %d %x:%x:%x:%v %d", dev, k.VendorKey, k.NumDMABlocks, k.AccessFlags, k.ATS, pinned))
	return nil
}
