// Command genabi generates package abi from the Linux RDMA uAPI
// headers (<rdma/*.h>). See README.md for the pipeline.
//
// Usage (from anywhere inside the module; go generate ./abi runs it):
//
//	go run ./internal/cmd/genabi [-include /usr/include] [-out DIR] [-header a.h,b.h]
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "genabi:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("genabi", flag.ContinueOnError)
	include := fs.String("include", "/usr/include", "include root holding rdma/*.h (from linux-libc-dev)")
	out := fs.String("out", "", "output directory (default: <module>/abi)")
	only := fs.String("header", "", "comma-separated header names to generate (default: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	if *out == "" {
		*out = filepath.Join(root, "abi")
	}
	g := generator{include: *include, input: filepath.Join(root, "internal", "cmd", "genabi", "input")}
	for _, spec := range headers {
		if *only != "" && !contains(strings.Split(*only, ","), spec.name) {
			continue
		}
		src, err := g.generate(spec)
		if err != nil {
			return fmt.Errorf("%s: %w", spec.name, err)
		}
		if err := os.WriteFile(filepath.Join(*out, outputName(spec.name)), src, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// generator turns one header into one Go file.
type generator struct {
	include string // include root; headers are read from <include>/rdma
	input   string // directory of the hand-written godefs preamble files
}

func (g generator) generate(spec headerSpec) ([]byte, error) {
	text, err := os.ReadFile(filepath.Join(g.include, "rdma", spec.name))
	if err != nil {
		return nil, err
	}
	h, err := scanHeader(string(text))
	if err != nil {
		return nil, err
	}
	consts, err := selectConsts(spec, h)
	if err != nil {
		return nil, err
	}
	preamble, err := os.ReadFile(filepath.Join(g.input, inputBase(spec.name)+".go"))
	if err != nil {
		return nil, err
	}
	src, err := godefsInput(preamble, h, consts)
	if err != nil {
		return nil, err
	}
	raw, err := runGodefs(src, inputBase(spec.name)+".go", g.include)
	if err != nil {
		return nil, err
	}
	parsed, err := parseGodefs(raw)
	if err != nil {
		return nil, err
	}
	return render(spec, h, consts, parsed)
}

// selectConsts applies the header's allow-list. A constant that matches no
// prefix and is not explicitly skipped is an error, so that a header update
// cannot drop names silently.
func selectConsts(spec headerSpec, h *cHeader) ([]cConst, error) {
	var out, unknown []cConst
	seen := map[string]bool{}
	for _, c := range h.consts {
		if seen[c.name] {
			continue // e.g. a #define that re-states an enum member
		}
		seen[c.name] = true
		if _, ok := spec.skip[c.name]; ok {
			continue
		}
		matched := false
		for _, p := range spec.prefixes {
			matched = matched || strings.HasPrefix(c.name, p)
		}
		if !matched {
			unknown = append(unknown, c)
			continue
		}
		out = append(out, c)
	}
	if len(unknown) > 0 {
		var names []string
		for _, c := range unknown {
			names = append(names, c.name+" ("+c.group+")")
		}
		return nil, fmt.Errorf("constants matching no prefix of the allow-list (add a prefix or a skip entry in config.go): %s",
			strings.Join(names, ", "))
	}
	return out, nil
}

// outputName maps a header to its Go file: ib_user_verbs.h ->
// zib_user_verbs_linux.go, mlx5-abi.h -> zmlx5_abi_linux.go.
func outputName(header string) string { return "z" + inputBase(header) + "_linux.go" }

// moduleRoot finds the directory holding go.mod, starting at the working
// directory, so the command works both from the module root and from
// go generate in abi.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if strings.TrimSpace(x) == s {
			return true
		}
	}
	return false
}
