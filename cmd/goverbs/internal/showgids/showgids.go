// Package showgids is a clone of mlnx-tools' show_gids (a bash script, the one
// people run to pick a RoCE GID index; reference: github.com/Mellanox/mlnx-tools
// sbin/show_gids at 8fbfd9cf): every non-zero GID of every port of the RDMA
// devices in /sys/class/infiniband, or of the devices its first argument
// names, with the GID's netdev, RoCE version and, for GIDs whose first group
// is 0000, an IPv4 address. Output, errors and exit status are those of the
// script run by bash 5.2 with GNU coreutils in the C locale, quirks included:
//
//   - Only $1 is used, unquoted: it is split on spaces, tabs and newlines into
//     device names ("show_gids 'mlx5_0 mlx5_1'" shows both); an empty or
//     missing $1 means every entry "ls /sys/class/infiniband/" prints (no
//     dot files, byte order), split the same way. There are no options
//     ("-h" is a device that does not exist).
//   - Ports and GID indexes are ls's order, lexicographic: 0 1 10 100 2 ...
//   - A GID equal to 0000:...:0000 or fe80:0000:...:0000 is skipped; other
//     link-local GIDs are shown.
//   - ls's errors on stderr ("ls: cannot access '/sys/class/infiniband/x/ports/':
//     No such file or directory", GNU's quoting of odd names) for a device
//     that does not exist or has no ports directory, a port without gids.
//   - A GID file cat cannot read: cat's error, then the empty value makes
//     each of the script's three "[" tests fail with "$0: line N: [: =: unary
//     operator expected" (lines 85, 88, 94), and the row is printed with an
//     empty GID and no IPv4 column, and counted. A GID of several words
//     gives "[: too many arguments" instead.
//   - The VER column is grep -o "[Vv].*" of the type file's words re-joined
//     with single spaces ("IB/RoCE v1" gives v1, "RoCE v2" v2); missing
//     ndev/type files leave the columns empty (their errors go to /dev/null).
//   - The IPv4 column comes from fixed positions (30, 32, 35 and 37, two
//     characters each) of any GID whose first colon-separated field is
//     0000, IPv4-mapped or not, through printf "%d": a short GID gives 0 and
//     "$0: line 95: printf: 0x: invalid number".
//   - Rows are printed by echo -e: backslash escapes in names and values are
//     interpreted; trailing newlines of the files are dropped, NUL bytes
//     dropped with bash's "warning: command substitution: ignored null byte
//     in input".
//   - The last line is n_gids_found=N, N counting the printed rows; the status
//     is always 0.
//
// Not reproduced: bash's pathname expansion. The script leaves $1's words,
// the device/port/index names and the GID file's words unquoted, so a "*",
// "?" or "[" in them that matches files (device names against the current
// directory, ls/cat arguments against /sys) would expand; this clone takes
// every word literally, which is what the script does whenever the pattern
// matches nothing. Also not reproduced: test operators other than = == !=
// -a -o -n -z ! ( ) inside a GID of several words, and locales other than
// C/POSIX (ls's order and quoting, echo/printf on non-ASCII bytes).
//
// "$0" in bash's messages is the script's path as bash got it: Main uses prog
// when it has a slash, else the first executable prog in $PATH (what the
// shell hands to the kernel, and so to bash, when the installed script is run
// by name), else prog.
package showgids

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"golang.org/x/sys/unix"
)

// Script lines of the reference (8fbfd9cf) that bash names in messages.
const (
	lineCatGID    = 84 // gid=$(cat .../gids/$g)
	lineZeroTest  = 85 // [ $gid = 0000:...:0000 ]
	lineFe80Test  = 88 // [ $gid = fe80:0000:...:0000 ]
	lineNdev      = 91 // _ndev=$(cat ...)
	lineType      = 92 // __type=$(cat ...)
	lineFirstTest = 94 // [ $(echo $gid | cut -d ":" -f -1) = "0000" ]
	linePrintf    = 95 // ipv4=$(printf ...)
)

// Command is one show_gids run.
type Command struct {
	// Class is the directory the script reads as /sys/class ("/sys/class"
	// on a real system; a fake tree's sys/class in tests). Messages always
	// say /sys/class.
	Class string
	// Script is "$0", the script's name in bash's messages.
	Script string
}

// Main runs show_gids on the real system.
func Main(prog string, args []string, stdout, stderr io.Writer) int {
	return Command{Class: "/sys/class", Script: scriptName(prog)}.Run(args, stdout, stderr)
}

// scriptName is $0 as bash would have it for a script installed as prog.
func scriptName(prog string) string {
	if prog == "" || strings.Contains(prog, "/") {
		return prog
	}
	for _, dir := range strings.Split(os.Getenv("PATH"), ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + prog
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && unix.Access(p, unix.X_OK) == nil {
			return p
		}
	}
	return prog
}

