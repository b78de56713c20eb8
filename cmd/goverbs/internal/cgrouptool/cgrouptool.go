// Package cgrouptool implements "goverbs cgroup": show, set and remove RDMA
// cgroup limits (rdma.max) and usage (rdma.current), create and delete
// cgroups, and run a command inside a cgroup. It works on cgroup v2 and on a
// cgroup v1 rdma hierarchy.
//
// Usage:
//
//	goverbs cgroup [OPTIONS] show [-d DEV] [CGROUP]
//	goverbs cgroup [OPTIONS] set CGROUP DEV RESOURCE=VALUE...
//	goverbs cgroup [OPTIONS] unset CGROUP DEV
//	goverbs cgroup [OPTIONS] create CGROUP
//	goverbs cgroup [OPTIONS] delete CGROUP
//	goverbs cgroup [OPTIONS] exec CGROUP [--] CMD [ARG...]
//	goverbs cgroup [OPTIONS] where
//
// CGROUP is a path in the hierarchy ("/jobs/a" or "jobs/a") or the cgroup's
// directory below the mount point ("/sys/fs/cgroup/jobs/a"; see
// cgroup.Hierarchy.Resolve); show defaults to the caller's own cgroup. RESOURCE is hca_handle (verbs contexts) or
// hca_object (PDs, CQs, QPs, MRs, SRQs, AHs, MWs, ...); VALUE is a number
// from 0 or "max". set changes only the resources it names; unset sets every
// resource of DEV back to max. create makes missing cgroups and, on v2,
// enables the rdma controller in each ancestor's cgroup.subtree_control.
// exec runs CMD with its objects charged to CGROUP and exits with its status
// (on v2 the child is created directly in the cgroup with CLONE_INTO_CGROUP;
// on v1 goverbs first moves itself there, and the child inherits it).
//
// OPTIONS (also accepted after the subcommand name):
//
//	-j             JSON output (show, where)
//	-p             pretty-print JSON
//	-mount DIR     use the hierarchy mounted at DIR instead of finding it in
//	               /proc/self/mountinfo
//	-version 1|2   cgroup version of -mount (default 2)
//
// Text output of show, one line per device after a header:
//
//	cgroup /jobs/a (v2 /sys/fs/cgroup)
//	dev rxe0 hca_handle 1 hca_handle_max 1 hca_object 3 hca_object_max max
//
// JSON output is an array of flat objects with the same keys plus "cgroup"
// and "version"; an unlimited maximum is the string "max".
//
// Exit status: 0 on success, 1 on failure, 2 on a usage error; exec exits
// with the command's status (128+N if killed by signal N, 127 if it cannot
// be started).
package cgrouptool

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/goverbs/goverbs/cgroup"
)

const usage = `Usage: goverbs cgroup [OPTIONS] COMMAND ...
  show [-d DEV] [CGROUP]                 limits and usage per device (default: own cgroup)
  set CGROUP DEV RESOURCE=VALUE...       set limits (RESOURCE hca_handle|hca_object, VALUE N|max)
  unset CGROUP DEV                       set every limit of DEV back to max
  create CGROUP                          create CGROUP (v2: enable rdma in its ancestors)
  delete CGROUP                          remove an empty CGROUP
  exec CGROUP [--] CMD [ARG...]          run CMD inside CGROUP
  where                                  print the hierarchy that carries the rdma controller
OPTIONS: -j (JSON) -p (pretty JSON) -mount DIR -version 1|2
`

// options are the flags every subcommand takes.
type options struct {
	json    bool
	pretty  bool
	mount   string
	version int
	device  string // show -d
}

func (o *options) register(fs *flag.FlagSet, withDevice bool) {
	fs.BoolVar(&o.json, "j", o.json, "JSON output")
	fs.BoolVar(&o.pretty, "p", o.pretty, "pretty-print JSON")
	fs.StringVar(&o.mount, "mount", o.mount, "hierarchy mount point (default: find it)")
	fs.IntVar(&o.version, "version", o.version, "cgroup version of -mount")
	if withDevice {
		fs.StringVar(&o.device, "d", o.device, "show only this device")
	}
}

// errUsage marks errors that exit with status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// Main runs "goverbs cgroup" with args, the arguments after the tool name, and
// returns the exit status. prog is unused: the messages always say
// "goverbs cgroup".
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	t := &tool{stdout: stdout, stderr: stderr, opts: options{version: 2}}
	status, err := t.run(args)
	if err != nil {
		fmt.Fprintf(stderr, "goverbs cgroup: %v\n", err)
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprint(stderr, usage)
			return 2
		}
		if status == 0 {
			status = 1
		}
	}
	return status
}

