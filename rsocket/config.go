package rsocket

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ConfigDir is where librdmacm reads the process-wide rsockets defaults
// (RS_CONF_DIR of Debian's and rdma-core's default build).
const ConfigDir = "/etc/rdma/rsocket"

// ConfigError is a configuration file LoadConfig could not use: its path and why.
type ConfigError struct {
	Path string
	Err  error
}

func (e *ConfigError) Error() string { return "rsocket config " + e.Path + ": " + e.Err.Error() }

func (e *ConfigError) Unwrap() error { return e.Err }

// configFile is one of librdmacm's files: its name, the largest value its
// fscanf conversion holds, and where the value goes.
type configFile struct {
	name string
	max  uint64
	set  func(o *Options, v uint64)
}

var configFiles = []configFile{
	// polling_time: librdmacm polls while the whole microseconds elapsed are at
	// most the value, so until v+1 µs have passed (0 still polls up to 1 µs).
	{"polling_time", 1<<32 - 1, func(o *Options, v uint64) { o.PollTime = time.Duration(v+1) * time.Microsecond }},
	{"inline_default", 1<<16 - 1, func(o *Options, v uint64) {
		o.InlineSize = -1
		if v > 0 {
			o.InlineSize = int(v)
		}
	}},
	{"sqsize_default", 1<<16 - 1, func(o *Options, v uint64) { o.SQSize = max(int(v), qpMinSize) }},
	{"rqsize_default", 1<<16 - 1, func(o *Options, v uint64) { o.RQSize = max(int(v), qpMinSize) }},
	{"mem_default", 1<<32 - 1, func(o *Options, v uint64) { o.RecvBuffer = max(int(v), 1) }},
	{"wmem_default", 1<<32 - 1, func(o *Options, v uint64) {
		o.SendBuffer = int(v)
		if v < sndLowat {
			o.SendBuffer = sndLowat << 1
		}
	}},
	{"iomap_size", 1<<16 - 1, func(o *Options, v uint64) { o.IOMapSize = int(v) }},
}

// LoadConfig returns the Options librdmacm's defaults files in dir give
// (ConfigDir for the system's): polling_time (µs), inline_default,
// sqsize_default, rqsize_default, mem_default, wmem_default (bytes) and
// iomap_size, each a decimal number, as rsocket(7) describes. A missing
// file leaves its field zero (the built-in default); wake_up_interval
// (rpoll's) has no counterpart here and is not read. A file that cannot be
// read or does not hold a number in range gives a *ConfigError naming it
// (librdmacm ignores such a file silently); the Options of the other files
// are returned with it, all errors joined.
//
// librdmacm applies these files to every rsocket of a process; here they
// apply where the caller passes the result, as goverbs' rstream, riostream
// and rcopy do.
func LoadConfig(dir string) (Options, error) {
	var o Options
	var errs []error
	for _, f := range configFiles {
		p := filepath.Join(dir, f.name)
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			var v uint64
			if v, err = parseConfigValue(b, f.max); err == nil {
				f.set(&o, v)
				continue
			}
		}
		errs = append(errs, &ConfigError{Path: p, Err: err})
	}
	return o, errors.Join(errs...)
}

// parseConfigValue reads the decimal number at the start of b (after
// white space, as fscanf's %u), at most limit.
func parseConfigValue(b []byte, limit uint64) (uint64, error) {
	s := strings.TrimLeft(string(b), " \t\n\v\f\r")
	s = strings.TrimPrefix(s, "+")
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n == 0 {
		return 0, fmt.Errorf("no decimal number at the start (%q): %w", firstLine(s), unix.EINVAL)
	}
	v, err := strconv.ParseUint(s[:n], 10, 64)
	if err != nil || v > limit {
		return 0, fmt.Errorf("%s is out of range (at most %d): %w", s[:n], limit, unix.ERANGE)
	}
	return v, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 32 {
		s = s[:32] + "…"
	}
	return s
}
