package rdmatool

import (
	"fmt"
	"io"
	"strings"
)

// jsonWriter reproduces the byte stream of iproute2's lib/json_writer.c,
// including its pretty-printing layout ("[ {" on one line, four spaces per
// nesting level, arrays closed on the line of their last element).
type jsonWriter struct {
	out    io.Writer
	depth  int
	pretty bool
	sep    byte // 0 or ','
}

func (w *jsonWriter) write(s string) { io.WriteString(w.out, s) }

func (w *jsonWriter) eol() {
	if w.pretty {
		w.write("\n" + strings.Repeat("    ", w.depth))
	}
}

// eor writes the separator owed to the previous value.
func (w *jsonWriter) eor() {
	if w.sep != 0 {
		w.write(string(w.sep))
	}
	w.sep = ','
}

func (w *jsonWriter) quote(s string) {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		case '\b':
			b.WriteString(`\b`)
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		default:
			if c < 0x20 || c == 0x7f { // RFC 8259 control characters (iproute2 6.9+)
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	w.write(b.String())
}

func (w *jsonWriter) begin(c string) {
	w.eor()
	w.write(c)
	w.depth++
	w.sep = 0
}

func (w *jsonWriter) end(c string) {
	w.depth--
	if w.sep != 0 {
		w.eol()
	}
	w.write(c)
	w.sep = ','
}

func (w *jsonWriter) name(n string) {
	w.eor()
	w.eol()
	w.sep = 0
	w.quote(n)
	w.write(":")
	if w.pretty {
		w.write(" ")
	}
}

func (w *jsonWriter) raw(v string) {
	w.eor()
	w.write(v)
}

func (w *jsonWriter) str(v string) {
	w.eor()
	w.quote(v)
}

func (w *jsonWriter) startObject() { w.begin("{") }
func (w *jsonWriter) endObject()   { w.end("}") }

func (w *jsonWriter) startArray() {
	w.begin("[")
	if w.pretty {
		w.write(" ")
	}
}

func (w *jsonWriter) endArray() {
	if w.pretty && w.sep != 0 {
		w.write(" ")
	}
	w.sep = 0
	w.end("]")
}

// Output kinds of iproute2's print helpers: text only, JSON only, or both.
const (
	printFP   = 1
	printJSON = 2
	printAny  = 4
)

// printer is the port of iproute2's json_print.c: the same call decides what
// to print in text mode and what to emit in JSON mode.
type printer struct {
	out    io.Writer
	json   bool   // -j
	pretty bool   // -p (JSON only)
	sl     string // _SL_: "\n", or "\\" with -oneline
	jw     *jsonWriter
}

func (p *printer) jsonCtx(t int) bool { return p.jw != nil && t&(printJSON|printAny) != 0 }
func (p *printer) textCtx(t int) bool { return p.jw == nil && t&(printFP|printAny) != 0 }

// newJSONObj starts the top-level JSON array when in JSON mode.
func (p *printer) newJSONObj() {
	if !p.json {
		return
	}
	p.jw = &jsonWriter{out: p.out, pretty: p.pretty}
	p.jw.startArray()
}

// deleteJSONObj closes the top-level JSON array and ends the line.
func (p *printer) deleteJSONObj() {
	if p.jw == nil {
		return
	}
	p.jw.endArray()
	p.jw.write("\n")
	p.jw = nil
}

func (p *printer) openObject(key string) {
	if p.jsonCtx(printJSON) {
		if key != "" {
			p.jw.name(key)
		}
		p.jw.startObject()
	}
}

func (p *printer) closeObject() {
	if p.jsonCtx(printJSON) {
		p.jw.endObject()
	}
}

// openArray opens a JSON array called key, or prints text in text mode.
func (p *printer) openArray(t int, key, text string) {
	if p.jsonCtx(t) {
		if key != "" {
			p.jw.name(key)
		}
		p.jw.startArray()
	} else if p.textCtx(t) {
		io.WriteString(p.out, text)
	}
}

func (p *printer) closeArray(t int, text string) {
	if p.jsonCtx(t) {
		p.jw.endArray()
	} else if p.textCtx(t) {
		io.WriteString(p.out, text)
	}
}

// text prints s in text mode only.
func (p *printer) text(s string) {
	if p.textCtx(printFP) {
		io.WriteString(p.out, s)
	}
}

// textf prints a formatted string in text mode only.
func (p *printer) textf(format string, a ...any) {
	if p.textCtx(printFP) {
		fmt.Fprintf(p.out, format, a...)
	}
}

// value emits a JSON value (with key, or as an array element when key is
// empty) whose text is the already formatted jsonText, and in text mode
// prints textFmt (a fmt format with one verb; "" prints nothing) with v.
func (p *printer) value(t int, key, jsonText string, quoted bool, textFmt string, v any) {
	if p.jsonCtx(t) {
		if key != "" {
			p.jw.name(key)
		}
		if quoted {
			p.jw.str(jsonText)
		} else {
			p.jw.raw(jsonText)
		}
	} else if p.textCtx(t) && textFmt != "" {
		fmt.Fprintf(p.out, textFmt, v)
	}
}

func (p *printer) str(t int, key, textFmt, v string) {
	p.value(t, key, v, true, textFmt, v)
}

func (p *printer) uint(t int, key, textFmt string, v uint32) {
	p.value(t, key, fmt.Sprint(v), false, textFmt, v)
}

func (p *printer) u64(t int, key, textFmt string, v uint64) {
	p.value(t, key, fmt.Sprint(v), false, textFmt, v)
}

func (p *printer) int(t int, key, textFmt string, v int64) {
	p.value(t, key, fmt.Sprint(v), false, textFmt, v)
}

// onOff is print_on_off: a JSON bool, "on"/"off" in text.
func (p *printer) onOff(t int, key, textFmt string, v bool) {
	s := "off"
	if v {
		s = "on"
	}
	p.value(t, key, fmt.Sprint(v), false, textFmt, s)
}

// hex is print_color_hex: a JSON string of lowercase hex digits without
// "0x", the text format applied to the number.
func (p *printer) hex(t int, key, textFmt string, v uint32) {
	p.value(t, key, fmt.Sprintf("%x", v), true, textFmt, v)
}

// newline ends an entry as iproute2 7.x's close_json_object(); newline()
// do: closes its JSON object, then ends the line in text and JSON alike
// (hence "}\n,{" between JSON entries).
func (p *printer) newline() {
	p.closeObject()
	io.WriteString(p.out, "\n")
}

// newlineIndent continues a text entry on an indented line (nothing in
// JSON).
func (p *printer) newlineIndent() {
	p.text(p.lineSep() + "    ")
}

// lineSep is _SL_.
func (p *printer) lineSep() string {
	if p.sl == "" {
		return "\n"
	}
	return p.sl
}
