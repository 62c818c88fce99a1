//go:build !linux

package loopback

import (
	"errors"
	"time"
)

// Rxe is a software RDMA device on a network interface (Linux only).
type Rxe struct {
	// Name is the RDMA device name, e.g. "rxe0".
	Name string
	// Netdev is the network interface it runs on.
	Netdev string
	// Created tells whether EnsureRxe made the link.
	Created bool
}

// EnsureRxe is available on Linux only.
func EnsureRxe(name, netdev string) (*Rxe, error) {
	return nil, errors.New("loopback: Soft-RoCE needs Linux")
}

// EnsureLink is available on Linux only.
func EnsureLink(name, linkType, netdev string) (*Rxe, error) {
	return nil, errors.New("loopback: software RDMA devices need Linux")
}

// WaitActive is available on Linux only.
func (r *Rxe) WaitActive(deadline time.Time) error {
	return errors.New("loopback: Soft-RoCE needs Linux")
}

// Close does nothing off Linux.
func (r *Rxe) Close() error { return nil }
