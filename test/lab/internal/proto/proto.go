// Package proto is the contract between the lab's host side (package lab)
// and its guest init program (package labinit): the names of the QEMU
// devices, the files in the initramfs, the per-run configuration and the
// events the guest reports back.
package proto

import (
	"encoding/json"
	"fmt"
)

// 9p mount tags and virtio-serial port names.
const (
	TagHostRoot = "hostroot"    // the host's "/", read-only
	TagControl  = "goverbs.ctl" // per-run directory: config.json in, results out

	PortStdout = "goverbs.stdout" // the command's standard output, byte exact
	PortStderr = "goverbs.stderr" // the command's standard error, byte exact
	PortEvents = "goverbs.events" // JSON lines of Event from the guest
)

// Files inside the initramfs.
const (
	ModulesDir   = "lab/modules"       // NN-name.ko images
	ModulesOrder = "lab/modules.order" // module file names, one per line, in load order
)

// ConfigFile is the name of the per-run configuration in the control share.
const ConfigFile = "config.json"

// Guest paths.
const (
	// GuestRoot is where init mounts the host root before chrooting into it.
	GuestRoot = "/host"
	// GuestControl is where the control share is mounted (in the initramfs).
	GuestControl = "/lab/ctl"
	// GuestOut is where the results directory (Config.OutDir) appears to the
	// command, also given to it as $GOVERBS_LAB_OUT.
	GuestOut = "/run/goverbs-lab/out"
)

// Network set up in the guest.
const (
	Netdev     = "veth0"
	PeerNetdev = "veth1"
	Addr       = "10.233.0.1/24"
	PeerAddr   = "10.233.0.2/24"
	RXEDevice  = "rxe0"
	SIWDevice  = "siw0" // the soft-iWARP device, with Config.Provider ProviderSIW
)

// ProviderSIW is Config.Provider's value for a soft-iWARP lab (siw0 on
// veth0, from an out-of-tree siw.ko in the initramfs); "" is rxe's rxe0.
const ProviderSIW = "siw"

// Share is one extra host directory mounted in the guest.
type Share struct {
	Tag      string // 9p mount tag
	Path     string // mount point inside the guest's root (an absolute path)
	Writable bool
}

// Config is the per-run configuration the host writes to the control share.
type Config struct {
	Argv   []string // the command; Argv[0] is looked up in the PATH of Env
	Env    []string // KEY=VALUE, the command's whole environment
	Dir    string   // working directory inside the guest root
	NoRXE  bool     // skip creating the lab's device (rxe0, or siw0 with Provider "siw")
	Shares []Share  // extra shares, mounted in order
	Debug  bool     // log each setup step on the console
	// MergeStderr sends the command's stderr to the stdout port, keeping
	// the order of writes to both (when the caller's two are one file).
	MergeStderr bool
	// Provider is "" for rxe0 (rdma_rxe) or ProviderSIW for siw0 (siw).
	Provider string `json:",omitempty"`
}

// Event kinds.
const (
	EventStart      = "start"       // setup done, command starting
	EventExit       = "exit"        // command finished; Code is its status
	EventSetupError = "setup-error" // setup failed at Step with Error
)

// SetupFailedCode is the exit code Run reports when the guest could not set
// up the command's environment.
const SetupFailedCode = 125

// Event is one line on the events port.
type Event struct {
	Kind  string `json:"kind"`
	Code  int    `json:"code,omitempty"`
	Step  string `json:"step,omitempty"`
	Error string `json:"error,omitempty"`
	// UptimeNs is the guest's CLOCK_BOOTTIME when the event was sent.
	UptimeNs int64 `json:"uptime_ns,omitempty"`
}

// MarshalLine encodes e as one JSON line.
func (e Event) MarshalLine() []byte {
	b, err := json.Marshal(e)
	if err != nil {
		panic(fmt.Sprintf("proto: marshal event: %v", err)) // cannot happen: plain struct
	}
	return append(b, '\n')
}

// ParseEvent decodes one line of the events port.
func ParseEvent(line []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(line, &e); err != nil {
		return Event{}, fmt.Errorf("parse lab event %q: %w", line, err)
	}
	switch e.Kind {
	case EventStart, EventExit, EventSetupError:
	default:
		return Event{}, fmt.Errorf("parse lab event %q: unknown kind %q", line, e.Kind)
	}
	return e, nil
}
