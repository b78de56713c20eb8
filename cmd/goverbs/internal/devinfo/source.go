package devinfo

import (
	"errors"
	"fmt"
	"io"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/verbsdev"
)

// ErrNoQueryBackend is why SysfsSource cannot query a device: the device
// attributes come from the uverbs kernel interface, not from sysfs.
var ErrNoQueryBackend = errors.New("device queries need the uverbs backend")

// SysfsSource lists devices from sysfs like libibverbs (package verbsdev).
// It cannot open devices: Query fails with a StageOpen *QueryError wrapping
// ErrNoQueryBackend, which ibv_devinfo reports as "Failed to open device".
// UverbsSource is the Source that can.
type SysfsSource struct {
	// FS is the tree; sysfs.Host when zero.
	FS sysfs.FS
	// Stderr receives libibverbs' warnings (RLIMIT_MEMLOCK, kernel ABI).
	Stderr io.Writer
}

// Devices implements Source.
func (s SysfsSource) Devices() ([]DeviceID, error) {
	fs := s.FS
	if fs == (sysfs.FS{}) {
		fs = sysfs.Host
		if s.Stderr != nil {
			verbsdev.WarnMemlock(s.Stderr)
		}
	}
	devs, err := verbsdev.Lister{FS: fs, Stderr: s.Stderr}.List()
	if err != nil {
		return nil, fmt.Errorf("list verbs devices: %w", err)
	}
	out := make([]DeviceID, len(devs))
	for i, d := range devs {
		out[i] = DeviceID{Name: d.Name, Transport: d.Transport, Path: d.IBDevPath}
	}
	return out, nil
}

// Query implements Source; see SysfsSource.
func (s SysfsSource) Query(dev DeviceID) (*Model, error) {
	return nil, &QueryError{Stage: StageOpen, Err: fmt.Errorf("open %s: %w", dev.Name, ErrNoQueryBackend)}
}

// ReadBoardID reads <devPath>/board_id the way ibv_devinfo does (one read of
// up to 256 bytes, trailing newline dropped); "" means no board_id line.
func ReadBoardID(devPath string) string {
	s, err := verbsdev.ReadFile(devPath+"/board_id", 256)
	if err != nil {
		return ""
	}
	return s
}
