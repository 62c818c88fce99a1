// Package peer is side B of a scenario served to a benchmark on another
// host: it checks a client's Setup against this device's limits, says
// what it would cost, and builds and runs the passive side. It is what
// cmd/rdmapeer serves over its authenticated TCP connection; the
// messages themselves are package rdmatest/oob.
package peer

import (
	"time"

	"github.com/rdmabench/rdmabench/rdmatest"
	"github.com/rdmabench/rdmabench/rdmatest/internal/engine"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
)

// Limits are the device facts a Setup is checked against (Dev.Limits).
type Limits = engine.Limits

// Cost is what a Setup creates on the device: QPs, work requests,
// completion-queue entries, registered and inline memory.
type Cost = engine.Cost

// CheckSetup validates a client's Setup against the device limits before
// anything is created: the message bounds, the role against the verb and
// transport, the scenario's rules and the passive side's own sizes. Every
// error names the value and the limit.
func CheckSetup(req *oob.Setup, lim Limits) error { return engine.CheckSetup(req, lim) }

// SetupCost computes what NewPassive creates for req on a device with
// lim. req must have passed oob validation (its values are bounded).
func SetupCost(req *oob.Setup, lim Limits) Cost { return engine.SetupCost(req, lim) }

// Passive is the passive side of one scenario made for a remote client:
// its memory, QPs connected to the client's, and the role it plays once
// started (SetupOK, Start, CPU, Stop, Abort, Close).
type Passive = engine.Passive

// NewPassive builds the passive side that req asks for on d and connects
// it to the client's QPs. req is checked first (CheckSetup): an invalid
// request is an error before anything is created. Every wait of the side
// is bounded by timeout. The caller closes it.
func NewPassive(d *rdmatest.Dev, req *oob.Setup, timeout time.Duration) (*Passive, error) {
	return engine.NewPassive(d, req, timeout)
}
