//go:build !linux

package loopback

// GuestArg, as the first argument of the agent binary, makes it the guest
// side of the runner (Linux only).
const GuestArg = "rdmabench-guest-agent"

// MaybeGuest does nothing off Linux.
func MaybeGuest() {}
