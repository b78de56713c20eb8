package cgroup_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/goverbs/goverbs/cgroup"
	"golang.org/x/sys/unix"
)

func ExampleParseLimits() {
	limits, err := cgroup.ParseLimits([]byte("rxe0 hca_handle=2 hca_object=max \n"))
	if err != nil {
		panic(err)
	}
	for _, l := range limits {
		fmt.Println(l.Device, l.HCAHandle, l.HCAObject)
	}
	// Output: rxe0 2 max
}

func ExampleFormatSetting() {
	line, err := cgroup.FormatSetting("rxe0",
		cgroup.ResourceValue{Resource: cgroup.HCAHandle, Value: 1},
		cgroup.ResourceValue{Resource: cgroup.HCAObject, Value: cgroup.Max})
	if err != nil {
		panic(err)
	}
	fmt.Println(line)
	// Output: rxe0 hca_handle=1 hca_object=max
}

func ExampleChargeError() {
	// What the uverbs package does with the errno of a create PD command.
	err := cgroup.ChargeError(fmt.Errorf("alloc PD on rxe0: %w", unix.EAGAIN), "rxe0", cgroup.HCAObject)
	fmt.Println(errors.Is(err, cgroup.ErrLimitReached), errors.Is(err, unix.EAGAIN))
	fmt.Println(err)
	// Output:
	// true true
	// rdma cgroup limit reached: hca_object on rxe0: alloc PD on rxe0: resource temporarily unavailable
}

// Limit a new cgroup to one verbs context and 16 objects on rxe0, then move
// the current process into it.
func ExampleHierarchy_Create() {
	h, err := cgroup.Find()
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := h.Create("/goverbs/job1")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.SetLimit("rxe0",
		cgroup.ResourceValue{Resource: cgroup.HCAHandle, Value: 1},
		cgroup.ResourceValue{Resource: cgroup.HCAObject, Value: 16}); err != nil {
		fmt.Println(err) // errors.Is(err, unix.ENODEV) if there is no rxe0
		return
	}
	if err := c.AddProcess(os.Getpid()); err != nil {
		fmt.Println(err)
	}
}

// Limits are numbers or "max", which is also what 2147483647 means.
func ExampleParseValue() {
	for _, s := range []string{"16", "max", "2147483647", "-1"} {
		v, err := cgroup.ParseValue(s)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Println(v, v == cgroup.Max)
	}
	// Output:
	// 16 false
	// max true
	// max true
	// error: "-1": not a decimal number or max
}

// One RESOURCE=VALUE argument, as "goverbs cgroup set" takes it.
func ExampleParseResourceValue() {
	rv, err := cgroup.ParseResourceValue("hca_object=max")
	fmt.Println(rv.Resource, rv.Value, err)
	_, err = cgroup.ParseResourceValue("hca_objects=1")
	fmt.Println(err)
	// Output:
	// hca_object max <nil>
	// cgroup: limit "hca_objects=1": unknown resource "hca_objects" (want hca_handle or hca_object)
}

// ParseSetting reads back a line FormatSetting writes.
func ExampleParseSetting() {
	dev, values, err := cgroup.ParseSetting("rxe0 hca_handle=1 hca_object=max")
	fmt.Println(dev, values, err)
	// Output: rxe0 [hca_handle=1 hca_object=max] <nil>
}

// A cgroup is named by its path in the hierarchy or by its directory below
// the mount point; both resolve to the hierarchy path.
func ExampleHierarchy_Resolve() {
	h := cgroup.NewHierarchy(cgroup.V2, "/sys/fs/cgroup")
	for _, p := range []string{"/jobs/a", "jobs/a", "/sys/fs/cgroup/jobs/a", "/sys/fs/cgroup"} {
		cp, err := h.Resolve(p)
		fmt.Println(cp, err)
	}
	// Output:
	// /jobs/a <nil>
	// /jobs/a <nil>
	// /jobs/a <nil>
	// / <nil>
}
