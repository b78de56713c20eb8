package main

// The cleanup step (in the spirit of x/sys/unix's mkpost.go): cgo -godefs
// output is parsed, and the file actually committed is rendered from it plus
// what the header scan knows. Each rule below says why it exists.

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/printer"
	"go/token"
	"regexp"
	"slices"
	"strings"
)

// godefsOut is the parsed cgo -godefs output: types in order, constant values.
type godefsOut struct {
	types  []goType
	consts map[string]string // name -> value expression as printed by godefs
}

type goType struct {
	name   string
	fields []goField // nil for non-struct types
	under  string    // underlying type expression for non-struct types
}

type goField struct{ name, typ string }

func parseGodefs(src []byte) (*godefsOut, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "godefs.go", src, 0)
	if err != nil {
		return nil, fmt.Errorf("parse cgo -godefs output: %w", err)
	}
	expr := func(e ast.Expr) string {
		var b bytes.Buffer
		printer.Fprint(&b, fset, e)
		return b.String()
	}
	out := &godefsOut{consts: map[string]string{}}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, s := range gd.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				t := goType{name: s.Name.Name}
				st, ok := s.Type.(*ast.StructType)
				if !ok {
					t.under = expr(s.Type)
					out.types = append(out.types, t)
					continue
				}
				t.fields = []goField{}
				for _, fl := range st.Fields.List {
					for _, n := range fl.Names {
						t.fields = append(t.fields, goField{n.Name, expr(fl.Type)})
					}
				}
				out.types = append(out.types, t)
			case *ast.ValueSpec:
				for i, n := range s.Names {
					out.consts[n.Name] = expr(s.Values[i])
				}
			}
		}
	}
	return out, nil
}

var (
	ctypeRe      = regexp.MustCompile(`_Ctype_(struct|union)_(\w+)`)
	int8ArrRe    = regexp.MustCompile(`^((?:\[\d+\])+)int8$`)
	anonStructRe = regexp.MustCompile(`_Ctype_struct___\d+`)
	cPadRe       = regexp.MustCompile(`^(pad(_?\d+)?|padding)$`)
)

// fieldName renames a field.
//   - cgo's alignment filler (Pad_cgo_N, or "_") and C fields that exist only
//     as padding (pad, pad_1, padding) become "_": they carry no information,
//     nobody should read or write them, and "_" keeps them zero in composite
//     literals.
//   - Everything else is CamelCased per '_' word as docs/DESIGN.md requires;
//     godefs only upper-cases the first letter (Attr_id -> AttrId).
//   - cgo -godefs drops a prefix that all field names share (fieldPrefix in
//     cmd/cgo: elem_id, reserved -> Id, Reserved), which would silently
//     rename fields. So the C name is taken from the header scan (cnames, in
//     order) after checking that it is the field godefs rendered.
//
// fieldName returns the Go name and the C member name ("" for cgo padding).
func fieldName(n string, cnames *[]string) (goName, cName string, err error) {
	if n == "_" || strings.HasPrefix(n, "Pad_cgo_") {
		return "_", "", nil
	}
	if len(*cnames) == 0 {
		return "", "", fmt.Errorf("godefs field %s has no C member left", n)
	}
	c := (*cnames)[0]
	*cnames = (*cnames)[1:]
	if !godefsRenders(c, n) {
		return "", "", fmt.Errorf("godefs field %s does not match C member %s", n, c)
	}
	if cPadRe.MatchString(c) {
		return "_", c, nil
	}
	return camel(c), c, nil
}

