package rdmatool

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
)

// Attribute types the formatters test for presence.
const (
	attrPortIndex = abi.RDMA_NLDEV_ATTR_PORT_INDEX
)

// command is one entry of a command table; the first entry of a table is
// the default, run when no argument is left.
type command struct {
	name string
	fn   func() int
}

// strcmpx is iproute2's abbreviation match: arg matches word when arg is a
// prefix of word (so "res" matches "resource", and "" matches anything).
func strcmpx(arg, word string) bool {
	return len(arg) <= len(word) && word[:len(arg)] == arg
}

func (t *tool) noArg() bool { return len(t.args) == 0 }

func (t *tool) arg() string {
	if t.noArg() {
		return ""
	}
	return t.args[0]
}

func (t *tool) argInc() {
	if !t.noArg() {
		t.args = t.args[1:]
	}
}

func (t *tool) argMatch(word string) bool { return !t.noArg() && strcmpx(t.arg(), word) }

// execCmd runs the first command whose name the next argument abbreviates.
// An unknown word is reported and, as in iproute2, is not a failure.
func (t *tool) execCmd(cmds []command, what string) int {
	if t.noArg() {
		return cmds[0].fn()
	}
	for _, c := range cmds[1:] {
		if t.argMatch(c.name) {
			t.argInc()
			return c.fn()
		}
	}
	t.errf("Unknown %s '%s'.\n", what, t.arg())
	return 0
}

func (t *tool) lookupDev(name string) *devMap {
	for i := range t.devs {
		if t.devs[i].name == name {
			return &t.devs[i]
		}
	}
	return nil
}

// devMapLookup finds the device named by the next argument; with
// allowPort, a "/PORT" suffix is ignored.
func (t *tool) devMapLookup(allowPort bool) *devMap {
	if t.noArg() {
		return nil
	}
	name := t.arg()
	if allowPort {
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[:i]
		}
	}
	return t.lookupDev(name)
}

// atoi is C's atoi: leading digits only, 0 when there are none.
func atoi(s string) uint32 {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	v, _ := strconv.ParseUint(s[:n], 10, 32)
	return uint32(v)
}

// portFromArg parses "DEV[/[PORT|-]]" as iproute2's get_port_from_argv:
// it returns the port (0: none), whether all ports are to be walked, and
// whether the argument is invalid.
func portFromArg(arg string, strict bool) (port uint32, dumpAll bool, bad bool) {
	dumpAll = !strict
	if i := strings.IndexByte(arg, '/'); i >= 0 {
		rest := arg[i+1:]
		if strings.HasPrefix(rest, "-") {
			if strict {
				return 0, dumpAll, true
			}
			return 0, false, false
		}
		if rest != "" && rest[0] >= '0' && rest[0] <= '9' {
			dumpAll = false
			port = atoi(rest)
		}
		if port == 0 && rest != "" {
			return 0, dumpAll, true
		}
	}
	if strict && port == 0 {
		return 0, dumpAll, true
	}
	return port, dumpAll, false
}

// execLink runs cb for every (device, port) pair, or for the ones the next
// argument names (rd_exec_link). Port 0 is visited first unless strict.
func (t *tool) execLink(cb func() int, strict bool) int {
	t.p.newJSONObj()
	defer t.p.deleteJSONObj()
	first := uint32(0)
	if strict {
		first = 1
	}
	if t.noArg() {
		for _, d := range t.devs {
			t.devIdx = d.idx
			for port := first; port < d.numPorts+1; port++ {
				t.portIdx = port
				if ret := cb(); ret != 0 {
					return ret
				}
			}
		}
		return 0
	}
	d := t.devMapLookup(true)
	port, dumpAll, bad := portFromArg(t.arg(), strict)
	if d == nil || port > d.numPorts || (port == 0 && bad) {
		t.errf("Wrong device name\n")
		return -int(unix.ENOENT)
	}
	t.argInc()
	t.devIdx = d.idx
	for t.portIdx = port; t.portIdx < d.numPorts+1; t.portIdx++ {
		if ret := cb(); ret != 0 {
			return ret
		}
		if !dumpAll {
			break
		}
	}
	return 0
}

// execDev runs cb for every device, or for the one the next argument names
// (rd_exec_dev).
func (t *tool) execDev(cb func() int) int {
	t.p.newJSONObj()
	defer t.p.deleteJSONObj()
	if t.noArg() {
		for _, d := range t.devs {
			t.devIdx = d.idx
			if ret := cb(); ret != 0 {
				return ret
			}
		}
		return 0
	}
	d := t.devMapLookup(false)
	if d == nil {
		t.errf("Wrong device name - %s\n", t.arg())
		return -int(unix.ENOENT)
	}
	t.argInc()
	t.devIdx = d.idx
	return cb()
}

// execRequireDev is execDev for commands that need a device name.
func (t *tool) execRequireDev(cb func() int) int {
	if t.noArg() {
		return t.einvalf("Please provide device name.\n")
	}
	return t.execDev(cb)
}