type run struct {
	c              Command
	stdout, stderr io.Writer
}

// Run runs show_gids with args (without argv[0]).
func (c Command) Run(args []string, stdout, stderr io.Writer) int {
	r := run{c: c, stdout: stdout, stderr: stderr}
	io.WriteString(stdout, "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n")
	io.WriteString(stdout, "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n")
	var devs string
	if len(args) > 0 {
		devs = args[0]
	}
	if devs == "" {
		devs = string(r.ls("/infiniband/"))
	}
	count := 0
	for _, d := range Split(devs) {
		for _, p := range Split(string(r.ls("/infiniband/" + d + "/ports/"))) {
			for _, g := range Split(string(r.ls("/infiniband/" + d + "/ports/" + p + "/gids/"))) {
				if r.gid(d, p, g) {
					count++
				}
			}
		}
	}
	fmt.Fprintf(stdout, "n_gids_found=%d\n", count)
	return 0
}

// gid is the body of the innermost loop; it reports whether a row was
// printed.
func (r run) gid(d, p, g string) bool {
	rel := "/infiniband/" + d + "/ports/" + p
	gid := r.subst(lineCatGID, r.cat(rel+"/gids/"+g, true))
	if ok, _ := r.test(lineZeroTest, append(Split(gid), "=", "0000:0000:0000:0000:0000:0000:0000:0000")); ok {
		return false
	}
	if ok, _ := r.test(lineFe80Test, append(Split(gid), "=", "fe80:0000:0000:0000:0000:0000:0000:0000")); ok {
		return false
	}
	ndev := r.subst(lineNdev, r.cat(rel+"/gid_attrs/ndevs/"+g, false))
	typ := r.subst(lineType, r.cat(rel+"/gid_attrs/types/"+g, false))
	ver := stripNewlines(grepV(Echo(Split(typ))))
	first := stripNewlines(cutFirst(Echo(Split(gid))))
	if ok, _ := r.test(lineFirstTest, append(Split(first), "=", "0000")); ok {
		var words []string
		for _, off := range []int{30, 32, 35, 37} {
			words = append(words, Split("0x"+substr(gid, off, 2))...)
		}
		ipv4 := stripNewlines(r.printfD(words))
		r.stdout.Write(Echo([]string{"-e", d + "\t" + p + "\t" + g + "\t" + gid + "\t" + ipv4 + "  \t" + ver + "\t" + ndev}))
	} else {
		r.stdout.Write(Echo([]string{"-e", d + "\t" + p + "\t" + g + "\t" + gid + "\t\t\t" + ver + "\t" + ndev}))
	}
	return true
}

// errorf prints a bash diagnostic for script line n.
func (r run) errorf(n int, format string, a ...any) {
	fmt.Fprintf(r.stderr, "%s: line %d: %s\n", r.c.Script, n, fmt.Sprintf(format, a...))
}

// subst is what $(...) makes of a command's output: NUL bytes dropped (with
// bash's warning), trailing newlines removed.
func (r run) subst(line int, out []byte) string {
	if bytes.IndexByte(out, 0) >= 0 {
		r.errorf(line, "warning: command substitution: ignored null byte in input")
		out = bytes.ReplaceAll(out, []byte{0}, nil)
	}
	return stripNewlines(out)
}

func stripNewlines(b []byte) string { return strings.TrimRight(string(b), "\n") }

// ls is "ls /sys/class" + rel as the script runs it (stdout not a terminal,
// C locale): the directory's names without dot files in byte order, one a
// line, or GNU ls's error on stderr.
func (r run) ls(rel string) []byte {
	shown := "/sys/class" + rel
	path := r.c.Class + rel
	if _, err := os.Stat(path); err != nil {
		fmt.Fprintf(r.stderr, "ls: cannot access %s: %s\n", QuoteAlways(shown), errText(err))
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(r.stderr, "ls: cannot open directory %s: %s\n", QuoteAlways(shown), errText(err))
		return nil
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		fmt.Fprintf(r.stderr, "ls: reading directory %s: %s\n", QuoteAlways(shown), errText(err))
	}
	sort.Strings(names)
	var out []byte
	for _, n := range names {
		if strings.HasPrefix(n, ".") {
			continue
		}
		out = append(append(out, n...), '\n')
	}
	return out
}

// cat is "cat /sys/class" + rel: what it read, and its error on stderr
// unless the script sends it to /dev/null.
func (r run) cat(rel string, showErr bool) []byte {
	b, err := os.ReadFile(r.c.Class + rel)
	if err != nil && showErr {
		fmt.Fprintf(r.stderr, "cat: %s: %s\n", Quote("/sys/class"+rel), errText(err))
	}
	return b
}

// errText is strerror of the errno behind err.
func errText(err error) string {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return cstd.Strerror(errno)
	}
	return err.Error()
}

// Split is bash's word splitting with the default IFS: fields separated by
// runs of spaces, tabs and newlines.
func Split(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' })
}

