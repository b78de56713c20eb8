// Package mlx5 is the data path of the mlx5 (ConnectX) provider: send, receive and shared receive queues, completion
// queues, UD address handles, and the driver payloads of the kernel commands that create them.
//
//go:generate go run ./internal/cmd/gengolden -o testdata/golden.txt
package mlx5
