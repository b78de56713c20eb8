package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// godefsInput builds the complete cgo -godefs input for one header: the
// hand-written preamble file input/<base>.go (C #includes and commentary)
// plus the declarations derived from the header scan:
//
//   - a C typedef and a Go type for each anonymous-struct union member that
//     gets an accessor (see unions in config.go),
//   - "type CamelName C.struct_tag" for every top-level struct and union,
//   - "NAME = C.NAME" for every selected constant, and
//   - "SizeofCamelName = C.sizeof_struct_tag" for every type.
//
// Generating these lines instead of typing them is what guarantees that no
// struct or enum member of the header is missed.
func godefsInput(preamble []byte, h *cHeader, consts []cConst) ([]byte, error) {
	const marker = "*/\nimport \"C\""
	at := bytes.Index(preamble, []byte(marker))
	if at < 0 {
		return nil, fmt.Errorf("preamble lacks the C comment directly followed by import \"C\"")
	}
	var typedefs, types, sizes bytes.Buffer
	for _, r := range h.records {
		fmt.Fprintf(&types, "type %s C.%s_%s\n", camel(r.tag), r.kind, r.tag)
		fmt.Fprintf(&sizes, "\tSizeof%s = C.sizeof_%s_%s\n", camel(r.tag), r.kind, r.tag)
		for _, n := range nestedTypes(r) {
			fmt.Fprintf(&typedefs, "typedef __typeof__(((%s %s *)0)->%s) %s;\n", r.kind, r.tag, n.path, n.cName)
			fmt.Fprintf(&types, "type %s C.%s\n", n.goName, n.cName)
			fmt.Fprintf(&sizes, "\tSizeof%s = C.sizeof_%s\n", n.goName, n.cName)
		}
	}
	var b bytes.Buffer
	b.Write(preamble[:at])
	b.Write(typedefs.Bytes())
	b.Write(preamble[at:])
	b.WriteString("\n")
	b.Write(types.Bytes())
	if len(consts) > 0 {
		b.WriteString("\nconst (\n")
		for _, c := range consts {
			fmt.Fprintf(&b, "\t%s = C.%s\n", c.name, c.name)
		}
		b.WriteString(")\n")
	}
	if sizes.Len() > 0 {
		b.WriteString("\nconst (\n")
		b.Write(sizes.Bytes())
		b.WriteString(")\n")
	}
	return b.Bytes(), nil
}

// runGodefs runs "go tool cgo -godefs" on src in a scratch directory.
// include is passed to the C compiler as -I when it is not the compiler's
// default (/usr/include), so that a header tree elsewhere can be used.
func runGodefs(src []byte, name, include string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "genabi")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, name)
	if err := os.WriteFile(file, src, 0o644); err != nil {
		return nil, err
	}
	args := []string{"tool", "cgo", "-godefs", "-objdir", dir, "--"}
	if include != "/usr/include" {
		args = append(args, "-I"+include)
	}
	args = append(args, name)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// nestedType is an anonymous C struct that needs a Go name: a member
// declared as "struct { ... } name;" (cgo would call it _Ctype_struct___N),
// or a union member exposed by an accessor (config.go). The generator
// declares "typedef __typeof__(((struct parent *)0)->path) cName;" and
// "type goName C.cName"; cgo -godefs then uses goName for the anonymous
// struct wherever it appears.
type nestedType struct {
	path, cName, goName string
	union               *unionMember // set for union accessor targets
}

func nestedTypes(r cRecord) []nestedType {
	var out []nestedType
	for _, p := range anonStructMembers(r.body, "") {
		c := r.tag + "_" + strings.ReplaceAll(p, ".", "_")
		out = append(out, nestedType{path: p, cName: c, goName: camel(c)})
	}
	for _, u := range unionsOf(r.tag) {
		if u.goType == "" {
			c := r.tag + "_" + lastPart(u.member)
			out = append(out, nestedType{path: u.member, cName: c, goName: camel(c), union: &u})
		}
	}
	return out
}

// target is the Go type an accessor points to.
func (u unionMember) target() string {
	if u.goType != "" {
		return u.goType
	}
	return camel(u.parent + "_" + lastPart(u.member))
}

func unionsOf(tag string) []unionMember {
	var out []unionMember
	for _, u := range unions {
		if u.parent == tag {
			out = append(out, u)
		}
	}
	return out
}

func lastPart(path string) string {
	return path[strings.LastIndexByte(path, '.')+1:]
}

// camel converts a C identifier to the Go spelling required by
// docs/DESIGN.md: each '_'-separated word capitalised and joined
// (ib_uverbs_ioctl_hdr -> IbUverbsIoctlHdr, object_id -> ObjectId).
// Leading underscores are dropped; the words' other letters are unchanged.
func camel(s string) string {
	var b strings.Builder
	for _, w := range strings.Split(s, "_") {
		if w == "" {
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}
