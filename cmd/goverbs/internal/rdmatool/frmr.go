package rdmatool

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
	"github.com/goverbs/goverbs/netlinkrdma"
)

// frmrPoolsFunc is "resource show frmr_pools" (iproute2 7.1+): per device,
// no single-object request.
func (t *tool) frmrPoolsFunc() resFunc {
	dump := func() int {
		pools, err := t.be.FRMRPools(t.query(false))
		if err != nil {
			return t.nlError(err)
		}
		return each(pools, t.frmrPoolLine)
	}
	return resFunc{valid: []filterSpec{
		{"dev", false, false}, {"ats", true, false}, {"access_flags", true, false}, {"vendor_key", true, false},
		{"num_dma_blocks", true, false}, {"queue", true, false}, {"in_use", true, false},
		{"max_in_use", true, false}, {"pinned", true, false},
	}, strict: true, dump: dump}
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func (t *tool) frmrPoolLine(f *netlinkrdma.FRMRPool) int {
	k, kh, has := f.Key, f.Key.Present.Has, f.Present.Has
	// iproute2 filters on 32 bits, as it prints them.
	if f.HasKey && (t.filtered("ats", b2u(k.ATS), kh(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ATS)) ||
		t.filtered("access_flags", k.AccessFlags, kh(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ACCESS_FLAGS)) ||
		t.filtered("vendor_key", uint32(k.VendorKey), kh(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_VENDOR_KEY)) ||
		t.filtered("num_dma_blocks", uint32(k.NumDMABlocks), kh(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_NUM_DMA_BLOCKS))) {
		return 0
	}
	if t.filtered("queue", f.QueueHandles, has(abi.RDMA_NLDEV_ATTR_FRMR_POOL_QUEUE_HANDLES)) ||
		t.filtered("in_use", uint32(f.InUse), has(abi.RDMA_NLDEV_ATTR_FRMR_POOL_IN_USE)) ||
		t.filtered("max_in_use", uint32(f.MaxInUse), has(abi.RDMA_NLDEV_ATTR_FRMR_POOL_MAX_IN_USE)) ||
		t.filtered("pinned", f.PinnedHandles, has(abi.RDMA_NLDEV_ATTR_FRMR_POOL_PINNED_HANDLES)) {
		return 0
	}
	p := t.p
	p.openObject("")
	t.printDev(&f.ResBase)
	if f.HasKey {
		ats := "0"
		if k.ATS {
			ats = "1"
		}
		p.str(printAny, "key", "key %s ", fmt.Sprintf("%x:%x:%x:%s", k.VendorKey, k.NumDMABlocks, k.AccessFlags, ats))
		if t.details {
			t.resU32("ats", b2u(k.ATS), kh(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ATS))
			t.resU32("access_flags", k.AccessFlags, kh(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_ACCESS_FLAGS))
			t.resU64("vendor_key", k.VendorKey, kh(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_VENDOR_KEY))
			t.resU64("num_dma_blocks", k.NumDMABlocks, kh(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_NUM_DMA_BLOCKS))
			t.resU64("kernel_vendor_key", k.KernelVendorKey, kh(abi.RDMA_NLDEV_ATTR_FRMR_POOL_KEY_KERNEL_VENDOR_KEY))
		}
	}
	t.resU32("queue", f.QueueHandles, has(abi.RDMA_NLDEV_ATTR_FRMR_POOL_QUEUE_HANDLES))
	t.resU64("in_use", f.InUse, has(abi.RDMA_NLDEV_ATTR_FRMR_POOL_IN_USE))
	t.resU64("max_in_use", f.MaxInUse, has(abi.RDMA_NLDEV_ATTR_FRMR_POOL_MAX_IN_USE))
	t.resU32("pinned", f.PinnedHandles, has(abi.RDMA_NLDEV_ATTR_FRMR_POOL_PINNED_HANDLES))
	t.printDriverTable(&f.ResBase)
	p.newline()
	return 0
}

func (t *tool) resSet() int {
	return t.execCmd([]command{{"", t.resHelp}, {"frmr_pools", t.frmrPoolsSet}}, "resource set command")
}

func (t *tool) frmrPoolsSetHelp() int {
	t.outf("Usage: %s set frmr_pools dev DEV aging AGING_PERIOD\n", progName)
	t.outf("Usage: %s set frmr_pools dev DEV pinned POOL_KEY PINNED_VALUE\n", progName)
	return 0
}

func (t *tool) frmrPoolsSet() int {
	if ret := t.setArgToDevname(); ret != 0 {
		return ret
	}
	return t.execRequireDev(func() int {
		return t.execCmd([]command{
			{"", t.frmrPoolsSetHelp}, {"help", t.frmrPoolsSetHelp}, {"aging", t.frmrPoolsAging},
			{"pinned", t.frmrPoolsPinned},
		}, "resource set frmr_pools command")
	})
}

// getU32 is iproute2's get_u32: the whole string a number in base that
// fits 32 bits.
func getU32(s string, base int) (uint32, bool) {
	v, end, erange := cstd.Strtoul(s, base)
	if s == "" || end == 0 || end != len(s) || erange || v > 0xffffffff {
		return 0, false
	}
	return uint32(v), true
}

func (t *tool) frmrPoolsAging() int {
	if t.noArg() {
		return t.einvalf("Please provide aging period value.\n")
	}
	period, ok := getU32(t.arg(), 10)
	if !ok {
		return t.einvalf("Invalid aging period value: %s\n", t.arg())
	}
	if period == 0 {
		return t.einvalf("Setting the aging period to zero is not supported.\n")
	}
	return t.nlResult(t.be.SetFRMRPoolAging(t.devIdx, period))
}

func (t *tool) frmrPoolsPinned() int {
	if t.noArg() {
		return t.einvalf("Please provide pool key and pinned value.\n")
	}
	keyStr := t.arg()
	t.argInc()
	key, ok := t.decodePoolKey(keyStr)
	if !ok {
		return -int(unix.EINVAL)
	}
	if t.noArg() {
		return t.einvalf("Please provide pinned value.\n")
	}
	pinned, ok := getU32(t.arg(), 10)
	if !ok {
		return t.einvalf("Invalid pinned value: %s\n", t.arg())
	}
	return t.nlResult(t.be.SetFRMRPoolPinned(t.devIdx, key, pinned))
}

// decodePoolKey parses "VENDOR_KEY:NUM_DMA_BLOCKS:ACCESS_FLAGS:ATS" (hex
// fields, as `rdma res show frmr_pools` prints the key); further fields
// must be 0.
func (t *tool) decodePoolKey(s string) (netlinkrdma.FRMRPoolKey, bool) {
	var k netlinkrdma.FRMRPoolKey
	i := 0
	for p := s; p != ""; i++ {
		v, end, erange := cstd.Strtoul(p, 16)
		if erange || end == 0 || (end < len(p) && p[end] != ':') {
			t.errf("Invalid pool key: %s\n", s)
			return k, false
		}
		switch i {
		case 0:
			k.VendorKey = v
		case 1:
			k.NumDMABlocks = v
		case 2:
			if v > 0xffffffff {
				t.errf("Pool key field at index %d value out of range\n", i)
				return k, false
			}
			k.AccessFlags = uint32(v)
		case 3:
			if v > 1 {
				t.errf("Pool key field at index %d value out of range\n", i)
				return k, false
			}
			k.ATS = v == 1
		default:
			if v != 0 {
				t.errf("Unsupported pool attributes passed in pool key\n")
				return k, false
			}
		}
		if end < len(p) {
			p = p[end+1:]
		} else {
			p = ""
		}
	}
	if i < 4 {
		t.errf("Invalid pool key: %s, expected 4 fields\n", s)
		return k, false
	}
	return k, true
}