type tool struct {
	stdout, stderr io.Writer
	opts           options
}

func (t *tool) parse(name string, args []string, withDevice bool) ([]string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	t.opts.register(fs, withDevice)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, usagef("help requested")
		}
		return nil, usagef("%v", err)
	}
	return fs.Args(), nil
}

// parseN is parse for a command without the device options that takes exactly n operands; usage is the
// message when it gets another number.
func (t *tool) parseN(name string, args []string, n int, usage string) ([]string, error) {
	rest, err := t.parse(name, args, false)
	if err != nil {
		return nil, err
	}
	if len(rest) != n {
		return nil, usagef("%s", usage)
	}
	return rest, nil
}

func (t *tool) run(args []string) (int, error) {
	rest, err := t.parse("cgroup", args, false)
	if err != nil {
		return 0, err
	}
	if len(rest) == 0 {
		return 0, usagef("missing command")
	}
	cmd, rest := rest[0], rest[1:]
	switch cmd {
	case "show", "list", "ls":
		return 0, t.show(rest)
	case "set":
		return 0, t.set(rest)
	case "unset":
		return 0, t.unset(rest)
	case "create":
		return 0, t.create(rest)
	case "delete", "del":
		return 0, t.delete(rest)
	case "exec":
		return t.exec(rest)
	case "where":
		return 0, t.where(rest)
	case "help", "-h", "--help":
		fmt.Fprint(t.stdout, usage)
		return 0, nil
	}
	return 0, usagef("unknown command %q", cmd)
}

func (t *tool) hierarchy() (*cgroup.Hierarchy, error) {
	if t.opts.mount == "" {
		return cgroup.Find()
	}
	switch t.opts.version {
	case 1:
		return cgroup.NewHierarchy(cgroup.V1, t.opts.mount), nil
	case 2:
		return cgroup.NewHierarchy(cgroup.V2, t.opts.mount), nil
	}
	return nil, usagef("-version must be 1 or 2, not %d", t.opts.version)
}

// open resolves a CGROUP argument; "" means the caller's cgroup.
func (t *tool) open(path string) (*cgroup.Cgroup, error) {
	h, err := t.hierarchy()
	if err != nil {
		return nil, err
	}
	if path == "" {
		return h.CgroupOf(os.Getpid())
	}
	cp, err := h.Resolve(path)
	if err != nil {
		return nil, err
	}
	return h.Cgroup(cp)
}

// row is one device of show.
type row struct {
	dev     string
	current []cgroup.ResourceValue
	max     []cgroup.ResourceValue
}

func fields(handle, object cgroup.Value, other []cgroup.ResourceValue) []cgroup.ResourceValue {
	return append([]cgroup.ResourceValue{{Resource: cgroup.HCAHandle, Value: handle}, {Resource: cgroup.HCAObject, Value: object}}, other...)
}

func (t *tool) show(args []string) error {
	rest, err := t.parse("show", args, true)
	if err != nil {
		return err
	}
	if len(rest) > 1 {
		return usagef("show takes at most one CGROUP")
	}
	path := ""
	if len(rest) == 1 {
		path = rest[0]
	}
	c, err := t.open(path)
	if err != nil {
		return err
	}
	limits, err := c.Limits()
	if err != nil {
		return err
	}
	usage, err := c.Usage()
	if err != nil {
		return err
	}
	var rows []row
	index := map[string]int{}
	for _, l := range limits {
		index[l.Device] = len(rows)
		rows = append(rows, row{dev: l.Device, max: fields(l.HCAHandle, l.HCAObject, l.Other)})
	}
	for _, u := range usage {
		i, ok := index[u.Device]
		if !ok { // a device registered between the two reads
			i = len(rows)
			index[u.Device] = i
			rows = append(rows, row{dev: u.Device})
		}
		rows[i].current = fields(u.HCAHandle, u.HCAObject, u.Other)
	}
	if t.opts.device != "" {
		i, ok := index[t.opts.device]
		if !ok {
			return fmt.Errorf("show %s: device %s: %w", c.Path(), t.opts.device, syscall.ENODEV)
		}
		rows = rows[i : i+1]
	}
	h := c.Hierarchy()
	if t.opts.json || t.opts.pretty {
		out := make([]map[string]any, 0, len(rows))
		for _, r := range rows {
			m := map[string]any{"cgroup": c.Path(), "version": int(h.Version), "dev": r.dev}
			for _, rv := range r.current {
				m[string(rv.Resource)] = rv.Value
			}
			for _, rv := range r.max {
				m[string(rv.Resource)+"_max"] = rv.Value
			}
			out = append(out, m)
		}
		return t.writeJSON(out)
	}
	fmt.Fprintf(t.stdout, "cgroup %s (%v %s)\n", c.Path(), h.Version, h.Mountpoint)
	for _, r := range rows {
		var b strings.Builder
		b.WriteString("dev " + r.dev)
		// Interleave current and max per resource, in the kernel's order.
		maxOf := map[cgroup.Resource]cgroup.Value{}
		for _, rv := range r.max {
			maxOf[rv.Resource] = rv.Value
		}
		done := map[cgroup.Resource]bool{}
		for _, rv := range r.current {
			fmt.Fprintf(&b, " %s %v", rv.Resource, rv.Value)
			if m, ok := maxOf[rv.Resource]; ok {
				fmt.Fprintf(&b, " %s_max %v", rv.Resource, m)
			}
			done[rv.Resource] = true
		}
		for _, rv := range r.max {
			if !done[rv.Resource] {
				fmt.Fprintf(&b, " %s_max %v", rv.Resource, rv.Value)
			}
		}
		fmt.Fprintln(t.stdout, b.String())
	}
	return nil
}

