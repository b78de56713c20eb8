// Package getopt reproduces GNU getopt_long (glibc 2.36) as the rdma-core
// tools use it: short option clusters, required and optional arguments, long
// options with "=value" or a separate argument, unique-prefix abbreviation,
// argument permutation, "--", and the exact diagnostics glibc prints
// ("prog: invalid option -- 'x'", "prog: option '--ib' is ambiguous;
// possibilities: '--ib-dev' '--ib-port'", ...).
//
// Options are returned one at a time, as getopt_long does, because the C tools
// act on some options immediately (ibv_devinfo -l prints the list and exits
// before later options are even looked at) and diagnostics for later options
// must then not appear.
package getopt

import (
	"fmt"
	"io"
	"iter"
	"strings"
)

// HasArg says whether a long option takes an argument (struct option.has_arg).
type HasArg int

// Values of HasArg.
const (
	NoArgument HasArg = iota
	RequiredArgument
	OptionalArgument
)

// LongOption is one entry of the long option table (struct option with
// flag == NULL).
type LongOption struct {
	Name   string
	HasArg HasArg
	Val    byte
}

// Option is one result of Next.
type Option struct {
	// Val is the option character, '?' for an error (already reported), or
	// ':' for a missing argument when the option string starts with ':'.
	Val byte
	// Arg is optarg; HasArg says whether optarg was set.
	Arg    string
	HasArg bool
	// Opt is optopt: the offending character for short option errors.
	Opt byte
}

// Parser walks one argument vector. The zero value is not usable; use New.
type Parser struct {
	prog      string
	args      []string
	shortopts string
	long      []LongOption
	stderr    io.Writer
	posix     bool
	colon     bool

	ind      int    // next args index to look at
	nextchar string // rest of the current short option cluster
	operands []string
	done     bool
}

// New returns a parser for args (the argument vector without the program
// name). prog is argv[0] as the diagnostics print it. Diagnostics go to
// stderr. A shortopts starting with '+', or posix set (POSIXLY_CORRECT in the
// environment), stops at the first non-option as POSIX requires; otherwise
// non-options are permuted to the end like glibc does.
func New(prog string, args []string, shortopts string, long []LongOption, stderr io.Writer, posix bool) *Parser {
	p := &Parser{prog: prog, args: args, long: long, stderr: stderr, posix: posix}
	switch {
	case strings.HasPrefix(shortopts, "+"):
		p.posix = true
		shortopts = shortopts[1:]
	case strings.HasPrefix(shortopts, "-"):
		// RETURN_IN_ORDER is not used by the tools; treat as permute.
		shortopts = shortopts[1:]
	}
	if strings.HasPrefix(shortopts, ":") {
		p.colon = true
	}
	p.shortopts = shortopts
	return p
}

// Operands returns the non-option arguments in the order getopt leaves them
// in argv[optind:] once Next has returned false.
func (p *Parser) Operands() []string { return p.operands }

// All ranges over the options Next returns, until it returns false (breaking out of the loop leaves the rest
// unparsed, as a loop over Next does).
func (p *Parser) All() iter.Seq[Option] {
	return func(yield func(Option) bool) {
		for {
			o, ok := p.Next()
			if !ok || !yield(o) {
				return
			}
		}
	}
}

// Next returns the next option, or false when options are exhausted.
func (p *Parser) Next() (Option, bool) {
	if p.done {
		return Option{}, false
	}
	if p.nextchar == "" {
		for {
			if p.ind >= len(p.args) {
				p.done = true
				return Option{}, false
			}
			a := p.args[p.ind]
			if a == "--" {
				p.operands = append(p.operands, p.args[p.ind+1:]...)
				p.ind = len(p.args)
				p.done = true
				return Option{}, false
			}
			if len(a) < 2 || a[0] != '-' {
				if p.posix {
					p.operands = append(p.operands, p.args[p.ind:]...)
					p.ind = len(p.args)
					p.done = true
					return Option{}, false
				}
				p.operands = append(p.operands, a)
				p.ind++
				continue
			}
			if strings.HasPrefix(a, "--") {
				p.ind++
				return p.longOption(a[2:]), true
			}
			p.nextchar = a[1:]
			p.ind++
			break
		}
	}
	return p.shortOption(), true
}

func (p *Parser) warnf(format string, args ...any) {
	fmt.Fprintf(p.stderr, "%s: "+format, append([]any{p.prog}, args...)...)
}

func (p *Parser) shortOption() Option {
	c := p.nextchar[0]
	p.nextchar = p.nextchar[1:]
	idx := strings.IndexByte(p.shortopts, c)
	if idx < 0 || c == ':' || c == ';' {
		p.warnf("invalid option -- '%c'\n", c)
		return Option{Val: '?', Opt: c}
	}
	spec := p.shortopts[idx+1:]
	switch {
	case strings.HasPrefix(spec, "::"):
		if p.nextchar != "" {
			arg := p.nextchar
			p.nextchar = ""
			return Option{Val: c, Arg: arg, HasArg: true}
		}
		return Option{Val: c}
	case strings.HasPrefix(spec, ":"):
		if p.nextchar != "" {
			arg := p.nextchar
			p.nextchar = ""
			return Option{Val: c, Arg: arg, HasArg: true}
		}
		if p.ind < len(p.args) {
			arg := p.args[p.ind]
			p.ind++
			return Option{Val: c, Arg: arg, HasArg: true}
		}
		if p.colon {
			return Option{Val: ':', Opt: c}
		}
		p.warnf("option requires an argument -- '%c'\n", c)
		return Option{Val: '?', Opt: c}
	}
	return Option{Val: c}
}

func (p *Parser) longOption(text string) Option {
	name, value, hasValue := strings.Cut(text, "=")
	found := -1
	for i, o := range p.long {
		if o.Name == name {
			found = i
			break
		}
	}
	if found < 0 {
		var ambig []int
		for i, o := range p.long {
			if !strings.HasPrefix(o.Name, name) {
				continue
			}
			if found < 0 {
				found = i
				continue
			}
			f := p.long[found]
			if f.HasArg != o.HasArg || f.Val != o.Val {
				if ambig == nil {
					ambig = append(ambig, found)
				}
				ambig = append(ambig, i)
			}
		}
		if ambig != nil {
			var b strings.Builder
			fmt.Fprintf(&b, "%s: option '--%s' is ambiguous; possibilities:", p.prog, text)
			for _, i := range ambig {
				fmt.Fprintf(&b, " '--%s'", p.long[i].Name)
			}
			b.WriteString("\n")
			io.WriteString(p.stderr, b.String())
			return Option{Val: '?'}
		}
	}
	if found < 0 {
		p.warnf("unrecognized option '--%s'\n", text)
		return Option{Val: '?'}
	}
	o := p.long[found]
	switch {
	case hasValue && o.HasArg == NoArgument:
		p.warnf("option '--%s' doesn't allow an argument\n", o.Name)
		return Option{Val: '?', Opt: o.Val}
	case hasValue:
		return Option{Val: o.Val, Arg: value, HasArg: true}
	case o.HasArg == RequiredArgument:
		if p.ind < len(p.args) {
			arg := p.args[p.ind]
			p.ind++
			return Option{Val: o.Val, Arg: arg, HasArg: true}
		}
		p.warnf("option '--%s' requires an argument\n", o.Name)
		if p.colon {
			return Option{Val: ':', Opt: o.Val}
		}
		return Option{Val: '?', Opt: o.Val}
	}
	return Option{Val: o.Val}
}