// execDelete runs del on the device named by the last argument ("dev
// delete NAME", "link delete NAME"); more arguments are an error.
func (t *tool) execDelete(del func(devIndex uint32) error) int {
	return t.execRequireDev(func() int {
		if !t.noArg() {
			return t.einvalf("Unknown parameter %s\n", t.arg())
		}
		return t.nlResult(del(t.devIdx))
	})
}

// filterSpec is one filter a command accepts.
type filterSpec struct {
	name     string
	isNumber bool
	isDoit   bool
}

// filter is one "KEY VALUE" filter given on the command line.
type filter struct {
	key, value string
	isDoit     bool
}

const filterNumberChars = "1234567890,-"

// buildFilters consumes the remaining arguments as KEY VALUE pairs
// (rd_build_filter). Keys may abbreviate filter names.
func (t *tool) buildFilters(valid []filterSpec) int {
	if valid == nil || t.noArg() {
		return 0
	}
	if len(t.args) == 1 {
		return t.einvalf("No filter data was supplied to filter option %s\n", t.arg())
	}
	if len(t.args)%2 != 0 {
		return t.einvalf("There is filter option without data\n")
	}
	for i := 0; i < len(t.args); i += 2 {
		key, value := t.args[i], t.args[i+1]
		var spec *filterSpec
		for j := range valid {
			if strcmpx(key, valid[j].name) {
				spec = &valid[j]
				break
			}
		}
		if spec == nil {
			return t.einvalf("Unsupported filter option: %s\n", key)
		}
		if spec.isNumber && !onlyChars(value, filterNumberChars) {
			return t.einvalf("%s filter accepts \"%s\" characters only\n", key, filterNumberChars)
		}
		f := filter{key: key, value: strings.ToLower(value)}
		if spec.isDoit {
			if _, ok := strtolWhole(value); ok {
				f.isDoit = true
			}
		}
		t.filters = append(t.filters, f)
	}
	return 0
}

func onlyChars(s, set string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(set, s[i]) < 0 {
			return false
		}
	}
	return true
}

// strtolWhole reports whether s is entirely a base-10 long, as the doit
// check does with strtol.
func strtolWhole(s string) (int64, bool) {
	ts := strings.TrimLeft(s, " \t\n\v\f\r")
	v, err := strconv.ParseInt(ts, 10, 64)
	return v, err == nil
}

// doitIndex returns the value of the first filter that can be served by a
// single-object request (rd_doit_index).
func (t *tool) doitIndex() (uint32, bool) {
	for _, f := range t.filters {
		if f.isDoit {
			v, _ := strtolWhole(f.value)
			return uint32(v), true
		}
	}
	return 0, false
}

func (t *tool) keyExists(key string) bool {
	for _, f := range t.filters {
		if strcmpx(f.key, key) {
			return true
		}
	}
	return false
}

// filtered reports whether a numeric attribute filters the entry out
// (rd_is_filtered_attr): an absent attribute is filtered out when the user
// filters on it; a present one when its value is not in the list of
// numbers and ranges given.
func (t *tool) filtered(key string, val uint32, present bool) bool {
	if !present {
		return t.keyExists(key)
	}
	for _, f := range t.filters {
		if !strcmpx(f.key, key) {
			continue
		}
		p := f.value
		var left, cur uint32
		rangeCheck := false
		for len(p) > 0 {
			if p[0] >= '0' && p[0] <= '9' {
				n := 0
				for n < len(p) && p[n] >= '0' && p[n] <= '9' {
					n++
				}
				v, _ := strconv.ParseInt(p[:n], 10, 64)
				cur = uint32(v)
				p = p[n:]
				if cur == val || (rangeCheck && left < val && val < cur) {
					return false
				}
				rangeCheck = false
			} else {
				if p[0] == '-' {
					left = cur
					rangeCheck = true
				}
				p = p[1:]
			}
		}
		return true
	}
	return false
}

// strFiltered reports whether a string attribute filters the entry out
// (rd_is_string_filtered_attr). As in iproute2 (6.1 to 7.3), presence is not
// considered: an absent attribute is matched by its default name.
func (t *tool) strFiltered(key, val string) bool {
	for _, f := range t.filters {
		if !strcmpx(f.key, key) {
			continue
		}
		for _, s := range strings.Split(f.value, ",") {
			if s != "" && strings.EqualFold(s, val) {
				return false
			}
		}
		return true
	}
	return false
}

// setArgToDevname skips to the argument after "dev" or "link"
// (rd_set_arg_to_devname).
func (t *tool) setArgToDevname() int {
	for !t.noArg() {
		if t.argMatch("dev") || t.argMatch("link") {
			t.argInc()
			if t.noArg() {
				return t.einvalf("No device name was supplied\n")
			}
			return 0
		}
		t.argInc()
	}
	return 0
}

func (t *tool) devName(idx uint32) string {
	for _, d := range t.devs {
		if d.idx == idx {
			return d.name
		}
	}
	return fmt.Sprint(idx)
}