// godefsRenders reports whether cgo -godefs may have rendered C member c as
// Go field g: upper-cased, possibly without a shared "xxx_" prefix.
func godefsRenders(c, g string) bool {
	up := func(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
	if c == "" {
		return false
	}
	if up(c) == g {
		return true
	}
	i := strings.IndexByte(c, '_')
	return i >= 0 && i+1 < len(c) && up(c[i+1:]) == g
}

// fieldType rewrites a field's type expression.
//   - Types that godefs did not see declared in the same run come out as
//     _Ctype_struct_x; they are declared by another header's file of this
//     package under the DESIGN.md name, so use that name.
//   - C char arrays come out as [N]int8; byte is what every user wants
//     (names, MACs) and what x/sys does (golang.org/issue/20753).
//   - Socket address types (rdma_user_cm.h) are not RDMA types: they map to
//     the Go types in foreignTypes (x/sys/unix, or a hand-written type of
//     this package when x/sys has no type of the same layout).
//   - A C pointer member (siw_cqe's struct ib_qp *base_qp, which the kernel
//     fills only in its own CQs) holds an address of another address space,
//     never a Go pointer: a Go pointer type would let the garbage collector
//     follow it (and name a type no header declares). It becomes uint64, the
//     size of a pointer on the 64-bit targets layout.go allows.
func fieldType(t string) string {
	if strings.HasPrefix(t, "*") {
		return "uint64"
	}
	t = ctypeRe.ReplaceAllStringFunc(t, func(m string) string {
		c := ctypeRe.FindStringSubmatch(m)[2]
		if f, ok := foreignTypes[c]; ok {
			return f
		}
		return camel(c)
	})
	if m := int8ArrRe.FindStringSubmatch(t); m != nil {
		t = m[1] + "byte"
	}
	return t
}

// render writes the Go file for one header: file header, types, union
// accessors, constants, sizes and the compile-time layout check.
func render(spec headerSpec, h *cHeader, consts []cConst, g *godefsOut) ([]byte, error) {
	r := renderer{h: h, g: g, imports: map[string]bool{}}
	r.index()
	if err := r.types(); err != nil {
		return nil, err
	}
	r.accessors()
	if err := r.consts(consts); err != nil {
		return nil, err
	}
	if err := r.sizes(); err != nil {
		return nil, err
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, "// go run ./internal/cmd/genabi -header %s\n", spec.name)
	b.WriteString("// Code generated by internal/cmd/genabi; DO NOT EDIT.\n\n")
	b.WriteString("//go:build linux\n\n")
	fmt.Fprintf(&b, "// Types and constants of <rdma/%s>, from cgo -godefs on\n"+
		"// internal/cmd/genabi/input/%s.go plus the cleanup in internal/cmd/genabi.\n\n",
		spec.name, inputBase(spec.name))
	b.WriteString("package abi\n\n")
	if len(r.imports) > 0 {
		b.WriteString("import (\n")
		for _, imp := range []string{"structs", "unsafe", "golang.org/x/sys/unix"} {
			if r.imports[imp] {
				fmt.Fprintf(&b, "\t%q\n", imp)
			}
		}
		b.WriteString(")\n\n")
	}
	b.Write(wrapComments(r.body.Bytes(), 100))
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("gofmt generated file: %w", err)
	}
	return out, nil
}

// renderer accumulates the body of one generated file.
type renderer struct {
	h       *cHeader
	g       *godefsOut
	body    bytes.Buffer
	imports map[string]bool

	records  map[string]cRecord  // Go name -> top-level C struct/union
	typedefs map[string]nestedIn // Go name -> anonymous struct given a name
	sized    []string            // Go types that get a SizeofX constant
}

type nestedIn struct {
	nestedType
	parent cRecord
}

func (r *renderer) index() {
	r.records = map[string]cRecord{}
	r.typedefs = map[string]nestedIn{}
	for _, rec := range r.h.records {
		r.records[camel(rec.tag)] = rec
		for _, n := range nestedTypes(rec) {
			r.typedefs[n.goName] = nestedIn{n, rec}
		}
	}
}

