package cgroup_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/cgroup"
	"github.com/goverbs/goverbs/internal/cgrouptest"
	"github.com/goverbs/goverbs/test/interop"
)

// toolCmd returns the command that runs "goverbs cgroup ARGS..." as a child process: the goverbs binary
// under test, as a user would run it.
func toolCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	return exec.Command(interop.Binary(t), append([]string{"cgroup"}, args...)...)
}

// runTool runs "goverbs cgroup ARGS..." and returns its exit status, stdout and stderr.
func runTool(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := toolCmd(t, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("goverbs cgroup %q: %v", args, err)
		}
		return ee.ExitCode(), out.String(), errb.String()
	}
	return 0, out.String(), errb.String()
}

// hierarchyArgs names h explicitly, as -mount and -version.
func hierarchyArgs(h *cgroup.Hierarchy) []string {
	return []string{"-mount", h.Mountpoint, "-version", strconv.Itoa(int(h.Version))}
}

// showRow runs "show -j -d rxe0 CGROUP" in-process and returns its one row.
func showRow(t *testing.T, hargs []string, path string) map[string]any {
	t.Helper()
	code, out, errs := runTool(t, append(hargs, "show", "-j", "-d", cgrouptest.Device(), path)...)
	if code != 0 {
		t.Fatalf("show: %d %s", code, errs)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("show -j output %q: %v", out, err)
	}
	return rows[0]
}

func wantRow(t *testing.T, row map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if row[k] != v {
			t.Fatalf("show -j: %s = %v, want %v (row %v)", k, row[k], v, row)
		}
	}
}

// testTool is the acceptance test of "goverbs cgroup": a limit it sets stops
// rdma-core's ibv_rc_pingpong run in the cgroup by "goverbs cgroup exec"
// (the server fails at its third object, the CQ), and once unset the same
// command runs a full ping-pong with a client outside the cgroup, charging
// one context and four objects while it runs and nothing after.
func testTool(t *testing.T, h *cgroup.Hierarchy) {
	hargs := hierarchyArgs(h)
	const path = "/goverbs-lab/tool"
	if code, _, errs := runTool(t, append(hargs, "create", path)...); code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	// NewCgroup finds the existing cgroup and removes it at cleanup.
	c := cgrouptest.NewCgroup(t, h, "tool")

	// CGROUP may also be the directory below the mount point
	// ("set /sys/fs/cgroup/goverbs-lab/tool ...").
	if code, _, errs := runTool(t, append(hargs, "set", c.Dir(), cgrouptest.Device(), "hca_object=2")...); code != 0 {
		t.Fatalf("set: %d %s", code, errs)
	}
	if l, err := c.DeviceLimit(cgrouptest.Device()); err != nil || l.HCAObject != 2 || l.HCAHandle != cgroup.Max {
		t.Fatalf("rdma.max after set: %+v, %v", l, err)
	}
	wantRow(t, showRow(t, hargs, path), map[string]any{
		"cgroup": path, "dev": cgrouptest.Device(), "version": float64(h.Version),
		"hca_handle_max": "max", "hca_object_max": float64(2), "hca_handle": float64(0), "hca_object": float64(0),
	})

	// The limit is real: the server gets a PD and an MR, then no CQ.
	cmd := toolCmd(t, append(hargs, "exec", path, "--", "ibv_rc_pingpong", "-d", cgrouptest.Device(), "-p", "18600")...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "Couldn't create CQ") {
		t.Fatalf("ibv_rc_pingpong under hca_object=2: %v, want exit 1 with \"Couldn't create CQ\"; output:\n%s", err, out)
	}
	wantRow(t, showRow(t, hargs, path), map[string]any{"hca_handle": float64(0), "hca_object": float64(0)})

	if code, _, errs := runTool(t, append(hargs, "unset", path, cgrouptest.Device())...); code != 0 {
		t.Fatalf("unset: %d %s", code, errs)
	}
	wantRow(t, showRow(t, hargs, path), map[string]any{"hca_handle_max": "max", "hca_object_max": "max"})

	// Unlimited, the same server runs a full exchange with a client that
	// runs outside the cgroup. stdbuf makes the server's "local address"
	// line reach the pipe while it waits for the client.
	const port = "18601"
	server := toolCmd(t, append(hargs, "exec", path, "--", "stdbuf", "-oL",
		"ibv_rc_pingpong", "-d", cgrouptest.Device(), "-g", "1", "-n", "10", "-p", port)...)
	var serverErr bytes.Buffer
	server.Stderr = &serverErr
	stdout, err := server.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var serverOut []string
	for sc.Scan() {
		serverOut = append(serverOut, sc.Text())
		if strings.Contains(sc.Text(), "local address") {
			break
		}
	}
	if len(serverOut) == 0 || !strings.Contains(serverOut[len(serverOut)-1], "local address") {
		server.Process.Kill()
		server.Wait()
		t.Fatalf("server did not start:\n%s\n%s", strings.Join(serverOut, "\n"), serverErr.String())
	}
	// Waiting for its client, the server holds a context, PD, MR, CQ and QP.
	wantRow(t, showRow(t, hargs, path), map[string]any{"hca_handle": float64(1), "hca_object": float64(4)})

	client := exec.Command("ibv_rc_pingpong", "-d", cgrouptest.Device(), "-g", "1", "-n", "10", "-p", port, "127.0.0.1")
	clientOut, clientErr := client.CombinedOutput()
	for sc.Scan() {
		serverOut = append(serverOut, sc.Text())
	}
	serverWait := server.Wait()
	if clientErr != nil || serverWait != nil {
		t.Fatalf("ping-pong: client %v, server %v\nclient:\n%s\nserver:\n%s\n%s",
			clientErr, serverWait, clientOut, strings.Join(serverOut, "\n"), serverErr.String())
	}
	if !strings.Contains(strings.Join(serverOut, "\n"), "10 iters in") {
		t.Fatalf("server output lacks the iteration summary:\n%s", strings.Join(serverOut, "\n"))
	}
	wantRow(t, showRow(t, hargs, path), map[string]any{"hca_handle": float64(0), "hca_object": float64(0)})

	// "where" from inside the cgroup names it.
	out, err = toolCmd(t, append(hargs, "exec", path, "--", interop.Binary(t), "cgroup", "where")...).CombinedOutput()
	if err != nil {
		t.Fatalf("where: %v\n%s", err, out)
	}
	if want := "version " + strconv.Itoa(int(h.Version)) + " mount " + h.Mountpoint + " cgroup " + path + "\n"; string(out) != want {
		t.Fatalf("where = %q, want %q", out, want)
	}
}
