package showgids

// The script's "[ ... ]" tests (bash 5.2's test builtin, test.c) and GNU's
// quoting of file names in ls's and cat's messages (gnulib quotearg.c).

import (
	"fmt"
	"strings"
)

// testError is a syntax error of the test builtin (status 2).
type testError string

// test runs "[ args ]" on script line n: its truth and, on a syntax error,
// the message on stderr ("$0: line n: [: ...") with a false result.
func (r run) test(n int, args []string) (ok bool, err error) {
	v, msg := Test(args)
	if msg != "" {
		r.errorf(n, "[: %s", msg)
		return false, fmt.Errorf("%s", msg)
	}
	return v, nil
}

// Test evaluates the test builtin's arguments (without "[" and "]") as
// bash's test.c does, for string operands and the string operators: =, ==,
// !=, <, >, -n, -z, !, (, ), -a, -o. It returns the result, or the syntax
// error's message.
func Test(args []string) (v bool, msg string) {
	defer func() {
		if e := recover(); e != nil {
			te, ok := e.(testError)
			if !ok {
				panic(e)
			}
			v, msg = false, string(te)
		}
	}()
	t := &tester{argv: args}
	switch len(args) {
	case 0:
		return false, ""
	case 1:
		return args[0] != "", ""
	case 2:
		return t.two(), ""
	case 3:
		return t.three(), ""
	case 4:
		if args[0] == "!" {
			t.pos = 1
			return !t.three(), ""
		}
		if args[0] == "(" && args[3] == ")" {
			t.pos = 1
			return t.two(), ""
		}
	}
	v = t.expr()
	if t.pos != len(args) {
		if t.pos < len(args) && strings.HasPrefix(args[t.pos], "-") {
			panic(testError(fmt.Sprintf("syntax error: `%s' unexpected", args[t.pos])))
		}
		panic(testError("too many arguments"))
	}
	return v, ""
}

type tester struct {
	argv []string
	pos  int
}

func (t *tester) beyond() {
	panic(testError("argument expected"))
}

func (t *tester) advance(f bool) {
	t.pos++
	if f && t.pos >= len(t.argv) {
		t.beyond()
	}
}

func isBinop(s string) bool {
	switch s {
	case "=", "==", "!=", "<", ">":
		return true
	}
	return false
}

func isUnop(s string) bool { return s == "-n" || s == "-z" }

func (t *tester) two() bool {
	a := t.argv[t.pos:]
	switch {
	case a[0] == "!":
		return a[1] == ""
	case isUnop(a[0]):
		return t.unary()
	}
	panic(testError(fmt.Sprintf("%s: unary operator expected", a[0])))
}

func (t *tester) three() bool {
	a := t.argv[t.pos:]
	switch {
	case isBinop(a[1]):
		v := t.binary()
		t.pos = len(t.argv)
		return v
	case a[1] == "-a" || a[1] == "-o":
		l, r := a[0] != "", a[2] != ""
		t.pos = len(t.argv)
		if a[1] == "-a" {
			return l && r
		}
		return l || r
	case a[0] == "!":
		t.pos++
		v := !t.two()
		t.pos = len(t.argv)
		return v
	case a[0] == "(" && a[2] == ")":
		t.pos = len(t.argv)
		return a[1] != ""
	}
	panic(testError(fmt.Sprintf("%s: binary operator expected", a[1])))
}

func (t *tester) binary() bool {
	l, op, r := t.argv[t.pos], t.argv[t.pos+1], t.argv[t.pos+2]
	t.pos += 3
	switch op {
	case "=", "==":
		return l == r
	case "!=":
		return l != r
	case "<":
		return l < r
	}
	return l > r
}

func (t *tester) unary() bool {
	op := t.argv[t.pos]
	t.advance(false)
	if t.pos >= len(t.argv) {
		t.beyond()
	}
	s := t.argv[t.pos]
	t.advance(false)
	if op == "-n" {
		return s != ""
	}
	return s == ""
}

func (t *tester) expr() bool {
	if t.pos >= len(t.argv) {
		t.beyond()
	}
	v := t.and()
	if t.pos < len(t.argv) && t.argv[t.pos] == "-o" {
		t.advance(false)
		return t.expr() || v
	}
	return v
}

func (t *tester) and() bool {
	v := t.term()
	if t.pos < len(t.argv) && t.argv[t.pos] == "-a" {
		t.advance(false)
		return t.and() && v
	}
	return v
}

