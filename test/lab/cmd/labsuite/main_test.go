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
}
