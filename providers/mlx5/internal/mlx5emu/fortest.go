package mlx5emu

// TB is the part of testing.TB that NewForTest uses (the package does not
// import testing: nothing but tests use it, but it is an ordinary package).
type TB interface {
	Helper()
	Fatal(args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
}

// NewForTest is New for the driver's tests: it fails t when New fails and,
// when t ends, reports each protocol violation the device recorded as an
// error of t before closing the device.
func NewForTest(t TB, opts Options) *Device {
	t.Helper()
	dev, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, e := range dev.Errors() {
			t.Errorf("emulated device: %v", e)
		}
		dev.Close()
	})
	return dev
}
