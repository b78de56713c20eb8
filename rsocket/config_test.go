package rsocket

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func writeConfig(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, s := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadConfig(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  Options
	}{
		{"none", nil, Options{}},
		{"all", map[string]string{
			"polling_time": "25\n", "inline_default": " 128", "sqsize_default": "+1000",
			"rqsize_default": "512 trailing words", "mem_default": "1048576\n", "wmem_default": "65536",
			"iomap_size": "4", "wake_up_interval": "not read",
		}, Options{PollTime: 26 * time.Microsecond, InlineSize: 128, SQSize: 1000, RQSize: 512,
			RecvBuffer: 1 << 20, SendBuffer: 1 << 16, IOMapSize: 4}},
		// librdmacm's own floors: mem_default at least 1, wmem_default below RS_SNDLOWAT is twice it;
		// zero sizes are the smallest queue and zero inline (not the built-in defaults); polling_time 0
		// still polls until the microsecond clock moves.
		{"zeros", map[string]string{
			"polling_time": "0", "inline_default": "0", "sqsize_default": "0", "rqsize_default": "0",
			"mem_default": "0", "wmem_default": "100",
		}, Options{PollTime: time.Microsecond, InlineSize: -1, SQSize: qpMinSize, RQSize: qpMinSize, RecvBuffer: 1, SendBuffer: 2 * sndLowat}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LoadConfig(writeConfig(t, tc.files))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("LoadConfig = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A bad file is named in a *ConfigError and skipped; the good ones still count.
func TestLoadConfigErrors(t *testing.T) {
	dir := writeConfig(t, map[string]string{"polling_time": "ten", "sqsize_default": "70000", "rqsize_default": "64"})
	o, err := LoadConfig(dir)
	if o != (Options{RQSize: 64}) {
		t.Errorf("Options = %+v, want only RQSize 64", o)
	}
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Path != filepath.Join(dir, "polling_time") || !errors.Is(err, unix.EINVAL) {
		t.Errorf("err = %v, want a *ConfigError for polling_time matching EINVAL", err)
	}
	if !errors.Is(err, unix.ERANGE) {
		t.Errorf("err = %v, want sqsize_default's ERANGE joined", err)
	}
	// A directory where a file should be cannot be read: an error too.
	if err := os.Mkdir(filepath.Join(dir, "mem_default"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(dir); !errors.As(err, &ce) {
		t.Errorf("unreadable mem_default: %v", err)
	}
}

func FuzzParseConfigValue(f *testing.F) {
	for _, s := range []string{"10", " +7\n", "", "x", "99999999999999999999999", "65535", "-1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseConfigValue(b, 1<<16-1)
		if err != nil {
			if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ERANGE) {
				t.Fatalf("%q: untyped error %v", b, err)
			}
			return
		}
		if v > 1<<16-1 {
			t.Fatalf("%q: %d above the limit", b, v)
		}
	})
}
