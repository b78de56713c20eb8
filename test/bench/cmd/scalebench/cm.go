package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/goverbs/goverbs/test/bench/benchlab"
	"github.com/goverbs/goverbs/test/interop"
	"github.com/goverbs/goverbs/test/lab"
)

// cmtimeRow is a step of cmtime's table: name, total ms, max ms, min us, us / conn.
var cmtimeRow = regexp.MustCompile(`^([a-z ]{13}):\s+(-?\d+\.\d\d)\s+(-?\d+\.\d\d)\s+(-?\d+\.\d\d)\s+(-?\d+\.\d\d)$`)

// runCM runs a cmtime server and a client of one side with -c n. The figures, per connection in thousands of
// instructions: machine, what the whole machine executed over the client's run (both processes, the kernel's
// threads and softirq work: rdma_cm's and rxe's work lands on either side or on neither), the figure that
// says what a connection costs; cpu, what both processes executed (user and kernel, every thread) from the
// client's start to its end, its start-up included; clock, the guest clock over the client's run (also the kernel threads'
// work and the idle time skipped to the next timer); and the client's table — each step's mean per-connection
// time ("bind addr" is not run: no -b) and their sum ("steps"). The steps are wall time on one vCPU where the
// server's threads run in between, so they say where the client waited, not what each call cost.
func runCM(r runner, n int) (map[string]float64, error) {
	port := strconv.Itoa(r.port)
	srv := r.toolCmd("cmtime", "-p", port)
	var sout bytes.Buffer
	srv.Stdout, srv.Stderr = &sout, &sout
	if err := srv.Start(); err != nil {
		return nil, err
	}
	defer func() {
		// SIGTERM first: a goverbs server writes its CPU profile then (scalebench -profile).
		srv.Process.Signal(syscall.SIGTERM)
		t := time.AfterFunc(10*time.Second, func() { srv.Process.Kill() })
		srv.Wait()
		t.Stop()
	}()
	if err := interop.WaitCMListening(lab.Device, uint16(r.port), time.Minute); err != nil {
		return nil, fmt.Errorf("cmtime server: %v\n%s", err, sout.Bytes())
	}
	s0, err := cpuOf([]int{srv.Process.Pid})
	if err != nil {
		return nil, err
	}
	cli := r.toolCmd("cmtime", "-s", benchlab.LabIP, "-p", port, "-c", strconv.Itoa(n))
	m0, err := machineNS()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	out, err := cli.CombinedOutput()
	took := time.Since(start)
	m1, merr := machineNS()
	if err != nil {
		return nil, fmt.Errorf("cmtime client: %v\n%s\nserver:\n%s", err, out, sout.Bytes())
	}
	s1, err := cpuOf([]int{srv.Process.Pid})
	if err != nil {
		return nil, err
	}
	if merr != nil {
		return nil, merr
	}
	ru, ok := cli.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return nil, fmt.Errorf("no resource usage of the cmtime client")
	}
	client := float64(ru.Utime.Nano() + ru.Stime.Nano())
	kv := map[string]float64{
		"cpu":     (client + s1 - s0) / float64(n) / 1000, // guest µs = k-inst, as the steps
		"clock":   float64(took.Nanoseconds()) / float64(n) / 1000,
		"machine": (m1 - m0) / float64(n) / 1000,
	}
	steps := parseCmtime(string(out))
	if len(steps) < 8 { // 7 steps and their sum: "bind addr" only with -b
		return nil, fmt.Errorf("cmtime client printed %d steps, want 7:\n%s", max(0, len(steps)-1), out)
	}
	for k, v := range steps {
		kv[k] = v
	}
	return kv, nil
}

// parseCmtime reads cmtime's table: each step's us / conn by its name with '_' for spaces, and their sum as
// "steps".
func parseCmtime(out string) map[string]float64 {
	kv := map[string]float64{}
	for _, l := range strings.Split(out, "\n") {
		m := cmtimeRow.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[5], 64)
		if err != nil {
			continue
		}
		kv[strings.ReplaceAll(strings.TrimSpace(m[1]), " ", "_")] = v
		kv["steps"] += v
	}
	return kv
}
