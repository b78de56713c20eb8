module github.com/goverbs/goverbs

go 1.26.0

require (
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	golang.org/x/sys v0.49.0
)

// Test only: nettest, the net.Conn conformance suite (rsocket/nettest_lab_test.go).
require golang.org/x/net v0.62.0

require (
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
