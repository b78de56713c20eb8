package interop_test

import (
	"fmt"
	"github.com/goverbs/goverbs/test/interop"
	"strings"
	"testing"
	"time"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cmatose"
	"github.com/goverbs/goverbs/test/labtest"
)

var cmatoseTool = ppTool{"ucmatose", cmatose.Main}

const (
	cmatoseServerOut = "cmatose: starting server\ninitiating data transfers\ncompleting sends\n" +
		"receiving data transfers\ndata transfers complete\ncmatose: disconnecting\ndisconnected\n" +
		"test complete\nreturn status 0\n"
	cmatoseClientOut = "cmatose: starting client\ncmatose: connecting\nreceiving data transfers\n" +
		"sending replies\ndata transfers complete\ntest complete\nreturn status 0\n"
)

// pairTool runs a server and a client of tool, one goverbs' (in-process) and one rdma-core's, and requires
// exit status 0 and the given stdout from each.
func pairTool(t *testing.T, tool ppTool, port int, sArgs, cArgs []string, goServer bool, sOut, cOut string) {
	t.Helper()
	pairToolWith(t, cPP, tool, port, sArgs, cArgs, goServer, sOut, cOut)
}

// pairToolWith is pairTool with cRun running rdma-core's side (cPPIn: another release's).
func pairToolWith(t *testing.T, cRun func(ppTool, []string) ppResult, tool ppTool, port int, sArgs, cArgs []string,
	goServer bool, sOut, cOut string) {
	t.Helper()
	s, c, sName, cName := cmPair(t, cRun, tool, port, sArgs, cArgs, goServer, true, 60*time.Second)
	if c.out != cOut || s.out != sOut {
		fatalPair(t, s, c, sName, cName)
	}
}

func TestLabCmatoseInterop(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "ucmatose", "rdmacm-utils")
	port := interop.Port(740)
	for _, extra := range [][]string{nil, {"-c", "2", "-C", "3"}, {"-P", "ib"}, {"-S", "4096", "-C", "5"}, {"-m"}, {"-t", "32", "-a", "14"}} {
		for _, goServer := range []bool{false, true} {
			port++
			p := port
			t.Run(fmt.Sprintf("%v/goServer=%v", extra, goServer), func(t *testing.T) {
				sArgs := append([]string{"-b", labIP, "-p", interop.Itoa(p)}, extra...)
				cArgs := append([]string{"-s", labIP, "-p", interop.Itoa(p)}, extra...)
				sOut, cOut := cmatoseServerOut, cmatoseClientOut
				if len(extra) == 1 && extra[0] == "-m" {
					sOut = strings.Replace(sOut, "cmatose: disconnecting", "migrating to new event channel\ncmatose: disconnecting", 1)
					cOut = strings.Replace(cOut, "test complete", "migrating to new event channel\ntest complete", 1)
				}
				pairTool(t, cmatoseTool, p, sArgs, cArgs, goServer, sOut, cOut)
			})
		}
	}
}

func TestLabCmatoseErrorsMatchC(t *testing.T) {
	labtest.Require(t)
	interop.NeedTool(t, "ucmatose", "rdmacm-utils")
	for _, args := range [][]string{
		{"-x"},
		{"-s", labIP, "-p", interop.Itoa(interop.Port(760))}, // no listener: REJECTED 8, exit 8
	} {
		t.Run(fmt.Sprint(args), func(t *testing.T) {
			c := cPP(cmatoseTool, args)
			g := goPP(cmatoseTool, args)
			if c.rc != g.rc || c.out != g.out || c.err != g.err {
				t.Errorf("C: rc %d\n%s%s\nGo: rc %d\n%s%s", c.rc, c.out, c.err, g.rc, g.out, g.err)
			}
		})
	}
}
