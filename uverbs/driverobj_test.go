package uverbs

import (
	"errors"
	"os"
	"testing"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// The driver-object hook issues the provider's command on the context's fd, counts only what succeeded, and
// reports what the provider left behind. (Creates that succeed and the cgroup mapping need a device: the mlx5
// provider's tests drive the hook's contract with a fake, the lab with a kernel.)
func TestDriverObjectHook(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := &Context{dev: Device{Name: "mlx5_0"}, fd: int(f.Fd())}
	cmd := rawcmd.New(abi.MLX5_IB_OBJECT_UAR, abi.MLX5_IB_METHOD_UAR_OBJ_ALLOC, abi.RDMA_DRIVER_MLX5)
	cmd.NewObject(abi.MLX5_IB_ATTR_UAR_OBJ_ALLOC_HANDLE)
	// /dev/null answers any ioctl with ENOTTY (qemu-user with ENOSYS): a refusal, returned as is, not counted.
	if err := c.driverObject(cmd, true); !errors.Is(err, unix.ENOTTY) && !errors.Is(err, unix.ENOSYS) {
		t.Errorf("create on /dev/null: %v", err)
	}
	if err := c.drvObjs.leaked(); err != nil {
		t.Errorf("a failed create was counted: %v", err)
	}
	c.drvObjs.live.Add(2)
	if err := c.drvObjs.leaked(); err == nil {
		t.Error("two live driver objects not reported")
	}
}