func (t *tool) writeJSON(v any) error {
	var b []byte
	var err error
	if t.opts.pretty {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(t.stdout, "%s\n", b)
	return err
}

func (t *tool) set(args []string) error {
	rest, err := t.parse("set", args, false)
	if err != nil {
		return err
	}
	if len(rest) < 3 {
		return usagef("set needs CGROUP DEV RESOURCE=VALUE...")
	}
	var vals []cgroup.ResourceValue
	for _, a := range rest[2:] {
		rv, err := cgroup.ParseResourceValue(a)
		if err != nil {
			return usagef("%v", err)
		}
		vals = append(vals, rv)
	}
	c, err := t.open(rest[0])
	if err != nil {
		return err
	}
	return c.SetLimit(rest[1], vals...)
}

func (t *tool) unset(args []string) error {
	rest, err := t.parseN("unset", args, 2, "unset needs CGROUP DEV")
	if err != nil {
		return err
	}
	c, err := t.open(rest[0])
	if err != nil {
		return err
	}
	return c.RemoveLimit(rest[1])
}

func (t *tool) create(args []string) error {
	rest, err := t.parseN("create", args, 1, "create needs CGROUP")
	if err != nil {
		return err
	}
	h, err := t.hierarchy()
	if err != nil {
		return err
	}
	cp, err := h.Resolve(rest[0])
	if err != nil {
		return err
	}
	_, err = h.Create(cp)
	return err
}

func (t *tool) delete(args []string) error {
	rest, err := t.parseN("delete", args, 1, "delete needs CGROUP")
	if err != nil {
		return err
	}
	c, err := t.open(rest[0])
	if err != nil {
		return err
	}
	return c.Remove()
}

func (t *tool) where(args []string) error {
	if _, err := t.parseN("where", args, 0, "where takes no arguments"); err != nil {
		return err
	}
	c, err := t.open("")
	if err != nil {
		return err
	}
	h := c.Hierarchy()
	if t.opts.json || t.opts.pretty {
		return t.writeJSON(map[string]any{"version": int(h.Version), "mount": h.Mountpoint, "cgroup": c.Path()})
	}
	fmt.Fprintf(t.stdout, "version %d mount %s cgroup %s\n", h.Version, h.Mountpoint, c.Path())
	return nil
}

func (t *tool) exec(args []string) (int, error) {
	// Options end at CGROUP so that the command's own options pass through.
	rest, err := t.parse("exec", args, false)
	if err != nil {
		return 0, err
	}
	if len(rest) > 1 && rest[1] == "--" {
		rest = append(rest[:1:1], rest[2:]...)
	}
	if len(rest) < 2 {
		return 0, usagef("exec needs CGROUP CMD [ARG...]")
	}
	c, err := t.open(rest[0])
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(rest[1], rest[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, t.stdout, t.stderr
	if c.Hierarchy().Version == cgroup.V2 {
		dir, err := os.Open(c.Dir())
		if err != nil {
			return 0, fmt.Errorf("exec in %s: %w", c.Path(), err)
		}
		defer dir.Close()
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(dir.Fd())}
	} else if err := c.AddProcess(os.Getpid()); err != nil {
		return 0, fmt.Errorf("exec in %s: %w", c.Path(), err)
	}
	if err := cmd.Start(); err != nil {
		return 127, fmt.Errorf("exec %s in %s: %w", rest[1], c.Path(), err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	if err != nil {
		return 1, fmt.Errorf("exec %s in %s: %w", rest[1], c.Path(), err)
	}
	return 0, nil
}
