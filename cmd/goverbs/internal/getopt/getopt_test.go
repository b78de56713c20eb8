package getopt

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

var devinfoLong = []LongOption{
	{Name: "ib-dev", HasArg: RequiredArgument, Val: 'd'},
	{Name: "ib-port", HasArg: RequiredArgument, Val: 'i'},
	{Name: "list", HasArg: NoArgument, Val: 'l'},
	{Name: "verbose", HasArg: NoArgument, Val: 'v'},
}

// format is an option as run shows it: "c" or "c=arg", and the option text after '?' and ':'.
func format(o Option) string {
	s := string(o.Val)
	if o.HasArg {
		s += "=" + o.Arg
	}
	if o.Val == '?' || o.Val == ':' {
		s += fmt.Sprintf("(%q)", o.Opt)
	}
	return s
}

// run collects every option as "c" or "c=arg", then "|" and the operands.
func run(args []string, shortopts string, long []LongOption, posix bool) (string, string) {
	var errb bytes.Buffer
	p := New("prog", args, shortopts, long, &errb, posix)
	var out []string
	for {
		o, ok := p.Next()
		if !ok {
			break
		}
		out = append(out, format(o))
	}
	return strings.Join(out, " ") + " | " + strings.Join(p.Operands(), " "), errb.String()
}

func TestParse(t *testing.T) {
	tests := []struct {
		args      []string
		shortopts string
		posix     bool
		want      string
		stderr    string
	}{
		{[]string{"-v", "-l"}, "d:i:lv", false, "v l | ", ""},
		{[]string{"-vl"}, "d:i:lv", false, "v l | ", ""},
		{[]string{"-drxe0", "-i", "1"}, "d:i:lv", false, "d=rxe0 i=1 | ", ""},
		{[]string{"-d", "-v"}, "d:i:lv", false, "d=-v | ", ""},
		{[]string{"a", "-v", "b", "--", "-l", "c"}, "d:i:lv", false, "v | a b -l c", ""},
		{[]string{"a", "-v"}, "d:i:lv", true, " | a -v", ""},
		{[]string{"a", "-v"}, "+d:i:lv", false, " | a -v", ""},
		{[]string{"-", "-v"}, "d:i:lv", false, "v | -", ""},
		{[]string{"-x"}, "d:i:lv", false, "?('x') | ", "prog: invalid option -- 'x'\n"},
		{[]string{"-:"}, "d:i:lv", false, "?(':') | ", "prog: invalid option -- ':'\n"},
		{[]string{"-d"}, "d:i:lv", false, "?('d') | ", "prog: option requires an argument -- 'd'\n"},
		{[]string{"-d"}, ":d:i:lv", false, ":('d') | ", ""},
		{[]string{"-ofoo", "-o"}, "o::", false, "o=foo o | ", ""},
		{[]string{"--ib-dev=rxe0", "--ib-port", "2"}, "d:i:lv", false, "d=rxe0 i=2 | ", ""},
		{[]string{"--ib-d", "x", "--verb", "--li"}, "d:i:lv", false, "d=x v l | ", ""},
		{[]string{"--ib-dev="}, "d:i:lv", false, "d= | ", ""},
		{[]string{"--ib"}, "d:i:lv", false, "?('\\x00') | ", "prog: option '--ib' is ambiguous; possibilities: '--ib-dev' '--ib-port'\n"},
		{[]string{"--ib=3"}, "d:i:lv", false, "?('\\x00') | ", "prog: option '--ib=3' is ambiguous; possibilities: '--ib-dev' '--ib-port'\n"},
		{[]string{"--list=3"}, "d:i:lv", false, "?('l') | ", "prog: option '--list' doesn't allow an argument\n"},
		{[]string{"--ib-dev"}, "d:i:lv", false, "?('d') | ", "prog: option '--ib-dev' requires an argument\n"},
		{[]string{"--foo=bar", "x"}, "d:i:lv", false, "?('\\x00') | x", "prog: unrecognized option '--foo=bar'\n"},
	}
	for _, tt := range tests {
		got, stderr := run(tt.args, tt.shortopts, devinfoLong, tt.posix)
		if got != tt.want || stderr != tt.stderr {
			t.Errorf("%q %q: got %q stderr %q; want %q stderr %q", tt.args, tt.shortopts, got, stderr, tt.want, tt.stderr)
		}
	}
}

// Prefixes shared by options that do the same thing are not ambiguous.
func TestSameMeaningPrefix(t *testing.T) {
	long := []LongOption{{Name: "verbose", Val: 'v'}, {Name: "verb", Val: 'v'}, {Name: "version", Val: 'V'}}
	got, stderr := run([]string{"--verbo"}, "vV", long, false)
	if got != "v | " || stderr != "" {
		t.Fatalf("got %q %q", got, stderr)
	}
	got, stderr = run([]string{"--ver"}, "vV", long, false)
	want := "prog: option '--ver' is ambiguous; possibilities: '--verbose' '--version'\n"
	if got != "?('\\x00') | " || stderr != want {
		t.Fatalf("got %q %q", got, stderr)
	}
}

// Options after one the caller stops on produce no diagnostics.
func TestLazy(t *testing.T) {
	var errb bytes.Buffer
	p := New("prog", []string{"-l", "-x"}, "d:i:lv", devinfoLong, &errb, false)
	o, ok := p.Next()
	if !ok || o.Val != 'l' || errb.Len() != 0 {
		t.Fatalf("got %v %v %q", o, ok, errb.String())
	}
}

func FuzzParse(f *testing.F) {
	f.Add("-vl\x00--ib-dev=x\x00a\x00--\x00-b", "d:i:lv")
	f.Add("--ib\x00-d", ":d:i::lv")
	f.Fuzz(func(t *testing.T, argv string, shortopts string) {
		args := strings.Split(argv, "\x00")
		var errb bytes.Buffer
		p := New("prog", args, shortopts, devinfoLong, &errb, false)
		n := 0
		for {
			_, ok := p.Next()
			if !ok {
				break
			}
			n++
			if n > 2*len(argv)+2 {
				t.Fatalf("no progress on %q", args)
			}
		}
		if len(p.Operands()) > len(args) {
			t.Fatalf("more operands than args")
		}
		if _, ok := p.Next(); ok {
			t.Fatalf("Next after end returned an option")
		}
	})
}

// All yields what a loop over Next does, and a break leaves the rest unparsed (no diagnostic for -x).
func TestAll(t *testing.T) {
	args := []string{"-vl", "a", "--ib-dev=x", "-y", "--", "-b"}
	want, wantErr := run(args, "d:i:lv", devinfoLong, false)
	var errb bytes.Buffer
	p := New("prog", args, "d:i:lv", devinfoLong, &errb, false)
	var out []string
	for o := range p.All() {
		out = append(out, format(o))
	}
	if got := strings.Join(out, " ") + " | " + strings.Join(p.Operands(), " "); got != want || errb.String() != wantErr {
		t.Errorf("All: %q %q, Next: %q %q", got, errb.String(), want, wantErr)
	}
	errb.Reset()
	p = New("prog", []string{"-l", "-x"}, "d:i:lv", devinfoLong, &errb, false)
	for o := range p.All() {
		if o.Val != 'l' {
			t.Errorf("first option %q", o.Val)
		}
		break
	}
	if errb.Len() != 0 {
		t.Errorf("break parsed on: %q", errb.String())
	}
}
