// Package kmod finds Linux kernel modules in an unpacked kernel package,
// reads their dependencies from the .modinfo ELF section, and orders them so
// that every module comes after the modules it depends on.
//
// It does what depmod and modprobe do for the few modules the lab needs,
// without needing modules.dep (Debian generates that file at install time,
// so an unpacked .deb does not have it).
package kmod

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Modinfo is the parsed content of a module's .modinfo section.
type Modinfo struct {
	// Fields holds every key with its values, in section order.
	Fields map[string][]string
}

// Get returns the first value of key, or "".
func (m Modinfo) Get(key string) string {
	if v := m.Fields[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Name is the module's name as the kernel knows it ("name=" field).
func (m Modinfo) Name() string { return m.Get("name") }

// Depends lists the modules this one needs loaded first (the "depends="
// field, comma separated, possibly empty).
func (m Modinfo) Depends() []string {
	var deps []string
	for _, v := range m.Fields["depends"] {
		for _, d := range strings.Split(v, ",") {
			if d = strings.TrimSpace(d); d != "" {
				deps = append(deps, Normalize(d))
			}
		}
	}
	return deps
}

// ParseModinfo parses the raw bytes of a .modinfo section: a sequence of
// NUL-terminated "key=value" strings, possibly padded with extra NULs.
// Entries without "=" are rejected.
func ParseModinfo(section []byte) (Modinfo, error) {
	m := Modinfo{Fields: map[string][]string{}}
	for len(section) > 0 {
		var entry []byte
		if i := bytes.IndexByte(section, 0); i >= 0 {
			entry, section = section[:i], section[i+1:]
		} else {
			entry, section = section, nil
		}
		if len(entry) == 0 {
			continue // alignment padding
		}
		k, v, ok := bytes.Cut(entry, []byte("="))
		if !ok || len(k) == 0 {
			return Modinfo{}, fmt.Errorf("parse modinfo: malformed entry %q", entry)
		}
		key := string(k)
		m.Fields[key] = append(m.Fields[key], string(v))
	}
	return m, nil
}

// ReadModinfoELF reads the .modinfo section of an uncompressed module image.
func ReadModinfoELF(image []byte) (Modinfo, error) {
	f, err := elf.NewFile(bytes.NewReader(image))
	if err != nil {
		return Modinfo{}, fmt.Errorf("read modinfo: %w", err)
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return Modinfo{}, errors.New("read modinfo: no .modinfo section")
	}
	data, err := sec.Data()
	if err != nil {
		return Modinfo{}, fmt.Errorf("read modinfo: section data: %w", err)
	}
	return ParseModinfo(data)
}

// Normalize maps a module name to the kernel's canonical spelling: dashes
// and underscores are interchangeable, the kernel uses underscores.
func Normalize(name string) string { return strings.ReplaceAll(name, "-", "_") }

// moduleSuffixes are the file name endings of kernel modules, compressed or not.
var moduleSuffixes = []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"}

// nameOf returns the normalized module name of a module file path, or "" if
// the path is not a module.
func nameOf(path string) string {
	base := filepath.Base(path)
	for _, s := range moduleSuffixes {
		if strings.HasSuffix(base, s) {
			return Normalize(strings.TrimSuffix(base, s))
		}
	}
	return ""
}

// Tree is the module tree of one kernel: /lib/modules/<version>.
type Tree struct {
	Dir     string            // the /lib/modules/<version> directory
	files   map[string]string // normalized name -> path
	builtin map[string]bool   // normalized names compiled into the kernel
}

// OpenTree indexes the modules under dir (a lib/modules/<version>
// directory) and reads dir/modules.builtin.
func OpenTree(dir string) (*Tree, error) {
	t := &Tree{Dir: dir, files: map[string]string{}, builtin: map[string]bool{}}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			if n := nameOf(path); n != "" {
				if _, dup := t.files[n]; !dup {
					t.files[n] = path
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index modules in %s: %w", dir, err)
	}
	f, err := os.Open(filepath.Join(dir, "modules.builtin"))
	if err != nil {
		return nil, fmt.Errorf("index modules in %s: %w", dir, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if n := nameOf(strings.TrimSpace(sc.Text())); n != "" {
			t.builtin[n] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s/modules.builtin: %w", dir, err)
	}
	return t, nil
}

// Builtin reports whether the module is compiled into the kernel.
func (t *Tree) Builtin(name string) bool { return t.builtin[Normalize(name)] }

// Path returns the file of a loadable module.
func (t *Tree) Path(name string) (string, bool) {
	p, ok := t.files[Normalize(name)]
	return p, ok
}

// Image returns the uncompressed module image. Compressed modules are
// decompressed with the xz, zstd or gzip tool.
func (t *Tree) Image(name string) ([]byte, error) {
	p, ok := t.Path(name)
	if !ok {
		return nil, fmt.Errorf("read module %s: not found in %s", name, t.Dir)
	}
	var tool string
	switch {
	case strings.HasSuffix(p, ".ko"):
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read module %s: %w", name, err)
		}
		return b, nil
	case strings.HasSuffix(p, ".xz"):
		tool = "xz"
	case strings.HasSuffix(p, ".zst"):
		tool = "zstd"
	case strings.HasSuffix(p, ".gz"):
		tool = "gzip"
	}
	if _, err := exec.LookPath(tool); err != nil {
		return nil, fmt.Errorf("read module %s: %s is compressed and %s is not installed: apt-get install %s", name, p, tool, map[string]string{"xz": "xz-utils", "zstd": "zstd", "gzip": "gzip"}[tool])
	}
	var stderr bytes.Buffer
	cmd := exec.Command(tool, "-dc", p)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("read module %s: %s -dc %s: %w: %s", name, tool, p, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Module is one module to load, with its uncompressed image.
type Module struct {
	Name  string
	Image []byte
}

// Closure returns the modules needed to load roots, dependencies first,
// each with its image, stripped of its signature (see StripSignature). Built-in modules are skipped silently; a module that
// is neither built in nor present is an error.
func (t *Tree) Closure(roots []string) ([]Module, error) {
	images := map[string][]byte{}
	deps := func(name string) ([]string, bool, error) {
		if t.Builtin(name) {
			return nil, true, nil
		}
		img, err := t.Image(name)
		if err != nil {
			return nil, false, err
		}
		mi, err := ReadModinfoELF(img)
		if err != nil {
			return nil, false, fmt.Errorf("module %s: %w", name, err)
		}
		if img, err = StripSignature(img); err != nil {
			return nil, false, fmt.Errorf("module %s: %w", name, err)
		}
		images[name] = img
		return mi.Depends(), false, nil
	}
	order, err := Order(roots, deps)
	if err != nil {
		return nil, err
	}
	mods := make([]Module, len(order))
	for i, n := range order {
		mods[i] = Module{Name: n, Image: images[n]}
	}
	return mods, nil
}

// DepsFunc returns the direct dependencies of a module, or builtin=true for
// a module compiled into the kernel (which is then left out of the order).
type DepsFunc func(name string) (deps []string, builtin bool, err error)

// Order returns the loadable modules needed for roots, in an order where
// every module follows its dependencies. Roots keep their relative order
// where the dependencies allow it, and each module appears once. A
// dependency cycle is an error.
func Order(roots []string, deps DepsFunc) ([]string, error) {
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var order []string
	var visit func(name string, path []string) error
	visit = func(name string, path []string) error {
		name = Normalize(name)
		switch state[name] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("order modules: dependency cycle %s -> %s", strings.Join(path, " -> "), name)
		}
		state[name] = visiting
		ds, builtin, err := deps(name)
		if err != nil {
			return fmt.Errorf("order modules: %w", err)
		}
		for _, d := range ds {
			if err := visit(d, append(path, name)); err != nil {
				return err
			}
		}
		state[name] = done
		if !builtin {
			order = append(order, name)
		}
		return nil
	}
	for _, r := range roots {
		if err := visit(r, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// sigMarker ends a module image that carries an appended signature.
const sigMarker = "~Module signature appended~\n"

// sigInfoLen is the size of struct module_signature, which sits between
// the signature and the marker; its last four bytes are the signature
// length, big endian.
const sigInfoLen = 12

// StripSignature returns the module image without its appended signature
// (the image itself if it has none). The kernel loads an unsigned module
// (tainting itself) unless module.sig_enforce is set, and skips the hash
// and RSA check, which is slow under emulation. A malformed trailer is an
// error.
func StripSignature(image []byte) ([]byte, error) {
	if !bytes.HasSuffix(image, []byte(sigMarker)) {
		return image, nil
	}
	end := len(image) - len(sigMarker)
	if end < sigInfoLen {
		return nil, errors.New("strip module signature: truncated signature info")
	}
	info := image[end-sigInfoLen : end]
	sigLen := int(info[8])<<24 | int(info[9])<<16 | int(info[10])<<8 | int(info[11])
	start := end - sigInfoLen - sigLen
	if sigLen <= 0 || start < 0 {
		return nil, fmt.Errorf("strip module signature: bad signature length %d", sigLen)
	}
	return image[:start], nil
}
