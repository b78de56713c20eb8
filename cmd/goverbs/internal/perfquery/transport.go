package perfquery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
	"github.com/goverbs/goverbs/umad"
)

// Transport opens umad devices (/dev/infiniband/umadN under the tree) for
// the libibumad emulation.
type Transport interface {
	Open(path string) (Port, error)
}

// Port is one open umad device.
type Port interface {
	// Register is umad_register: the agent id, or the errno of the
	// failed IB_USER_MAD_REGISTER_AGENT.
	Register(class, version, rmpp uint8) (int, error)
	// PMAGet is pma_query_via: a PerfMgt GET of attr with PortSelect
	// port; it returns the bytes from MAD offset 64 and the MAD status.
	// timeoutMS 0 is libibmad's default (1000 ms, 3 retries).
	PMAGet(dest portID, port int, attr uint16, timeoutMS int) (data []byte, status uint16, err error)
	// Reset is performance_reset_via: a PerfMgt SET clearing mask.
	Reset(dest portID, port int, attr uint16, mask int, timeoutMS int) error
	// NodeInfo is an SMP NodeInfo query: node type and port count.
	NodeInfo(dest portID) (nodeType, numPorts int, err error)
	// SwitchEnhancedPort0 is an SMP SwitchInfo query's EnhancedPort0 bit.
	SwitchEnhancedPort0(dest portID) (bool, error)
	Close() error
}

// errNotCloned is returned for SMPs, which goverbs' perfquery does not
// send (no RoCE port answers them).
var errNotCloned = errors.New("perfquery: subnet management queries are not implemented")

// openPort is mad_rpc_open_port2(ibd_ca, ibd_ca_port, {SMI, SA, PerfMgt},
// 3, 0) with its failure messages: it returns the GSI port.
func (s *state) openPort() Port {
	u := s.u
	u.Trace("umad_init", "umad_init")
	caShown := "(null)"
	if s.ca != nil {
		caShown = *s.ca
	}
	fail := func() {
		u.Warn("mad_rpc_open_port2", "can't open UMAD port (%s:%d)", caShown, s.caPort)
		s.exitf("main", "Failed to open '%s' port '%d'", caShown, s.caPort)
	}
	pair, rc := u.pairByCAName(s.ca, uint8(s.caPort))
	if rc < 0 {
		u.Warn("get_smi_gsi_pair", "Can't open UMAD port (%s) (%s:%d)", cstd.Strerror(unix.Errno(-rc)), caShown, s.caPort)
		fail()
	}
	smi, smiFD := s.open(pair.smiName, pair.smiPort)
	gsi, gsiFD := s.open(pair.gsiName, pair.gsiPort)
	if gsi == nil {
		u.Warn("get_smi_gsi_pair", "Can't open GSI UMAD port (%s) (%s:%d)", cstd.Strerror(unix.Errno(-gsiFD)), pair.gsiName, pair.gsiPort)
		u.closePort(smiFD)
		if smi != nil {
			smi.Close()
		}
		fail()
	}
	s.pair, s.pairSet = pair, true
	closeAll := func() {
		u.closePort(smiFD)
		u.closePort(gsiFD)
		if smi != nil {
			smi.Close()
		}
		gsi.Close()
	}
	for _, c := range []struct{ class, version, rmpp uint8 }{{1, 1, 0}, {3, 2, 1}, {4, 1, 0}} {
		p, fd := gsi, gsiFD
		if c.class == 1 && smi != nil {
			p, fd = smi, smiFD
		}
		u.Trace("umad_register", "fd %d mgmt_class %d mgmt_version %d rmpp_version %d method_mask (nil)", fd, c.class, c.version, c.rmpp)
		qp := 1
		if c.class == 1 {
			qp = 0
		}
		id, err := p.Register(c.class, c.version, c.rmpp)
		if err != nil {
			u.Trace("umad_register", "fd %d registering qp %d class 0x%x version %d failed: %s", fd, qp, c.class, c.version, cstd.Strerror(cstd.ErrnoOf(err, unix.EPERM)))
			if s.debug > 0 {
				u.Warn("mad_register_port_client", "Can't register agent for class %d", c.class)
			}
			u.Warn("mad_rpc_open_port2", "client_register for mgmt %d failed", c.class)
			closeAll()
			s.exitf("main", "Failed to open '%s' port '%d'", caShown, s.caPort)
		}
		u.Trace("umad_register", "fd %d registered to use agent %d qp %d", fd, id, qp)
	}
	if smi != nil {
		s.closers = append(s.closers, smi.Close)
	}
	return gsi
}

