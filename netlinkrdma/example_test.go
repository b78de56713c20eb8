package netlinkrdma_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/netlinkrdma"
)

// GUIDs print the way iproute2's rdma tool and sysfs show them.
func ExampleGUID() {
	g := netlinkrdma.GUID(0x0002c90300a1b2c3)
	fmt.Println(g)
	// Output: 0002:c903:00a1:b2c3
}

// ParseGUID reads what GUID.String prints (and what sysfs node_guid holds).
func ExampleParseGUID() {
	g, err := netlinkrdma.ParseGUID("0002:c903:00a1:b2c3")
	fmt.Printf("%#x %v\n", uint64(g), err)
	_, err = netlinkrdma.ParseGUID("0002:c903:00a1")
	fmt.Println(err)
	// Output:
	// 0x2c90300a1b2c3 <nil>
	// netlinkrdma: GUID "0002:c903:00a1": want four groups of hex digits separated by ':'
}

// Enumerations print iproute2's names; capability masks list theirs, lowest
// bit first.
func ExampleDeviceCaps_Names() {
	fmt.Println(netlinkrdma.NodeTypeCA, netlinkrdma.PortStateActive, netlinkrdma.PhysStateLinkUp)
	fmt.Println(netlinkrdma.DeviceCaps(1<<11 | 1<<15 | 1<<21).Names())
	// Output:
	// ca ACTIVE LINK_UP
	// [SYS_IMAGE_GUID LOCAL_DMA_LKEY MEM_MGT_EXTENSIONS]
}

// Listing devices and finding their uverbs character devices, as
// libibverbs does.
func ExampleConn_Devices() {
	c, err := netlinkrdma.Dial()
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	devs, err := c.Devices()
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range devs {
		cd, err := c.Chardev(d.Index, "uverbs")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: /dev/infiniband/%s (%d:%d) driver %s abi %d\n", d.Name, cd.Name, cd.Major, cd.Minor, cd.DriverID, cd.ABI)
	}
}

// Creating a Soft-RoCE device; the error says what the kernel refused.
func ExampleConn_LinkAdd() {
	c, err := netlinkrdma.Dial()
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	err = c.LinkAdd("rxe1", netlinkrdma.LinkTypeRXE, "eth0")
	switch {
	case errors.Is(err, unix.EEXIST):
		fmt.Println("eth0 already has an rxe device")
	case errors.Is(err, unix.EPERM):
		fmt.Println("needs CAP_NET_ADMIN")
	case err != nil:
		log.Fatal(err)
	}
}

// Resource dumps return typed entries.
func ExampleConn_QPs() {
	c, err := netlinkrdma.Dial()
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	d, err := c.Device("rxe0")
	if err != nil {
		log.Fatal(err)
	}
	qps, err := c.QPs(netlinkrdma.ResQuery{DevIndex: d.Index})
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range qps {
		fmt.Println(q.LQPN, q.Type, q.State, q.PID)
	}
}

func ExampleEventType_String() {
	for _, t := range []netlinkrdma.EventType{netlinkrdma.EventRegister, netlinkrdma.EventNetdevAttach, 9} {
		fmt.Println(t)
	}
	// Output:
	// REGISTER
	// NETDEV_ATTACH
	// UNKNOWN 0x09
}

// Print device events for a minute (Linux 6.12+; see System().Monitor).
func ExampleNewMonitor() {
	m, err := netlinkrdma.NewMonitor()
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		e, err := m.Next(ctx)
		if err != nil {
			return // ctx.Err() when the minute is over
		}
		fmt.Printf("%v %s port %d netdev %s\n", e.Type, e.DevName, e.Port, e.NetdevName)
	}
}
