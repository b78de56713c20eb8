package ibstat

import (
	"io"
	"strconv"
	"strings"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/verbsdev"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/verbssrc"
	"github.com/goverbs/goverbs/uverbs"
)

// Verbs is ibstat's libibverbs side. Since rdma-core 65 ibstat opens every
// CA it prints through libibverbs (its open_ibv_ctx: ibv_get_device_list,
// then ibv_open_device of the device of that name) and prints each port's
// effective speed when ibv_query_port_speed answers.
type Verbs interface {
	// Open returns the open context of the device name, or nil when the
	// device list fails, has no such device, or the device does not open.
	// The device list prints libibverbs' warnings as it does.
	Open(name string) VerbsContext
}

// VerbsContext is an open verbs context.
type VerbsContext interface {
	// PortSpeed is ibv_query_port_speed: the effective bandwidth of port
	// in units of 100 Mb/s.
	PortSpeed(port int) (uint64, error)
	Close() error
}

// UverbsVerbs is Verbs on the real system: the device list of package
// verbssrc, contexts of package uverbs.
type UverbsVerbs struct {
	// Stderr receives libibverbs' warning about a small RLIMIT_MEMLOCK
	// (printed by the first listing only, as libibverbs initializes once);
	// may be nil.
	Stderr io.Writer
	inited bool
}

// Open implements Verbs.
func (v *UverbsVerbs) Open(name string) VerbsContext {
	var warn io.Writer
	if !v.inited {
		warn = v.Stderr
	}
	devs, err := verbssrc.List(warn)
	if err != nil {
		return nil
	}
	v.inited = true
	for _, d := range devs {
		if d.Name != name {
			continue
		}
		ctx, err := d.Open()
		if err != nil {
			return nil
		}
		return uverbsContext{ctx}
	}
	return nil
}

type uverbsContext struct{ ctx *uverbs.Context }

func (c uverbsContext) PortSpeed(port int) (uint64, error) { return c.ctx.QueryPortSpeed(port) }
func (c uverbsContext) Close() error                       { return c.ctx.Close() }

// SysfsVerbs is Verbs over a fake tree: libibverbs' sysfs scan (package
// verbsdev, with its warnings) whose devices, having no kernel behind them,
// never open.
type SysfsVerbs struct {
	FS     sysfs.FS
	Stderr io.Writer // libibverbs' warnings; may be nil
	inited bool
}

// Open implements Verbs.
func (v *SysfsVerbs) Open(name string) VerbsContext {
	l := verbsdev.Lister{FS: v.FS}
	if !v.inited {
		l.Stderr = v.Stderr
	}
	if _, err := l.List(); err == nil {
		v.inited = true
	}
	return nil
}

// formatG is C's printf("%g", v): six significant digits, in %e style
// when the exponent is below -4 or above 5, without trailing zeros.
func formatG(v float64) string {
	const prec = 6
	mant, exp, _ := strings.Cut(strconv.FormatFloat(v, 'e', prec-1, 64), "e")
	x, _ := strconv.Atoi(exp)
	if x < -4 || x >= prec {
		return trimZeros(mant) + "e" + exp
	}
	return trimZeros(strconv.FormatFloat(v, 'f', prec-1-x, 64))
}

// trimZeros drops a fraction's trailing zeros and then a bare point.
func trimZeros(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}