// open is umad_open_port's device part: the opened Port with the fd number
// the C library would have had, or nil and -errno.
func (s *state) open(name string, port int) (Port, int) {
	id := s.u.openPort(name, true, port)
	if id < 0 {
		return nil, id
	}
	dev := fmt.Sprintf("/dev/infiniband/umad%d", id)
	p, err := s.cmd.MAD.Open(s.cmd.FS.DevPath(fmt.Sprintf("infiniband/umad%d", id)))
	if err != nil {
		s.u.Trace("do_umad_open_port", "open %s failed: %s", dev, cstd.Strerror(cstd.ErrnoOf(err, unix.EIO)))
		return nil, -int(unix.EIO)
	}
	s.nextFD++
	fd := s.nextFD + 2
	s.u.Trace("do_umad_open_port", "opened %s fd %d portid %d", dev, fd, id)
	return p, fd
}

// UmadTransport is the real Transport: package umad.
type UmadTransport struct {
	FS sysfs.FS
}

type madPort struct {
	p      *umad.Port
	regErr error // the errno every registration fails with (not a umad device)
	agents map[uint8]umad.Agent
}

// Open opens a umad device. A file that is no umad device (the
// IB_USER_MAD_ENABLE_PKEY ioctl fails) opens, as it does for libibumad,
// and fails at agent registration with that ioctl's errno.
func (t *UmadTransport) Open(path string) (Port, error) {
	p, err := umad.OpenDevice(umad.Device{Name: path, Path: path})
	if err != nil {
		var e *umad.Error
		if errors.As(err, &e) && errors.Is(err, umad.ErrABI) {
			return &madPort{regErr: e.Err, agents: map[uint8]umad.Agent{}}, nil
		}
		return nil, err
	}
	return &madPort{p: p, agents: map[uint8]umad.Agent{}}, nil
}

func (u *madPort) Register(class, version, rmpp uint8) (int, error) {
	if u.regErr != nil {
		return 0, u.regErr
	}
	a, err := u.p.Register(umad.Registration{Class: class, ClassVersion: version, RMPPVersion: rmpp})
	if err != nil {
		return 0, err
	}
	u.agents[class] = a
	return int(a.ID), nil
}

func timeouts(ms int) (time.Duration, int) {
	if ms <= 0 {
		ms = 1000 // MAD_DEF_TIMEOUT_MS
	}
	return time.Duration(ms) * time.Millisecond, 3 // MAD_DEF_RETRIES
}

func (u *madPort) call(dest portID, method uint8, port int, attr uint16, fill func([]byte), timeoutMS int) ([]byte, uint16, error) {
	m := umad.NewPMAGet(0, attr, uint8(port))
	m[3] = method
	m[umad.PMADataOffset+1] = uint8(port)
	if fill != nil {
		fill(m)
	}
	to, retries := timeouts(timeoutMS)
	ctx, cancel := context.WithTimeout(context.Background(), to*time.Duration(retries+2))
	defer cancel()
	addr := umad.Addr{QPN: umad.QP1, QKey: umad.QP1QKey, LID: uint16(dest.lid), SL: uint8(dest.sl), PKeyIndex: uint16(dest.pkeyIdx)}
	resp, err := u.p.Call(ctx, u.agents[umad.ClassPMA], addr, m, to, retries)
	var se *umad.StatusError
	if errors.As(err, &se) {
		return nil, se.Status, nil
	}
	if err != nil {
		return nil, 0, err
	}
	out := make([]byte, 1024)
	copy(out, resp[umad.PMADataOffset:])
	return out, 0, nil
}

func (u *madPort) PMAGet(dest portID, port int, attr uint16, timeoutMS int) ([]byte, uint16, error) {
	return u.call(dest, umad.MethodGet, port, attr, nil, timeoutMS)
}

func (u *madPort) Reset(dest portID, port int, attr uint16, mask int, timeoutMS int) error {
	_, st, err := u.call(dest, umad.MethodSet, port, attr, func(m []byte) {
		d := m[umad.PMADataOffset:]
		d[2], d[3] = byte(mask>>8), byte(mask)
		if attr == umad.AttrPortCounters {
			d[18] = byte(mask >> 16) // CounterSelect2
		}
	}, timeoutMS)
	if err == nil && st != 0 {
		err = &umad.StatusError{Status: st}
	}
	return err
}

func (u *madPort) NodeInfo(portID) (int, int, error)        { return 0, 0, errNotCloned }
func (u *madPort) SwitchEnhancedPort0(portID) (bool, error) { return false, errNotCloned }

func (u *madPort) Close() error {
	if u.p == nil {
		return nil
	}
	return u.p.Close()
}
