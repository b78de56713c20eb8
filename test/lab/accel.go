package lab

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// KVM ioctls (linux/kvm.h: _IO(KVMIO=0xAE, nr)).
const (
	kvmGetAPIVersion = 0xAE00
	kvmCreateVM      = 0xAE01
	kvmAPIVersion    = 12
)

// chooseAccel returns "kvm" when KVM can run guests, else "tcg" and why
// not. GOVERBS_LAB_ACCEL=kvm or =tcg forces the choice.
func chooseAccel() (accel string, whyNotKVM, err error) {
	switch v := os.Getenv("GOVERBS_LAB_ACCEL"); v {
	case "kvm", "tcg":
		return v, nil, nil
	case "":
	default:
		return "", nil, fmt.Errorf("lab: GOVERBS_LAB_ACCEL=%q: want kvm or tcg", v)
	}
	if err := probeKVM(); err != nil {
		return "tcg", err, nil
	}
	return "kvm", nil, nil
}

// probeKVM checks that /dev/kvm opens read-write, answers with the stable
// API version, can create a VM, and that the CPU has hardware
// virtualization (vmx or svm). A /dev/kvm without the CPU flags exists in
// some nested setups where guests then hang instead of booting.
func probeKVM() error {
	fd, err := unix.Open("/dev/kvm", unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev/kvm: %w", err)
	}
	defer unix.Close(fd)
	v, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), kvmGetAPIVersion, 0)
	if errno != 0 {
		return fmt.Errorf("KVM_GET_API_VERSION: %w", errno)
	}
	if v != kvmAPIVersion {
		return fmt.Errorf("KVM API version %d, want %d", v, kvmAPIVersion)
	}
	vm, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), kvmCreateVM, 0)
	if errno != 0 {
		return fmt.Errorf("KVM_CREATE_VM: %w", errno)
	}
	unix.Close(int(vm))
	ok, err := cpuHasVirt("/proc/cpuinfo")
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("/dev/kvm exists but the CPU shows no vmx or svm flag (nested virtualization is off)")
	}
	return nil
}

// cpuHasVirt reports whether the first CPU's flags include vmx or svm.
func cpuHasVirt(cpuinfo string) (bool, error) {
	f, err := os.Open(cpuinfo)
	if err != nil {
		return false, fmt.Errorf("read CPU flags: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "flags" {
			continue
		}
		for _, fl := range strings.Fields(v) {
			if fl == "vmx" || fl == "svm" {
				return true, nil
			}
		}
		return false, nil
	}
	return false, sc.Err()
}
