package labinit

import (
	"errors"
	"os/exec"
	"testing"
)

func TestExitStatus(t *testing.T) {
	tests := []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"exit 255", 255},
		{"kill -9 $$", 137},
		{"kill -TERM $$", 143},
	}
	for _, tt := range tests {
		code, err := exitStatus(exec.Command("/bin/sh", "-c", tt.script).Run())
		if err != nil || code != tt.want {
			t.Errorf("%q: exitStatus = %d, %v; want %d", tt.script, code, err, tt.want)
		}
	}
	other := errors.New("wait failed")
	if _, err := exitStatus(other); !errors.Is(err, other) {
		t.Errorf("exitStatus(non-exit error) = %v, want it passed through", err)
	}
}

func TestEnvValue(t *testing.T) {
	env := []string{"PATH=/a", "HOME=/root", "PATH=/b", "PATHX=/c"}
	for key, want := range map[string]string{"PATH": "/b", "HOME": "/root", "NONE": "default", "PATHX": "/c"} {
		if got := envValue(env, key, "default"); got != want {
			t.Errorf("envValue(%s) = %q, want %q", key, got, want)
		}
	}
}
