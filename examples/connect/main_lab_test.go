package main

import (
	"testing"

	"github.com/goverbs/goverbs/test/labtest"
)

// TestLabMain runs the program against the lab's rxe0 (main exits non-zero through log.Fatal on any error).
func TestLabMain(t *testing.T) {
	labtest.Require(t)
	if labtest.Device() != "rxe0" {
		t.Skipf("the example opens rxe0; the device under test is %s", labtest.Device())
	}
	main()
}
