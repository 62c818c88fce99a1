//go:build !linux

package verbs_test

import "time"

// signalStorm does nothing here: there is no device to test off Linux.
func signalStorm(time.Duration) (stop func()) { return func() {} }
