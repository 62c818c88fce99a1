//go:build !(linux && cgo)

package verbs

import "time"

// Loop is a timed loop; without cgo no loop can be built.
type Loop struct{}

// NewPing returns ErrNotSupported without cgo.
func NewPing(PingConfig) (*Loop, error) { return nil, ErrNotSupported }

// NewServe returns ErrNotSupported without cgo.
func NewServe(ServeConfig) (*Loop, error) { return nil, ErrNotSupported }

// NewStream returns ErrNotSupported without cgo.
func NewStream(StreamConfig) (*Loop, error) { return nil, ErrNotSupported }

// Follow returns ErrNotSupported without cgo.
func (*Loop) Follow(*Loop) error { return ErrNotSupported }

// Run returns ErrNotSupported without cgo.
func (*Loop) Run() (LoopResult, error) { return LoopResult{}, ErrNotSupported }

// Stop does nothing without cgo.
func (*Loop) Stop() {}

// StopLoops does nothing without cgo (no loop runs).
func (*Device) StopLoops() {}

// Counts returns ErrNotSupported without cgo.
func (*Loop) Counts([]int64) error { return ErrNotSupported }

// CycleCounts returns ErrNotSupported without cgo.
func (*Loop) CycleCounts([]int64) error { return ErrNotSupported }

// Close does nothing without cgo.
func (*Loop) Close() error { return nil }

// Warm returns ErrNotSupported without cgo.
func (*Loop) Warm(int64) error { return ErrNotSupported }

// Recvs is 0 without cgo.
func (*Loop) Recvs() int64 { return 0 }

// MarkRecvs does nothing without cgo.
func (*Loop) MarkRecvs(int64) {}

// NewRPC returns ErrNotSupported without cgo.
func NewRPC(RPCConfig) (*Loop, error) { return nil, ErrNotSupported }

// Drain returns ErrNotSupported without cgo.
func (*Loop) Drain() error { return ErrNotSupported }

// SettleRecvs returns ErrNotSupported without cgo.
func (*Loop) SettleRecvs(int64, time.Duration) (int64, error) { return 0, ErrNotSupported }

// NewProgram checks cfg and returns ErrNotSupported without cgo.
func NewProgram(cfg ProgramConfig) (*Loop, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return nil, ErrNotSupported
}

// Consumed is 0 without cgo.
func (*Loop) Consumed() int64 { return 0 }

// SetClock returns ErrNotSupported without cgo.
func SetClock(ClockKind) (Clock, error) { return Clock{}, ErrNotSupported }

// LoopClock returns ErrNotSupported without cgo.
func LoopClock() (Clock, error) { return Clock{}, ErrNotSupported }

// ClockCost returns ErrNotSupported without cgo.
func ClockCost(int) (time.Duration, error) { return 0, ErrNotSupported }