// types renders the types in header order (godefs keeps the input order).
func (r *renderer) types() error {
	for _, t := range r.g.types {
		rec, isRecord := r.records[t.name]
		u, isTypedef := r.typedefs[t.name]
		switch {
		case isRecord:
			fmt.Fprintf(&r.body, "// %s is %s %s.\n", t.name, rec.kind, rec.tag)
			recordNotes(&r.body, rec, t)
		case isTypedef && u.union != nil:
			fmt.Fprintf(&r.body, "// %s is member %s of %s %s, an anonymous struct in C; reach it through (*%s).%s.\n",
				t.name, u.path, u.parent.kind, u.parent.tag, camel(u.parent.tag), u.union.method)
		case isTypedef:
			fmt.Fprintf(&r.body, "// %s is the type of member %s of %s %s, an anonymous struct in C.\n",
				t.name, u.path, u.parent.kind, u.parent.tag)
		default:
			return fmt.Errorf("godefs produced unexpected type %s", t.name)
		}
		r.sized = append(r.sized, t.name)
		if t.fields == nil {
			// Rule: a top-level union is rendered by godefs as a byte array
			// of its size; keep it (documented by recordNotes).
			fmt.Fprintf(&r.body, "type %s %s\n\n", t.name, t.under)
			continue
		}
		body, prefix := rec.body, rec.tag+"_"
		if isTypedef {
			prefix = u.cName + "_"
			var err error
			if body, err = nestedBody(u.parent.body, u.path); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
		if err := r.structType(t, body, prefix); err != nil {
			return err
		}
	}
	return nil
}

// structType renders one struct. body is the C struct body; prefix+member
// is the C typedef name of a member of anonymous struct type.
func (r *renderer) structType(t goType, body, prefix string) error {
	cnames, be := memberNames(body), bigEndianMembers(body)
	fmt.Fprintf(&r.body, "type %s struct {\n", t.name)
	// Rule: every struct starts with structs.HostLayout so that the Go
	// toolchain keeps the C (host) layout even if it ever starts to reorder
	// fields. It is zero-sized and first, so it adds no padding; the size
	// checks prove it.
	r.body.WriteString("\t_ structs.HostLayout\n")
	r.imports["structs"] = true
	seen := map[string]bool{}
	for _, f := range t.fields {
		n, c, err := fieldName(f.name, &cnames)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		if n != "_" && seen[n] {
			return fmt.Errorf("%s: two fields named %s after renaming", t.name, n)
		}
		seen[n] = true
		// Rule: a member declared with an anonymous struct type comes out
		// as _Ctype_struct___N (cgo does not carry our typeof typedef over
		// to it); use the typedef's Go name.
		ft := anonStructRe.ReplaceAllStringFunc(f.typ, func(string) string {
			if n, ok := r.typedefs[camel(prefix+c)]; ok {
				return n.goName
			}
			return "_Ctype_unknown_anonymous_struct"
		})
		pointer := strings.HasPrefix(ft, "*") // fieldType makes it an integer
		ft = fieldType(ft)
		if strings.Contains(ft, "unix.") {
			r.imports["golang.org/x/sys/unix"] = true
		}
		if strings.Contains(ft, "_Ctype_") {
			return fmt.Errorf("%s.%s: unhandled C type %s", t.name, n, ft)
		}
		if strings.HasPrefix(ft, "[0]") {
			// Rule: a zero-length trailing array would make Go add padding
			// after it (so that &x.f stays inside x), changing the size;
			// flexible array members are documented instead.
			continue
		}
		// Rule: Go has no big-endian integer types; say so where C does.
		comment := ""
		if be[c] {
			comment = " // big-endian"
		}
		if pointer {
			comment = " // a C pointer: an address, never dereferenced by Go"
		}
		fmt.Fprintf(&r.body, "\t%s %s%s\n", n, ft, comment)
	}
	r.body.WriteString("}\n\n")
	return nil
}

// accessors renders the union accessor methods listed in config.go.
func (r *renderer) accessors() {
	for _, rec := range r.h.records {
		for _, u := range unionsOf(rec.tag) {
			gt := u.target()
			if strings.HasPrefix(gt, "unix.") {
				r.imports["golang.org/x/sys/unix"] = true
			}
			r.imports["unsafe"] = true
			fmt.Fprintf(&r.body, "// %s returns a pointer to %s.\n", u.method, u.doc)
			fmt.Fprintf(&r.body, "func (s *%s) %s() *%s { return (*%s)(unsafe.Pointer(&s.%s)) }\n\n",
				camel(rec.tag), u.method, gt, gt, u.field)
		}
	}
}

// consts renders one const block per enum (or run of #defines), in header
// order, headed by the enum's C name.
func (r *renderer) consts(consts []cConst) error {
	block := -2 // no block open
	for _, c := range consts {
		v, ok := r.g.consts[c.name]
		if !ok {
			return fmt.Errorf("godefs produced no value for %s", c.name)
		}
		if c.block != block {
			if block != -2 {
				r.body.WriteString(")\n\n")
			}
			block = c.block
			fmt.Fprintf(&r.body, "// %s\nconst (\n", c.group)
		}
		fmt.Fprintf(&r.body, "\t%s = %s\n", c.name, v)
	}
	if block != -2 {
		r.body.WriteString(")\n\n")
	}
	return nil
}

// sizes renders the SizeofX constants (from the C compiler) and a
// compile-time proof that the Go types have exactly those sizes on the
// architecture being built: a mismatch makes an index constant out of range
// (or overflow uintptr). Each union accessor's target must fit in the union.
func (r *renderer) sizes() error {
	if len(r.sized) == 0 {
		return nil
	}
	r.body.WriteString("// Sizes of the C types, computed by the C compiler (sizeof).\nconst (\n")
	for _, n := range r.sized {
		v, ok := r.g.consts["Sizeof"+n]
		if !ok {
			return fmt.Errorf("godefs produced no size for %s", n)
		}
		fmt.Fprintf(&r.body, "\tSizeof%s = %s\n", n, v)
	}
	r.body.WriteString(")\n\n")
	r.imports["unsafe"] = true
	r.body.WriteString("// Layout check: fails to compile unless unsafe.Sizeof equals the C size.\n" +
		"func _() {\n\tvar x [1]struct{}\n\t_ = x\n")
	for _, n := range r.sized {
		fmt.Fprintf(&r.body, "\t_ = x[unsafe.Sizeof(%s{})-Sizeof%s]\n", n, n)
	}
	for _, rec := range r.h.records {
		for _, u := range unionsOf(rec.tag) {
			fmt.Fprintf(&r.body, "\tvar _ [unsafe.Sizeof(%s{}.%s) - unsafe.Sizeof(*(*%s)(nil))]struct{} // %s fits in %s\n",
				camel(rec.tag), u.field, u.target(), u.method, u.field)
		}
	}
	r.body.WriteString("}\n")
	return nil
}

// recordNotes documents what the Go type cannot show: how each C union is
// rendered and which flexible array members were left out.
func recordNotes(b *bytes.Buffer, r cRecord, t goType) {
	if t.fields == nil {
		fmt.Fprintf(b, "//\n// cgo -godefs renders a C union as a byte array of its size; here the array is the union's first member, %s.\n", r.first)
		return
	}
	acc := map[string][]string{}
	for _, u := range unionsOf(r.tag) {
		acc[u.field] = append(acc[u.field], u.method)
	}
	for _, u := range r.unions {
		var field, how string
		if len(u.names) == 0 && slices.Contains(r.flex, u.first) {
			continue // a union of flexible array members; noted with them below
		}
		if len(u.names) == 0 {
			field = camel(u.first)
			how = fmt.Sprintf("anonymous union (first member %s) is rendered as that member, %s", u.first, field)
		} else {
			field = camel(u.names[0])
			how = fmt.Sprintf("union %s is rendered as a byte array of its size", strings.Join(u.names, ", "))
			if len(u.names) > 1 {
				how = fmt.Sprintf("unions %s are each rendered as a byte array of their size", strings.Join(u.names, ", "))
			}
		}
		fmt.Fprintf(b, "//\n// The %s", how)
		var ms []string
		for _, n := range u.names {
			ms = append(ms, acc[camel(n)]...)
		}
		if len(u.names) == 0 {
			ms = acc[field]
		}
		if len(ms) > 0 {
			fmt.Fprintf(b, "; the other members are reached through %s", strings.Join(ms, ", "))
		}
		b.WriteString(".\n")
	}
	if len(r.flex) > 0 {
		what := "Flexible array member " + r.flex[0] + "[] is"
		if len(r.flex) > 1 {
			what = "Flexible array members " + strings.Join(r.flex, "[], ") + "[] (a union) are"
		}
		fmt.Fprintf(b, "//\n// %s omitted: the data starts right after the struct, at offset Sizeof%s.\n", what, t.name)
	}
}

func inputBase(header string) string {
	return strings.ReplaceAll(strings.TrimSuffix(header, ".h"), "-", "_")
}

// wrapComments re-wraps top-level "// " comment lines longer than width, so
// that the generated doc comments read like hand-written ones.
func wrapComments(src []byte, width int) []byte {
	var out bytes.Buffer
	for _, line := range strings.SplitAfter(string(src), "\n") {
		text := strings.TrimSuffix(line, "\n")
		if !strings.HasPrefix(text, "// ") || len(text) <= width {
			out.WriteString(line)
			continue
		}
		cur := "//"
		for _, w := range strings.Fields(text[3:]) {
			if len(cur)+1+len(w) > width && cur != "//" {
				out.WriteString(cur + "\n")
				cur = "//"
			}
			cur += " " + w
		}
		out.WriteString(cur + "\n")
	}
	return out.Bytes()
}
