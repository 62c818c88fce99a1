package engine

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/cpus"
	"github.com/rdmabench/rdmabench/rdmatest/internal/flags"
	"github.com/rdmabench/rdmabench/verbs"
)

// Dev is an open device with the port and GID the tests use. The fields
// are named so as not to shadow the Device's Port and GID methods.
type Dev struct {
	*verbs.Device
	PortNum  int // the port the tests use (-rdma.port)
	PortAttr verbs.PortAttr
	GIDEntry verbs.GIDEntry // the GID the tests use (-rdma.gid, or the best)
	Opts     flags.Options

	cpus cpus.Plan // where the timed loops run
	// timed is the wall-clock span of the last timed region a benchmark
	// ran on this device (LastRegion); shared by copies of the Dev.
	timed *lastRegion
}

// lastRegion holds a Dev's last timed region.
type lastRegion struct {
	mu         sync.Mutex
	start, end time.Time
}

// LastRegion is the wall-clock span (time.Now, the system's clock) of
// the last timed region a benchmark ran on d: from just before its loop
// began to just after it ended, without the setup before it or the
// checks and teardown after it. ok is false before any. A fabric agent
// sends it with each run, so that the coordinator can place the runs of
// several nodes on one clock (rdmafabric incast's victim-overlap).
func (d *Dev) LastRegion() (start, end time.Time, ok bool) {
	if d.timed == nil {
		return time.Time{}, time.Time{}, false
	}
	d.timed.mu.Lock()
	defer d.timed.mu.Unlock()
	return d.timed.start, d.timed.end, !d.timed.end.IsZero()
}

// Device opens the device chosen by the flags, checks its port and GID,
// and closes it when tb ends. Without a device, tb is skipped, or fails
// when Required. It also registers the leak check (see CheckLeaks).
func Device(tb testing.TB) *Dev {
	tb.Helper()
	CheckLeaks(tb)
	d, err := OpenDev()
	if err == nil {
		// The benchmark path (not OpenDev's other users: rdmapeer, whose
		// runtime serves many sessions and is not moved, and Config's
		// throwaway open).
		if _, err = d.cpus.ConfineRuntime(); err != nil {
			d.Close()
		}
	}
	if errors.Is(err, verbs.ErrNoDevice) || errors.Is(err, verbs.ErrNotSupported) {
		if flags.Required() {
			fatal(tb, fmt.Sprintf("no RDMA device, and one is required (CI=true or RDMA_REQUIRE=1): %v", err))
		}
		skip(tb, fmt.Sprintf("no RDMA device: %v", err))
	}
	if err != nil {
		fatal(tb, err)
	}
	tb.Cleanup(func() {
		if err := d.Close(); err != nil {
			tb.Errorf("closing %s: %v", d.Name(), err)
		}
	})
	return d
}

// OpenDev opens the device chosen by the flags without a testing.TB (for
// TestMain and commands); the caller closes it.
func OpenDev() (*Dev, error) {
	o, err := flags.Opts()
	if err != nil {
		return nil, err
	}
	return OpenDevWith(o)
}

// OpenDevWith opens the device that o (from flags.Opts or
// flags.DeviceOpts) chooses;
// the caller closes it. Device settings out of range (the port, the GID
// index, the CPU list, the timeout) are refused before anything opens.
func OpenDevWith(o flags.Options) (*Dev, error) {
	if err := o.CheckDevice(); err != nil {
		return nil, err
	}
	if _, err := verbs.SetClock(o.Clock); err != nil {
		return nil, fmt.Errorf("rdmatest: -rdma.clock %v: %w", o.Clock, err)
	}
	var err error
	name := o.Device
	if name == "" {
		if name, err = firstActive(o.Port); err != nil {
			return nil, err
		}
	}
	dev, err := verbs.Open(name)
	if err != nil {
		return nil, err
	}
	d := &Dev{Device: dev, PortNum: o.Port, Opts: o, timed: &lastRegion{}}
	if err := d.setup(); err != nil {
		dev.Close()
		return nil, err
	}
	return d, nil
}

func (d *Dev) setup() error {
	pa, err := d.Device.Port(d.PortNum)
	if err != nil {
		// Attr probes MaxInline: only on this error path, not on every open.
		if n := d.Attr().PhysPortCnt; d.PortNum > n {
			return fmt.Errorf("rdmatest: port %d does not exist on %s (ports 1..%d)", d.PortNum, d.Name(), n)
		}
		return fmt.Errorf("rdmatest: %s port %d: %w", d.Name(), d.PortNum, err)
	}
	if pa.State != verbs.PortActive {
		return fmt.Errorf("rdmatest: %s port %d is %s, not ACTIVE", d.Name(), d.PortNum, pa.State)
	}
	d.PortAttr = pa
	if d.cpus, err = cpus.Choose(d.Name(), d.Opts.CPUs, cpus.Allowed()); err != nil {
		return err
	}
	if d.Opts.GIDIndex >= 0 {
		d.GIDEntry, err = d.Device.GID(d.PortNum, d.Opts.GIDIndex)
	} else {
		d.GIDEntry, err = d.BestGID(d.PortNum)
	}
	if err != nil {
		return fmt.Errorf("rdmatest: %s port %d: %w", d.Name(), d.PortNum, err)
	}
	return nil
}

// firstActive returns the first device whose port is ACTIVE.
func firstActive(port int) (string, error) {
	devs, err := verbs.Devices()
	if err != nil {
		return "", err
	}
	if len(devs) == 0 {
		return "", fmt.Errorf("rdmatest: %w", verbs.ErrNoDevice)
	}
	var states []string
	for _, di := range devs {
		dev, err := verbs.Open(di.Name)
		if err != nil {
			states = append(states, di.Name+": "+err.Error())
			continue
		}
		pa, err := dev.Port(port)
		dev.Close()
		if err == nil && pa.State == verbs.PortActive {
			return di.Name, nil
		}
		states = append(states, fmt.Sprintf("%s port %d: %v %v", di.Name, port, pa.State, err))
	}
	return "", fmt.Errorf("rdmatest: no device has port %d ACTIVE (%v)", port, states)
}

// CheckLeaks fails tb if verbs objects created after this call are still
// open when tb ends (after the cleanups registered later), naming each
// object's kind and creation site.
func CheckLeaks(tb testing.TB) {
	tb.Helper()
	before := map[uint64]bool{}
	for _, o := range verbs.Live() {
		before[o.ID] = true
	}
	tb.Cleanup(func() {
		for _, o := range verbs.Live() {
			if !before[o.ID] {
				tb.Errorf("leaked verbs object: %s", o)
			}
		}
	})
}

// Close registers c.Close as a cleanup of tb, failing tb if it errs.
func Close(tb testing.TB, c interface{ Close() error }) {
	tb.Cleanup(func() {
		if err := c.Close(); err != nil {
			tb.Errorf("closing %T: %v", c, err)
		}
	})
}
