package rdmatest

import (
	"flag"
	"io"
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest/internal/counters"
	"github.com/rdmabench/rdmabench/rdmatest/internal/engine"
	"github.com/rdmabench/rdmabench/rdmatest/internal/flags"
	"github.com/rdmabench/rdmabench/rdmatest/internal/hist"
	"github.com/rdmabench/rdmabench/rdmatest/internal/units"
)

// Device and flags.

// Dev is an open RDMA device with the port and GID the tests use.
type Dev = engine.Dev

// Options are the settings of the -rdma.* flags, checked.
type Options = flags.Options

// Main is a TestMain for packages of device tests and benchmarks: it
// registers the -rdma.* flags on flag.CommandLine (unless -rdma.dev is
// there already), parses them, prints the benchmark-format configuration
// and Unit lines, runs the tests and benchmarks, prints the Unit lines of
// units registered meanwhile, writes the held .hlog interval, and exits.
//
//	func TestMain(m *testing.M) { rdmatest.Main(m) }
func Main(m *testing.M) { engine.Main(m) }

// RegisterFlags registers on fs every -rdma.* flag of a benchmark or test
// binary (see the package doc), each defaulting to its environment
// variable. Nothing registers them on import.
func RegisterFlags(fs *flag.FlagSet) { flags.Register(fs) }

// RegisterDeviceFlags registers on fs only the flags that choose the
// device, the CPUs of its loops and bound every wait (-rdma.dev,
// -rdma.port, -rdma.gid, -rdma.cpus, -rdma.timeout): what a command that
// serves the device registers.
func RegisterDeviceFlags(fs *flag.FlagSet) { flags.RegisterDevice(fs) }

// Opts returns the options from the flags (and their environment
// fallbacks; without registered flags, the environment and the
// defaults), checked: a bad value is an error naming it and its limit.
func Opts() (Options, error) { return flags.Opts() }

// DeviceOpts returns only the settings of RegisterDeviceFlags, checked;
// the client settings (HlogDir, Peer, PeerToken) stay empty and their
// flags and environment are not read: what a command that serves the
// device uses.
func DeviceOpts() (Options, error) { return flags.DeviceOpts() }

// Required tells whether a device must exist: under CI=true or
// RDMA_REQUIRE=1 a missing device fails tests instead of skipping them
// (RDMA_REQUIRE=0 overrides CI=true).
func Required() bool { return flags.Required() }

// Device opens the device chosen by the flags, checks its port and GID,
// and closes it when tb ends. Without a device tb is skipped, or fails
// when Required. It also registers the leak check (see CheckLeaks).
func Device(tb testing.TB) *Dev { return engine.Device(tb) }

// OpenDev opens the device chosen by the flags without a testing.TB (for
// TestMain and commands); the caller closes it.
func OpenDev() (*Dev, error) { return engine.OpenDev() }

// OpenDevWith opens the device that o (from Opts or DeviceOpts) chooses;
// the caller closes it.
func OpenDevWith(o Options) (*Dev, error) { return engine.OpenDevWith(o) }

// CheckLeaks fails tb if verbs objects created after this call are still
// open when tb ends (after the cleanups registered later), naming each
// object's kind and creation site.
func CheckLeaks(tb testing.TB) { engine.CheckLeaks(tb) }

// Close registers c.Close as a cleanup of tb, failing tb if it errs.
func Close(tb testing.TB, c interface{ Close() error }) { engine.Close(tb, c) }

// Config returns the configuration keys and values of this machine and
// the chosen device (the rdma-* lines of the benchmark output).
func Config() [][2]string { return engine.Config() }

// PrintConfig writes the configuration and Unit lines to w. Without a
// device it writes `rdma-device: none` and the reason on stderr.
func PrintConfig(w io.Writer) { engine.PrintConfig(w) }

// Benchmark runs f as testing.Benchmark does — for an Example or a
// program, where go test -bench does not run it — and writes the result
// to standard error in the benchmark format, with the configuration and
// Unit lines, so that benchstat and the gate read it.
func Benchmark(name string, f func(b *testing.B)) testing.BenchmarkResult {
	return engine.Benchmark(name, f)
}

// Reporting.

// Unit is a custom metric unit with its direction: Better is "higher" or
// "lower".
type Unit = units.Unit

// RegisterUnit adds a custom unit and its direction (better "higher" or
// "lower"), so that its `Unit … better=` line is printed.
func RegisterUnit(name, better string) error { return units.Register(name, better) }

// Units returns every unit with a known direction: the ones rdmatest
// reports and those registered with RegisterUnit.
func Units() []Unit { return units.All() }

// Recorder collects latency samples in an HDR histogram (1 ns … 100 s,
// 3 significant digits).
type Recorder = hist.Recorder

// NewRecorder returns an empty recorder. Creating one allocates about
// 200 KB: do it outside the measured loop.
func NewRecorder() *Recorder { return hist.NewRecorder() }

// ReportLatency reports the recorder's percentiles and maximum on b
// (p50-ns … p99.99-ns, max-ns) and, with -rdma.hlog, writes the
// histogram to <dir>/<benchmark name>.hlog. Call it after the loop.
func ReportLatency(b *testing.B, r *Recorder) { hist.ReportLatency(b, r) }

// ReportRate reports msgs/s: msgs divided by the testing timer's elapsed
// time (b.Elapsed), for a benchmark with no clock of its own around its
// operations (Measure and the standard scenarios use the loop's own
// time). Call it after the loop.
func ReportRate(b *testing.B, msgs int) { engine.ReportRate(b, msgs) }

// FlushHlog writes the .hlog interval still held, if any (Main calls it).
func FlushHlog() error { return hist.FlushHlog() }

// Counters are a port's counter values by file name.
type Counters = counters.Values

// ReadCounters reads a port's sysfs counters and hw_counters.
func ReadCounters(dev string, port int) (Counters, error) { return counters.Read(dev, port) }

// ReadCountersIn is ReadCounters under root, a directory laid out as
// /sys/class/infiniband (a fake tree in tests, or another mount).
func ReadCountersIn(root, dev string, port int) (Counters, error) {
	return counters.ReadIn(root, dev, port)
}

// Delta returns after-before for every counter that grew; counters that
// went backwards or disappeared make it also return an error naming them.
func Delta(before, after Counters) (Counters, error) { return counters.Delta(before, after) }

// Watched tells whether a counter is one rdmabench reports: a word of its
// name (between underscores) speaks of retransmissions, retries,
// sequence errors, RNR, timeouts, duplicates, errors, drops, discards,
// an empty receive buffer or a link going down.
func Watched(name string) bool { return counters.Watched(name) }

// ReportCounters reports the watched counters of delta d as metrics
// "<name>/run".
func ReportCounters(b *testing.B, d Counters) { counters.Report(b, d) }

// Errors.

// StallError is a wait that passed its deadline; it unwraps to
// os.ErrDeadlineExceeded.
type StallError = engine.StallError

// Unsupported is a combination the verb, transport or device does not
// allow; benchmarks skip it with its reason.
type Unsupported = engine.Unsupported

// IsUnsupported tells whether err says the combination cannot run here.
func IsUnsupported(err error) bool { return engine.IsUnsupported(err) }

// ErrPeerAuth is a remote peer (-rdma.peer) that failed to prove it
// knows the token: a different token, or not the peer meant.
var ErrPeerAuth = engine.ErrPeerAuth
