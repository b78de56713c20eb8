package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// cHeader is what the generator learns from scanning one uAPI header's text.
// The scan is deliberately shallow: it only needs names (enum members,
// object-like macros, top-level struct/union tags, flexible array members).
// Every value and every layout comes from the C compiler through cgo -godefs.
type cHeader struct {
	consts  []cConst  // enum members and object-like #defines, in header order
	records []cRecord // top-level struct and union definitions, in header order
}

// cConst is one constant name and the C construct that declares it.
type cConst struct {
	name  string
	group string // "enum ib_uverbs_access_flags", "anonymous enum", "#define"
	block int    // position of the declaring enum (or #define) in the header
}

// cRecord is a top-level struct or union definition.
type cRecord struct {
	kind string // "struct" or "union"
	tag  string
	// flex lists flexible array members ("attrs[]", "data[0]",
	// __DECLARE_FLEX_ARRAY) anywhere inside the definition; cgo -godefs
	// drops them, so the generated type notes them in its doc comment.
	flex []string
	// unions lists the unions that are direct members of the record.
	unions []cUnion
	first  string // name of the first member
	// members are the C names of the direct members, in order. An anonymous
	// union contributes its first member's name (that is how cgo -godefs
	// renders it). cgo -godefs strips a prefix shared by all field names
	// (tv_sec -> Sec), so the generator takes field names from here instead.
	members []string
	body    string // text between the braces, for nestedMembers
}

// cUnion is a union member of a struct: named (union {...} ex;) or anonymous
// (union {...};). cgo -godefs renders the first as a byte array named after
// the field and the second as the union's first member.
type cUnion struct {
	names []string // declarator names; empty for an anonymous union
	first string   // name of the union's first member
}

