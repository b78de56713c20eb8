package cgroup_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"github.com/goverbs/goverbs/cgroup"
	"golang.org/x/sys/unix"
)

// rawContext is a verbs context opened with the kernel's legacy write()
// commands, just enough to charge the RDMA controller before goverbs' own
// uverbs package exists: GET_CONTEXT charges hca_handle, ALLOC_PD charges
// hca_object. Errors go through cgroup.ChargeError as the uverbs package's
// will. Command numbers and layouts are from <rdma/ib_user_verbs.h>.
type rawContext struct {
	dev     string
	fd      int
	asyncFD int
}

const (
	cmdGetContext = 0 // IB_USER_VERBS_CMD_GET_CONTEXT
	cmdAllocPD    = 3 // IB_USER_VERBS_CMD_ALLOC_PD
	cmdDeallocPD  = 4 // IB_USER_VERBS_CMD_DEALLOC_PD
)

// uverbsPath finds /dev/infiniband/uverbsN of an RDMA device through
// /sys/class/infiniband_verbs/uverbsN/ibdev.
func uverbsPath(dev string) (string, error) {
	dirs, err := filepath.Glob("/sys/class/infiniband_verbs/uverbs*")
	if err != nil {
		return "", err
	}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "ibdev"))
		if err == nil && strings.TrimSpace(string(b)) == dev {
			return "/dev/infiniband/" + filepath.Base(d), nil
		}
	}
	return "", fmt.Errorf("no uverbs device for %s", dev)
}

// write issues one legacy command: header {command, in_words, out_words}
// then the command; resp receives the response through the pointer that every
// command with a response carries first.
func (c *rawContext) write(command uint32, cmd []byte, resp []byte) error {
	buf := make([]byte, 8+len(cmd))
	binary.NativeEndian.PutUint32(buf[0:], command)
	binary.NativeEndian.PutUint16(buf[4:], uint16(len(buf)/4))
	binary.NativeEndian.PutUint16(buf[6:], uint16(len(resp)/4))
	copy(buf[8:], cmd)
	if len(resp) > 0 {
		binary.NativeEndian.PutUint64(buf[8:], uint64(uintptr(unsafe.Pointer(&resp[0]))))
	}
	_, err := unix.Write(c.fd, buf)
	runtime.KeepAlive(resp)
	return err
}

// openRaw opens dev's uverbs file and creates a context on it (one
// hca_handle charge to the calling process's cgroup).
func openRaw(dev string) (*rawContext, error) {
	path, err := uverbsPath(dev)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	c := &rawContext{dev: dev, fd: fd, asyncFD: -1}
	resp := make([]byte, 8) // ib_uverbs_get_context_resp: async_fd, num_comp_vectors
	if err := c.write(cmdGetContext, make([]byte, 8), resp); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("get context on %s: %w", dev, cgroup.ChargeError(err, dev, cgroup.HCAHandle))
	}
	c.asyncFD = int(binary.NativeEndian.Uint32(resp))
	return c, nil
}

// allocPD creates a protection domain (one hca_object charge) and returns
// its handle.
func (c *rawContext) allocPD() (uint32, error) {
	resp := make([]byte, 4) // ib_uverbs_alloc_pd_resp: pd_handle
	if err := c.write(cmdAllocPD, make([]byte, 8), resp); err != nil {
		return 0, fmt.Errorf("alloc PD on %s: %w", c.dev, cgroup.ChargeError(err, c.dev, cgroup.HCAObject))
	}
	return binary.NativeEndian.Uint32(resp), nil
}

// deallocPD destroys a PD (its hca_object is uncharged).
func (c *rawContext) deallocPD(h uint32) error {
	cmd := make([]byte, 4)
	binary.NativeEndian.PutUint32(cmd, h)
	if err := c.write(cmdDeallocPD, cmd, nil); err != nil {
		return fmt.Errorf("dealloc PD %d on %s: %w", h, c.dev, err)
	}
	return nil
}

// Close closes the context; the kernel destroys its objects and uncharges
// everything. Closing again does nothing.
func (c *rawContext) Close() error {
	if c.asyncFD >= 0 {
		unix.Close(c.asyncFD)
		c.asyncFD = -1
	}
	if c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}