// substr is ${s:off:n} in the C locale (bytes).
func substr(s string, off, n int) string {
	if off >= len(s) {
		return ""
	}
	s = s[off:]
	if n < len(s) {
		s = s[:n]
	}
	return s
}

// grepV is grep -o "[Vv].*" of text: from the first V or v of each line to
// its end, one match a line.
func grepV(text []byte) []byte {
	var out []byte
	for _, line := range bytes.SplitAfter(text, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		if i := bytes.IndexAny(line, "Vv"); i >= 0 {
			out = append(append(out, line[i:]...), '\n')
		}
	}
	return out
}

// cutFirst is cut -d ":" -f -1 of text: each line up to its first colon
// (a line without one whole), every output line ending in a newline.
func cutFirst(text []byte) []byte {
	if len(text) == 0 {
		return nil
	}
	var out []byte
	for _, line := range bytes.SplitAfter(bytes.TrimSuffix(text, []byte("\n")), []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			line = line[:i]
		}
		out = append(append(out, line...), '\n')
	}
	return out
}

// printfD is bash's printf "%d.%d.%d.%d" with args: the format reused while
// arguments remain, missing ones 0, invalid numbers reported (and their
// value up to the error used).
func (r run) printfD(args []string) []byte {
	var out []byte
	for {
		for i := 0; i < 4; i++ {
			var v int64
			if len(args) > 0 {
				v = r.intArg(args[0])
				args = args[1:]
			}
			if i > 0 {
				out = append(out, '.')
			}
			out = strconv.AppendInt(out, v, 10)
		}
		if len(args) == 0 {
			return out
		}
	}
}

// intArg is bash printf's getintmax: strtoimax(s, &end, 0), "invalid number"
// when characters remain; a leading quote gives the next character's code.
func (r run) intArg(s string) int64 {
	if s != "" && (s[0] == '\'' || s[0] == '"') {
		if len(s) > 1 {
			return int64(s[1])
		}
		return 0
	}
	v, n, erange := cstd.Strtol(s, 0)
	if n != len(s) {
		msg := "invalid number"
		switch {
		case len(s) > 1 && s[0] == '0' && s[1] >= '0' && s[1] <= '9':
			msg = "invalid octal number"
		case len(s) > 1 && s[0] == '0' && s[1] == 'x':
			msg = "invalid hex number"
		}
		r.errorf(linePrintf, "printf: %s: %s", s, msg)
	} else if erange {
		r.errorf(linePrintf, "printf: warning: %s: %s", s, cstd.Strerror(unix.ERANGE))
	}
	return v
}

// Echo is the output of bash's echo builtin with words as arguments
// (xpg_echo off): leading -n/-e/-E option words, then the words joined by
// spaces, escapes interpreted under -e.
func Echo(words []string) []byte {
	newline, escapes := true, false
	for len(words) > 0 {
		w := words[0]
		if len(w) < 2 || w[0] != '-' || strings.Trim(w[1:], "neE") != "" {
			break
		}
		for _, c := range w[1:] {
			switch c {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
		words = words[1:]
	}
	var out []byte
	for i, w := range words {
		if i > 0 {
			out = append(out, ' ')
		}
		if escapes {
			var stop bool
			out, stop = appendEscapes(out, w)
			if stop {
				return out
			}
		} else {
			out = append(out, w...)
		}
	}
	if newline {
		out = append(out, '\n')
	}
	return out
}

// appendEscapes appends w with echo -e's escapes interpreted; stop reports
// \c (no further output).
func appendEscapes(out []byte, w string) ([]byte, bool) {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c != '\\' || i+1 == len(w) {
			out = append(out, c)
			continue
		}
		i++
		e := w[i]
		if ch := escapeChar(e); ch != 0 {
			out = append(out, ch)
			continue
		}
		switch e {
		case 'c':
			return out, true
		case 'e', 'E':
			out = append(out, 0x1b)
		case '\\':
			out = append(out, '\\')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			// \0nnn (up to three more digits) or \nnn (up to two more).
			v, n := 0, 0
			if e != '0' {
				v, n = int(e-'0'), 1
			}
			for n < 3 && i+1 < len(w) && w[i+1] >= '0' && w[i+1] <= '7' {
				v = v*8 + int(w[i+1]-'0')
				i++
				n++
			}
			out = append(out, byte(v))
		case 'x':
			v, n := 0, 0
			for n < 2 && i+1 < len(w) && isHex(w[i+1]) {
				v = v*16 + hexVal(w[i+1])
				i++
				n++
			}
			if n == 0 {
				out = append(out, '\\', 'x')
			} else {
				out = append(out, byte(v))
			}
		default:
			out = append(out, '\\', e)
		}
	}
	return out, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= 'a':
		return int(c-'a') + 10
	case c >= 'A':
		return int(c-'A') + 10
	}
	return int(c - '0')
}
