package uverbs_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/uverbs"
)

// Listing devices and their state; devices that exist but cannot be opened from here carry Err.
func ExampleDevices() {
	devs, err := uverbs.Devices()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, d := range devs {
		if d.Err != nil {
			fmt.Printf("%s: unusable: %v\n", d.Name, d.Err)
			continue
		}
		fmt.Printf("%s (%v, node GUID %v) at %s\n", d.Name, d.DriverID, d.NodeGUID, d.DevPath)
	}
}

// Opening a device and querying it.
func ExampleOpen() {
	ctx, err := uverbs.Open("rxe0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	attr, err := ctx.QueryDevice()
	if err != nil {
		fmt.Println(err)
		return
	}
	port, _ := ctx.QueryPort(1)
	fmt.Println(attr.MaxQP, port.State, port.ActiveMTU.Bytes())
}

// Registering memory, and how errors read.
func ExamplePD_RegMR() {
	ctx, err := uverbs.Open("rxe0")
	if err != nil {
		return
	}
	defer ctx.Close()
	pd, _ := ctx.AllocPD()
	defer pd.Close()
	buf, _ := uverbs.AllocBuffer(1 << 20)
	defer buf.Close()
	// Remote write without local write is refused, as the kernel would.
	_, err = pd.RegMR(buf.Bytes(), uverbs.AccessRemoteWrite)
	fmt.Println(errors.Is(err, unix.EINVAL))
	mr, err := pd.RegMR(buf.Bytes(), uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite)
	if err != nil {
		return
	}
	defer mr.Close()
	fmt.Printf("lkey %#x rkey %#x\n", mr.LKey(), mr.RKey())
}

// Waiting for completions with events instead of polling.
func ExampleCompChannel_GetEvent() {
	ctx, err := uverbs.Open("rxe0")
	if err != nil {
		return
	}
	defer ctx.Close()
	ch, _ := ctx.CreateCompChannel(nil)
	defer ch.Close()
	cq, _ := ctx.CreateCQ(uverbs.CQAttr{CQE: 16, Channel: ch})
	defer cq.Close()
	cq.ReqNotify(false)
	wait, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if got, err := ch.GetEvent(wait); err == nil {
		got.AckEvents(1)
		wcs := make([]uverbs.WC, 16)
		fmt.Println(got.Poll(wcs))
	}
}

// Waiting for completion events in the kernel, as ibv_get_cq_event does, with a deadline for every wait,
// while another goroutine can end the wait (a Close of the caller's own object, a message to send) by Wake.
func ExampleCompChannel_Wake() {
	ctx, err := uverbs.Open("rxe0")
	if err != nil {
		return
	}
	defer ctx.Close()
	ch, _ := ctx.CreateCompChannel(&uverbs.CompChannelOptions{Wait: uverbs.WaitEpoll})
	defer ch.Close()
	cq, _ := ctx.CreateCQ(uverbs.CQAttr{CQE: 16, Channel: ch})
	defer cq.Close()
	go func() {
		time.Sleep(10 * time.Millisecond)
		ch.Wake() // e.g. the owner is closing: the waiter looks again
	}()
	cq.ReqNotify(false)
	ch.SetDeadline(time.Now().Add(time.Second))
	got, err := ch.GetEvent(context.Background())
	switch {
	case errors.Is(err, uverbs.ErrWoken):
		fmt.Println("woken")
	case err == nil:
		got.AckEvents(1)
		wcs := make([]uverbs.WC, 16)
		fmt.Println(got.Poll(wcs))
	}
}
