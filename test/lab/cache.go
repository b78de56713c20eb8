package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// CacheDir returns the directory where the lab keeps the kernel package,
// the unpacked kernel, the init binary and initramfs images:
// $GOVERBS_LAB_CACHE, else $XDG_CACHE_HOME/goverbs-lab, else
// ~/.cache/goverbs-lab.
func CacheDir() (string, error) {
	if d := os.Getenv("GOVERBS_LAB_CACHE"); d != "" {
		return filepath.Abs(d)
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "goverbs-lab"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("lab: find cache directory: %w (set GOVERBS_LAB_CACHE)", err)
	}
	return filepath.Join(home, ".cache", "goverbs-lab"), nil
}

// lockCache takes an exclusive lock on the cache directory, so that only
// one process downloads or builds at a time. The returned function releases
// it. Readers never lock: everything in the cache appears by rename.
func lockCache(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: create cache %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lab: lock cache: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lab: lock cache %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory and a rename, so readers see either nothing or all of it.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// pruneAge is how long an unused init binary or initramfs stays cached.
const pruneAge = 3 * 24 * time.Hour

// pruneDir removes the files in dir that were neither used (atime, as
// relatime keeps it to within a day) nor written for pruneAge, except keep.
// Other source trees sharing the cache may still use recent ones.
func pruneDir(dir, keep string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		if p == keep || unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		last := time.Unix(st.Mtim.Unix())
		if at := time.Unix(st.Atim.Unix()); at.After(last) {
			last = at
		}
		if time.Since(last) > pruneAge {
			os.Remove(p)
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
