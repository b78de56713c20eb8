module github.com/goverbs/goverbs

go 1.26.0

require golang.org/x/sys v0.49.0

require (
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/vishvananda/netlink v1.3.1 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
)
