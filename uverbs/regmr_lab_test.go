package uverbs

import (
	"testing"

	"github.com/goverbs/goverbs/test/labtest"
)

// TestLabRegMRMethod checks that RegMR reaches the kernel through the ioctl method REG_MR where the kernel has
// it (Linux 6.17+) and through the write command elsewhere, and that registrations work either way.
func TestLabRegMRMethod(t *testing.T) {
	labtest.Require(t)
	c, err := Open(labtest.Device())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	buf, err := AllocBuffer(2 * 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	want, name := int32(regMRWrite), "the write command"
	if labtest.Kernel().AtLeast(6, 17) {
		want, name = regMRIoctl, "the ioctl method"
	}
	for i := 0; i < 2; i++ { // the first finds out, the second goes straight there
		mr, err := pd.RegMR(buf.Bytes()[i*4096:][:4096], AccessLocalWrite|AccessRemoteRead)
		if err != nil {
			t.Fatal(err)
		}
		if mr.LKey() == 0 || mr.RKey() == 0 {
			t.Errorf("registration %d: lkey %#x rkey %#x", i, mr.LKey(), mr.RKey())
		}
		if err := mr.Close(); err != nil {
			t.Fatal(err)
		}
		if got := c.regMR.Load(); got != want {
			t.Fatalf("Linux %s: registration %d went through path %d, want %d (%s)", labtest.Kernel(), i, got, want, name)
		}
	}
	t.Logf("Linux %s: RegMR uses %s", labtest.Kernel(), name)
}
