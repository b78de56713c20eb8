package interop_test

import (
	"fmt"
	"github.com/goverbs/goverbs/test/interop"
	"testing"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/udaddy"
	"github.com/goverbs/goverbs/test/labtest"
)

var udaddyTool = ppTool{"udaddy", udaddy.Main}

const (
	udaddyServerOut = "udaddy: starting server\nreceiving data transfers\nsending replies\n" +
		"data transfers complete\ntest complete\nreturn status 0\n"
	udaddyClientOut = "udaddy: starting client\nudaddy: connecting\ninitiating data transfers\n" +
		"receiving data transfers\ndata transfers complete\ntest complete\nreturn status 0\n"
)

func TestLabUdaddyInterop(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "udaddy", "rdmacm-utils")
	for _, extra := range [][]string{nil, {"-C", "3", "-S", "1024"}, {"-c", "2"}} {
		for _, goServer := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/goServer=%v", extra, goServer), func(t *testing.T) {
				// udaddy's -p is the port space; the port is fixed (7174), so the cases run one after another.
				sArgs := append([]string{"-b", labIP}, extra...)
				cArgs := append([]string{"-s", labIP}, extra...)
				pairTool(t, udaddyTool, 7174, sArgs, cArgs, goServer, udaddyServerOut, udaddyClientOut)
			})
		}
	}
}

func TestLabUdaddyErrorsMatchC(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "udaddy", "rdmacm-utils")
	for _, args := range [][]string{
		{"-x"},
		{"-s", labIP},               // no listener: UNREACHABLE 1
		{"-s", labIP, "-S", "2048"}, // larger than the active MTU
	} {
		t.Run(fmt.Sprint(args), func(t *testing.T) {
			c := cPP(udaddyTool, args)
			g := goPP(udaddyTool, args)
			if c.rc != g.rc || c.out != g.out || c.err != g.err {
				t.Errorf("C: rc %d\n%s%s\nGo: rc %d\n%s%s", c.rc, c.out, c.err, g.rc, g.out, g.err)
			}
		})
	}
}
