package umad

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ABI is the user MAD ABI version this package speaks
// (IB_USER_MAD_ABI_VERSION).
const ABI = 5

// Device is one umad character device: the MAD interface of one RDMA port.
type Device struct {
	Name   string // "umad0"
	Index  int    // 0 for umad0
	IBDev  string // the RDMA device, e.g. "rxe0"
	Port   int    // the port number on IBDev
	Path   string // "/dev/infiniband/umad0"
	IssmOK bool   // /dev/infiniband/issmN exists
}

// Root is where the package looks for sysfs and device nodes; tests point
// it at a fake tree.
type Root struct {
	Sys string // "/sys" when empty
	Dev string // "/dev" when empty
}

func (r Root) sys(p string) string {
	if r.Sys == "" {
		return filepath.Join("/sys", p)
	}
	return filepath.Join(r.Sys, p)
}

func (r Root) dev(p string) string {
	if r.Dev == "" {
		return filepath.Join("/dev", p)
	}
	return filepath.Join(r.Dev, p)
}

func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// ABIVersion reads /sys/class/infiniband_mad/abi_version. Without ib_umad
// the error matches ErrNoDevice and the errno (ENOENT).
func (r Root) ABIVersion() (int, error) {
	s, err := readTrim(r.sys("class/infiniband_mad/abi_version"))
	if err != nil {
		return 0, &Error{Op: "read abi_version", Kind: ErrNoDevice, Err: unwrapPathErr(err)}
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, &Error{Op: "read abi_version", Kind: ErrMalformed, Err: fmt.Errorf("%q", s)}
	}
	return v, nil
}

// ABIVersion is Root{}.ABIVersion.
func ABIVersion() (int, error) { return Root{}.ABIVersion() }

// Devices lists the umad devices in index order.
func (r Root) Devices() ([]Device, error) {
	dir := r.sys("class/infiniband_mad")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, &Error{Op: "list", Kind: ErrNoDevice, Err: unwrapPathErr(err)}
	}
	var out []Device
	for _, e := range ents {
		n := e.Name()
		idx, ok := strings.CutPrefix(n, "umad")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 {
			continue
		}
		ibdev, err1 := readTrim(filepath.Join(dir, n, "ibdev"))
		ps, err2 := readTrim(filepath.Join(dir, n, "port"))
		port, err3 := strconv.Atoi(ps)
		if err1 != nil || err2 != nil || err3 != nil {
			continue // a device going away under us
		}
		d := Device{Name: n, Index: i, IBDev: ibdev, Port: port, Path: r.dev("infiniband/" + n)}
		if _, err := os.Stat(r.dev("infiniband/issm" + idx)); err == nil {
			d.IssmOK = true
		}
		out = append(out, d)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Index < out[b].Index })
	return out, nil
}

// Devices is Root{}.Devices.
func Devices() ([]Device, error) { return Root{}.Devices() }

// Lookup finds the umad device of port on ibdev.
func (r Root) Lookup(ibdev string, port int) (Device, error) {
	devs, err := r.Devices()
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Device = fmt.Sprintf("%s:%d", ibdev, port)
		}
		return Device{}, err
	}
	for _, d := range devs {
		if d.IBDev == ibdev && d.Port == port {
			return d, nil
		}
	}
	return Device{}, &Error{Op: "lookup", Device: fmt.Sprintf("%s:%d", ibdev, port), Kind: ErrNoDevice}
}

// Lookup is Root{}.Lookup.
func Lookup(ibdev string, port int) (Device, error) { return Root{}.Lookup(ibdev, port) }

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
