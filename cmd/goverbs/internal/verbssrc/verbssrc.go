// Package verbssrc is the device list the goverbs tools show on the real
// system: goverbs' own discovery (uverbs.Devices: RDMA netlink, sysfs as
// fallback), filtered and reported like libibverbs 65's
// ibv_get_device_list, so that "goverbs devices" and "goverbs devinfo" list
// what ibv_devices and ibv_devinfo list.
//
// ibv_devices (package devices) and ibv_devinfo (package devinfo) both use
// it; devinfo adds the device queries. The other list the tools know is
// package verbsdev, libibverbs' own sysfs scan, which the tools use on fake
// trees and to reproduce libibverbs' warnings byte for byte.
package verbssrc

import (
	"errors"
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/verbsdev"
	"github.com/goverbs/goverbs/uverbs"
)

// Device is one usable verbs device.
type Device struct {
	uverbs.Device
	// Transport is ibv_device.transport_type (see verbsdev.TransportOf).
	Transport int
}

// List returns the usable devices in kernel index order. Devices
// libibverbs would skip (no uverbs node, /dev node missing) are left out; one
// this process may not open is listed, as libibverbs does. A
// failure to list wraps ENOSYS, as libibverbs reports it. stderr receives
// libibverbs' warning about a small RLIMIT_MEMLOCK and may be nil.
func List(stderr io.Writer) ([]Device, error) {
	if stderr != nil {
		verbsdev.WarnMemlock(stderr)
	}
	devs, err := uverbs.Devices()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", unix.ENOSYS, err)
	}
	var out []Device
	for _, d := range devs {
		// libibverbs lists a device whose node this process may not open (it fails at ibv_open_device).
		if d.Err != nil && !errors.Is(d.Err, unix.EACCES) && !errors.Is(d.Err, unix.EPERM) {
			continue
		}
		out = append(out, Device{Device: d, Transport: verbsdev.TransportOf(int(d.NodeType))})
	}
	return out, nil
}
