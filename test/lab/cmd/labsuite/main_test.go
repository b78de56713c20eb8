package main

import "testing"

func TestCountTests(t *testing.T) {
	out := `=== RUN   TestA
--- PASS: TestA (0.00s)
=== RUN   TestB
    b_test.go:10: needs rereg (the kernel reports EOPNOTSUPP)
--- SKIP: TestB (0.00s)
=== RUN   TestC
=== RUN   TestC/sub
    c_test.go:3: boom
    --- FAIL: TestC/sub (0.01s)
=== RUN   TestC/other
=== PAUSE TestC/other
=== CONT  TestC/other
    c_test.go:9: no XRC
    --- SKIP: TestC/other (0.00s)
--- FAIL: TestC (0.01s)
FAIL
`
	var s Summary
	countTests(&s, "p", []byte(out))
	if s.Run != 5 || s.Passed != 1 || s.Failed != 2 || len(s.Skips) != 2 {
		t.Fatalf("%+v", s)
	}
	if s.Skips[0] != (skip{"p: TestB", "b_test.go:10: needs rereg (the kernel reports EOPNOTSUPP)"}) || s.Skips[1].Reason != "c_test.go:9: no XRC" {
		t.Errorf("skips %+v", s.Skips)
	}
	if len(s.Slowest) != 3 || s.Slowest[0] != (timed{"p: TestC", 0.01}) {
		t.Errorf("slowest %+v, want the three top-level tests, TestC (0.01s) first", s.Slowest)
	}
}

func TestSlowestKeepsTheLongest(t *testing.T) {
	var s Summary
	for i := range 20 {
		s.addTimed(timed{Test: string(rune('a' + i)), Seconds: float64((i * 7) % 20)})
	}
	if len(s.Slowest) != slowestN {
		t.Fatalf("kept %d, want %d", len(s.Slowest), slowestN)
	}
	for i, tt := range s.Slowest {
		if want := float64(19 - i); tt.Seconds != want {
			t.Errorf("slowest[%d] = %+v, want %v s", i, tt, want)
		}
	}
}

func TestFailedOutputKeepsOnlyTheFailure(t *testing.T) {
	out := `=== RUN   TestChatty
    a_test.go:1: lots of log
--- PASS: TestChatty (1.00s)
=== RUN   TestParent
=== RUN   TestParent/ok
    p_test.go:5: fine
=== RUN   TestParent/bad
    p_test.go:7: the reason
        continued
=== NAME  TestParent/ok
    p_test.go:6: late log of a passing subtest
    --- PASS: TestParent/ok (0.10s)
    --- FAIL: TestParent/bad (0.20s)
=== NAME  TestParent
    p_test.go:9: parent log
--- FAIL: TestParent (0.30s)
=== RUN   TestSkipped
    s_test.go:2: needs 6.2
--- SKIP: TestSkipped (0.00s)
=== RUN   TestCrash
    c_test.go:3: before the crash
panic: boom

goroutine 1 [running]:
FAIL	pkg	1.0s
`
	want := `=== RUN   TestParent
=== RUN   TestParent/bad
    p_test.go:7: the reason
        continued
    --- FAIL: TestParent/bad (0.20s)
    p_test.go:9: parent log
--- FAIL: TestParent (0.30s)
=== RUN   TestCrash
    c_test.go:3: before the crash
panic: boom

goroutine 1 [running]:
FAIL	pkg	1.0s
`
	if got := string(failedOutput([]byte(out))); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestFailedOutputWithCount(t *testing.T) {
	out := `=== RUN   TestFlaky
    f_test.go:1: run 1 fails
--- FAIL: TestFlaky (0.10s)
=== RUN   TestFlaky
    f_test.go:1: run 2 passes
--- PASS: TestFlaky (0.10s)
FAIL
`
	want := `=== RUN   TestFlaky
    f_test.go:1: run 1 fails
--- FAIL: TestFlaky (0.10s)
=== RUN   TestFlaky
    f_test.go:1: run 2 passes
FAIL
`
	if got := string(failedOutput([]byte(out))); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
