package rdmacm

import (
	"errors"
	"sync"

	"github.com/goverbs/goverbs/uverbs"
)

// DeviceList is the process's shared device contexts as Devices returned them (the array of
// rdma_get_devices). It holds a reference on each until Close.
type DeviceList struct {
	mu     sync.Mutex
	refs   []*devRef
	closed bool
}

// Devices returns the context of every RDMA device of the machine that can be opened (rdma_get_devices):
// the same context, with its PD, that the ids on that device use (ID.Device), opened here when no id has
// opened it yet. Devices that cannot be opened are left out, as librdmacm leaves them out. The list holds
// the contexts open until its Close (rdma_free_devices), and ids and channels that use them keep them open
// after it.
func Devices() (*DeviceList, error) {
	devs, err := uverbs.Devices()
	if err != nil {
		return nil, &Error{Op: "get devices", Err: err}
	}
	devices.mu.Lock()
	defer devices.mu.Unlock()
	l := &DeviceList{}
	for _, dv := range devs {
		if dv.Err != nil {
			continue
		}
		key := devKey{uint64(dv.NodeGUID), dv.Index}
		d := devices.m[key]
		if d == nil {
			if d, err = openDevice(key); err != nil {
				continue
			}
			devices.m[key] = d
		}
		d.refs++
		l.refs = append(l.refs, d)
	}
	return l, nil
}

// Contexts are the device contexts of the list, in the kernel's device order. They stay the process's:
// closing one is the list's Close's job, not the caller's.
func (l *DeviceList) Contexts() []*uverbs.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*uverbs.Context, len(l.refs))
	for i, d := range l.refs {
		out[i] = d.ctx
	}
	return out
}

// PD is the process's shared PD of the list's context ctx (librdmacm's PD of that device), nil when ctx is
// not one of the list's.
func (l *DeviceList) PD(ctx *uverbs.Context) *uverbs.PD {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range l.refs {
		if d.ctx == ctx {
			return d.pd
		}
	}
	return nil
}

// Close drops the list's references (rdma_free_devices): a context no id, channel or other list uses is
// closed with its PD. A second Close returns an error that matches ErrClosed.
func (l *DeviceList) Close() error {
	l.mu.Lock()
	refs, closed := l.refs, l.closed
	l.refs, l.closed = nil, true
	l.mu.Unlock()
	if closed {
		return &Error{Op: "free devices", Err: ErrClosed}
	}
	var errs []error
	for _, d := range refs {
		errs = append(errs, releaseDevice(d))
	}
	return errors.Join(errs...)
}