func (t *tester) term() bool {
	if t.pos >= len(t.argv) {
		t.beyond()
	}
	a := t.argv
	if a[t.pos] == "!" {
		neg := false
		for t.pos < len(a) && a[t.pos] == "!" {
			t.advance(true)
			neg = !neg
		}
		if neg {
			return !t.term()
		}
		return t.term()
	}
	if a[t.pos] == "(" {
		t.advance(true)
		v := t.expr()
		if t.pos >= len(a) {
			// "[" drops its "]" from argc but not from argv: test.c
			// finds "]" where "test" would find NULL.
			panic(testError("`)' expected, found ]"))
		}
		if a[t.pos] != ")" {
			panic(testError(fmt.Sprintf("`)' expected, found %s", a[t.pos])))
		}
		t.advance(false)
		return v
	}
	if t.pos+3 <= len(a) && isBinop(a[t.pos+1]) {
		return t.binary()
	}
	if t.pos+2 <= len(a) && isUnop(a[t.pos]) {
		return t.unary()
	}
	v := a[t.pos] != ""
	t.advance(false)
	return v
}

// cEscapes are the one-letter backslash escapes of control characters that echo -e reads and $'...' quoting
// writes.
var cEscapes = [...]struct{ letter, char byte }{
	{'a', '\a'}, {'b', '\b'}, {'f', '\f'}, {'n', '\n'}, {'r', '\r'}, {'t', '\t'}, {'v', '\v'},
}

// escapeChar is the control character the escape \letter stands for, or 0.
func escapeChar(letter byte) byte {
	for _, e := range cEscapes {
		if e.letter == letter {
			return e.char
		}
	}
	return 0
}

// escapeLetter is the letter of c's one-letter escape, or 0.
func escapeLetter(c byte) byte {
	for _, e := range cEscapes {
		if e.char == c {
			return e.letter
		}
	}
	return 0
}

// QuoteAlways quotes s as GNU tools quote file names in messages with
// quotearg's shell-escape-always style (ls's "cannot access '...'"), in the
// C locale: '...' normally, "..." when s has a single quote and nothing a
// double-quoted string would change, control and non-ASCII bytes as
// $'\ooo' pieces.
func QuoteAlways(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	pending := false // inside a $'...' piece
	single, compat := false, true
	for i := 0; i < len(s); i++ {
		c := s[i]
		esc, escaped := byte(0), false
		cCompat := false
		switch {
		case c == 0:
			esc, escaped = '0', true
		case escapeLetter(c) != 0:
			esc, escaped = escapeLetter(c), true
		case c == '\'':
			single, cCompat = true, true
			b.WriteString(`'\''`)
			pending = false
			compat = compat && cCompat
			continue
		case c == ' ' || c == '#' && i == 0 || c == '~' && i == 0 || (c == '{' || c == '}') && len(s) == 1:
			cCompat = true
		case c == '%' || c == '+' || c == ',' || c == '-' || c == '.' || c == '/' || c == ':' || c == ']' || c == '_' || c == '@' ||
			c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			cCompat = true
		case c < 0x20 || c >= 0x7f:
			if !pending {
				b.WriteString(`'$'`)
				pending = true
			}
			fmt.Fprintf(&b, `\%03o`, c)
			compat = false
			continue
		}
		if escaped {
			if !pending {
				b.WriteString(`'$'`)
				pending = true
			}
			b.WriteByte('\\')
			b.WriteByte(esc)
			compat = false
			continue
		}
		if pending {
			b.WriteString(`''`)
			pending = false
		}
		b.WriteByte(c)
		compat = compat && cCompat
	}
	if single && compat {
		return `"` + s + `"`
	}
	b.WriteByte('\'')
	return b.String()
}

// Quote is quotearg's shell-escape style with colons quoted, as cat names
// files (quotef): s as is unless a shell would not read it back unchanged
// (or it has a colon), else QuoteAlways(s).
func Quote(s string) string {
	if s == "" {
		return QuoteAlways(s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		force := false
		switch {
		case c < 0x20 || c >= 0x7f:
			force = true
		case strings.IndexByte(" !\"$&()*;<=>[^`|?\\':", c) >= 0:
			force = true
		case c == '#' || c == '~':
			force = i == 0
		case c == '{' || c == '}':
			force = len(s) == 1
		}
		if force {
			return QuoteAlways(s)
		}
	}
	return s
}