var (
	blockComment = regexp.MustCompile(`(?s)/\*.*?\*/`)
	lineComment  = regexp.MustCompile(`//[^\n]*`)
	defineRe     = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)([^\n]*)$`)
	enumRe       = regexp.MustCompile(`\benum\s*(\w*)\s*\{([^}]*)\}`)
	identRe      = regexp.MustCompile(`^[A-Za-z_]\w*`)
	recordRe     = regexp.MustCompile(`^(struct|union)\s+([A-Za-z_]\w*)\s*\{`)
	flexRe       = regexp.MustCompile(`(\w+)\s*\[\s*0?\s*\]\s*;`)
	macroDeclRe  = regexp.MustCompile(`^\w+\s*\(.*,\s*(\w+)\s*\)$`)
	declFlexRe   = regexp.MustCompile(`__DECLARE_FLEX_ARRAY\(\s*[^,]+,\s*(\w+)\s*\)`)
)

// scanHeader extracts names from the text of a C header.
func scanHeader(text string) (*cHeader, error) {
	text = strings.ReplaceAll(text, "\\\n", " ") // join continued macro lines
	text = blockComment.ReplaceAllString(text, " ")
	text = lineComment.ReplaceAllString(text, "")

	h := &cHeader{}
	type pos struct {
		at int
		c  cConst
	}
	var found []pos
	for _, m := range defineRe.FindAllStringSubmatchIndex(text, -1) {
		name, rest := text[m[2]:m[3]], text[m[4]:m[5]]
		if strings.HasPrefix(rest, "(") || strings.TrimSpace(rest) == "" {
			continue // function-like macro, or an include guard / flag macro without a value
		}
		found = append(found, pos{m[0], cConst{name, "#define", -1}})
	}
	for _, m := range enumRe.FindAllStringSubmatchIndex(text, -1) {
		group := "anonymous enum"
		if m[3] > m[2] {
			group = "enum " + text[m[2]:m[3]]
		}
		for _, item := range strings.Split(text[m[4]:m[5]], ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			name := identRe.FindString(item)
			if name == "" {
				return nil, fmt.Errorf("%s: cannot parse enum member %q", group, item)
			}
			found = append(found, pos{m[0], cConst{name, group, m[0]}})
		}
	}
	// Keep header order: a stable sort by position keeps enum members in order.
	for i := 1; i < len(found); i++ {
		for j := i; j > 0 && found[j-1].at > found[j].at; j-- {
			found[j-1], found[j] = found[j], found[j-1]
		}
	}
	for _, f := range found {
		h.consts = append(h.consts, f.c)
	}

	err := eachTopLevel(text, []string{"struct", "union"}, func(i int) (int, error) {
		m := recordRe.FindStringSubmatch(text[i:])
		if m == nil {
			return i + 1, nil
		}
		body, err := braceBody(text[i+len(m[0])-1:])
		if err != nil {
			return 0, fmt.Errorf("%s %s: %w", m[1], m[2], err)
		}
		r := cRecord{kind: m[1], tag: m[2]}
		for _, f := range flexRe.FindAllStringSubmatch(body, -1) {
			r.flex = append(r.flex, f[1])
		}
		for _, f := range declFlexRe.FindAllStringSubmatch(body, -1) {
			r.flex = append(r.flex, f[1])
		}
		r.unions = scanUnions(body[1 : len(body)-1])
		r.first = firstMember(body[1 : len(body)-1])
		r.members = memberNames(body[1 : len(body)-1])
		r.body = body[1 : len(body)-1]
		h.records = append(h.records, r)
		return i + len(m[0]) - 1, nil // continue at the opening brace
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// eachTopLevel calls at(i) for each offset i of s outside braces, and not
// inside an identifier, at which s continues with one of words; at returns
// the offset at which the scan goes on (i+1: the next byte). The prefix test
// is the cheap one: the callers' regexps would cost O(len(s)) per byte.
func eachTopLevel(s string, words []string, at func(i int) (int, error)) error {
	depth := 0
	for i := 0; i < len(s); {
		switch s[i] {
		case '{':
			depth++
			i++
			continue
		case '}':
			depth--
			i++
			continue
		}
		if depth != 0 || (i > 0 && isIdentByte(s[i-1])) || !slices.ContainsFunc(words, func(w string) bool {
			return strings.HasPrefix(s[i:], w)
		}) {
			i++
			continue
		}
		next, err := at(i)
		if err != nil {
			return err
		}
		i = next
	}
	return nil
}

func isIdentByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// braceBody returns s[0:k+1] where s[0] is '{' and s[k] its matching '}'.
func braceBody(s string) (string, error) {
	depth := 0
	for k := 0; k < len(s); k++ {
		switch s[k] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return s[:k+1], nil
			}
		}
	}
	return "", fmt.Errorf("unbalanced braces")
}

var (
	unionRe    = regexp.MustCompile(`^union\s*\{`)
	declNameRe = regexp.MustCompile(`(\w+)\s*(\[[^\]]*\])*\s*$`)
)

// scanUnions finds the unions declared directly in a struct body.
func scanUnions(body string) []cUnion {
	var out []cUnion
	_ = eachTopLevel(body, []string{"union"}, func(i int) (int, error) {
		m := unionRe.FindString(body[i:])
		if m == "" {
			return i + 1, nil
		}
		ub, err := braceBody(body[i+len(m)-1:])
		if err != nil {
			return 0, err // stop: the unions found so far stand
		}
		u := cUnion{first: firstMember(ub[1 : len(ub)-1])}
		rest := body[i+len(m)-1+len(ub):]
		decl := rest
		if semi := strings.IndexByte(rest, ';'); semi >= 0 {
			decl = rest[:semi]
		}
		for _, d := range strings.Split(decl, ",") {
			if d = strings.TrimSpace(d); d != "" {
				u.names = append(u.names, d)
			}
		}
		out = append(out, u)
		return i + len(m) - 1 + len(ub), nil // continue after the union's body
	})
	return out
}

// firstMember returns the declarator name of the first member in a
// struct/union body.
func firstMember(body string) string {
	decls := topLevelDecls(body)
	if len(decls) == 0 {
		return ""
	}
	if m := macroDeclRe.FindStringSubmatch(decls[0]); m != nil {
		return m[1]
	}
	if m := declNameRe.FindStringSubmatch(decls[0]); m != nil {
		return m[1]
	}
	return ""
}

// topLevelDecls splits a struct or union body at its semicolons outside
// nested braces and returns the declarations, trimmed, leaving out empty ones.
func topLevelDecls(body string) []string {
	var decls []string
	depth, start := 0, 0
	for k := 0; k < len(body); k++ {
		switch body[k] {
		case '{':
			depth++
		case '}':
			depth--
		case ';':
			if depth != 0 {
				continue
			}
			if decl := strings.TrimSpace(body[start:k]); decl != "" {
				decls = append(decls, decl)
			}
			start = k + 1
		}
	}
	return decls
}

// memberNames returns the declarator names of the direct members of a
// struct body.
func memberNames(body string) []string {
	names, _, _, _ := members(body)
	return names
}

// nestedBody returns the body of the anonymous struct reached by a member
// path such as "wr.ud" (member ud of union member wr).
func nestedBody(body, path string) (string, error) {
	for _, p := range strings.Split(path, ".") {
		names, inners, _, _ := members(body)
		i := slices.Index(names, p)
		if i < 0 || inners[i] == "" {
			return "", fmt.Errorf("no struct or union member %s in path %s", p, path)
		}
		body = inners[i]
	}
	return body, nil
}

// nestedMembers returns the member names of the anonymous struct reached by
// a member path.
func nestedMembers(body, path string) ([]string, error) {
	b, err := nestedBody(body, path)
	if err != nil {
		return nil, err
	}
	return memberNames(b), nil
}

// members returns the declarator names of the direct members of a struct or
// union body and, for members declared with an inline struct/union body, that
// body (else "") and its kind ("struct" or "union", else ""), and whether
// the member's C type is big-endian (__be16, __be32, __be64).
func members(body string) (names, inners, kinds []string, be []bool) {
	add := func(name, inner, kind string, isBE bool) {
		names = append(names, name)
		inners = append(inners, inner)
		kinds = append(kinds, kind)
		be = append(be, isBE)
	}
	for _, decl := range topLevelDecls(body) {
		// A member declared by a macro, e.g. RDMA_UAPI_PTR(void *, val_ptr)
		// or __DECLARE_FLEX_ARRAY(__u8, data): the name is the last argument.
		if m := macroDeclRe.FindStringSubmatch(decl); m != nil {
			add(m[1], "", "", false)
			continue
		}
		inner, kind := "", ""
		isBE := strings.HasPrefix(decl, "__be")
		if open := strings.IndexByte(decl, '{'); open >= 0 {
			b, err := braceBody(decl[open:])
			if err != nil {
				continue
			}
			inner = b[1 : len(b)-1]
			kind = strings.Fields(decl)[0]
			rest := strings.TrimSpace(decl[open+len(b):])
			if rest == "" {
				add(firstMember(inner), "", "", false)
				continue
			}
			decl = "x " + rest
		}
		for i, d := range strings.Split(decl, ",") {
			if c := strings.IndexByte(d, ':'); c >= 0 {
				d = d[:c] // bit-field width
			}
			if i > 0 {
				d = "x " + d
			}
			if m := declNameRe.FindStringSubmatch(strings.TrimSpace(d)); m != nil {
				add(m[1], inner, kind, isBE)
			}
		}
	}
	return names, inners, kinds, be
}

// bigEndianMembers returns the names of the direct members of a struct body
// whose C type is __be16, __be32 or __be64.
func bigEndianMembers(body string) map[string]bool {
	out := map[string]bool{}
	names, _, _, be := members(body)
	for i, n := range names {
		if be[i] {
			out[n] = true
		}
	}
	return out
}

// anonStructMembers returns the paths of members declared with an anonymous
// struct type (struct { ... } name;), recursively, e.g. "per_transport_caps".
// Members inside unions are not included: cgo -godefs renders a union as a
// byte array (or as its first member), never as the anonymous struct.
func anonStructMembers(body, prefix string) []string {
	var out []string
	names, inners, kinds, _ := members(body)
	for i, n := range names {
		if kinds[i] != "struct" {
			continue
		}
		out = append(out, prefix+n)
		out = append(out, anonStructMembers(inners[i], prefix+n+".")...)
	}
	return out
}
