// Package flags holds the settings of a test binary or command: the
// -rdma.* flags and the environment variables they default to
// (RDMA_DEVICE, RDMA_PORT, …, RDMA_REQUIRE), registered on a flag set
// only when asked, read and checked against their limits.
package flags

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/cpus"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/verbs"
)

// Options are the device and measurement settings of a test binary.
type Options struct {
	Device   string
	Port     int
	GIDIndex int // -1: best GID
	Timeout  time.Duration
	HlogDir  string
	// Peer is host:port of a remote rdmapeer that plays side B; empty:
	// both sides on this device.
	Peer      string
	PeerToken string
	// CPUs overrides the CPUs the timed loops are pinned to (a Linux CPU
	// list, requester first); empty: the device's NUMA node.
	CPUs string
	// Clock is the timed loops' clock (verbs.SetClock): auto, the CPU's
	// counter, or CLOCK_MONOTONIC.
	Clock verbs.ClockKind
	// SignalAll makes every latency run do perftest's latency work (see
	// the engine's Spec.SignalAll).
	SignalAll bool
	// Warmup is how many untimed, unrecorded round trips a latency run
	// makes before its samples (0 … MaxWarmup; default 1).
	Warmup int
	// CM says how pairs are connected: through rdma_cm (CMOn), by hand
	// (CMOff), or through rdma_cm only where that is the only way, an
	// iWARP device (CMAuto, the default): see CMMode.Use.
	CM CMMode
}

// CMMode is the -rdma.cm setting: auto, on (true) or off (false).
type CMMode int

// CM modes.
const (
	CMAuto CMMode = iota // rdma_cm on iWARP devices, by hand elsewhere
	CMOn                 // every pair through rdma_cm
	CMOff                // every pair by hand
)

// String returns "auto", "true" or "false" (what Set reads back).
func (m CMMode) String() string {
	switch m {
	case CMOn:
		return "true"
	case CMOff:
		return "false"
	}
	return "auto"
}

// Set reads a boolean (1, true, 0, false, …) or "auto".
func (m *CMMode) Set(s string) error {
	if s == "auto" {
		*m = CMAuto
		return nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want a boolean (1, true, 0 or false) or auto, not %q", s)
	}
	*m = CMOff
	if b {
		*m = CMOn
	}
	return nil
}

// IsBoolFlag lets -rdma.cm alone mean -rdma.cm=true.
func (m *CMMode) IsBoolFlag() bool { return true }

// Use tells whether pairs on a device whose transport is iwarp are
// connected through rdma_cm: always with CMOn, never with CMOff, and
// with CMAuto only on iWARP (whose QPs only the kernel's iw_cm can
// move to RTS).
func (m CMMode) Use(iwarp bool) bool { return m == CMOn || (m == CMAuto && iwarp) }

// parseCMMode is CMMode.Set as a parse function for the environment.
func parseCMMode(s string) (CMMode, error) {
	var m CMMode
	err := m.Set(s)
	return m, err
}

// MaxWarmup bounds -rdma.warmup.
const MaxWarmup = 1000000

// The settings' values: from the environment when the package is
// initialised, then from the command line once a flag set holding them
// (Register, RegisterDevice) is parsed. Nothing is registered on
// import: a program that registers nothing gets the environment and the
// defaults.
var (
	flagDev     = ptr(env("RDMA_DEVICE", ""))
	flagPort    = ptr(envInt("RDMA_PORT", 1))
	flagGID     = ptr(envInt("RDMA_GID_INDEX", -1))
	flagTimeout = ptr(envDuration("RDMA_TIMEOUT", 10*time.Second))
	flagHlog    = ptr(env("RDMA_HLOG_DIR", ""))
	flagPeer    = ptr(env("RDMA_PEER", ""))
	flagCPUs    = ptr(env("RDMA_CPUS", ""))
	flagToken   = ptr(env("RDMA_PEER_TOKEN", ""))
	flagTokenF  = ptr(env("RDMA_PEER_TOKEN_FILE", ""))
	flagSignal  = ptr(envParse("RDMA_SIGNAL_ALL", false, strconv.ParseBool, "a boolean (1, true, 0 or false)"))
	flagWarmup  = ptr(envInt("RDMA_WARMUP", 1))
	flagCM      = ptr(envParse("RDMA_CM", CMAuto, parseCMMode, "a boolean (1, true, 0 or false) or auto"))
	flagClock   = ptr(clockFlag(envParse("RDMA_CLOCK", verbs.ClockAuto, verbs.ParseClockKind, "auto, tsc or monotonic")))
)

// clockFlag is -rdma.clock's value.
type clockFlag verbs.ClockKind

func (c *clockFlag) String() string { return verbs.ClockKind(*c).String() }

func (c *clockFlag) Set(s string) error {
	k, err := verbs.ParseClockKind(s)
	*c = clockFlag(k)
	return err
}

func ptr[T any](v T) *T { return &v }

// RegisterDevice registers on fs the flags that choose the device, the
// CPUs of its loops and bound every wait: -rdma.dev, -rdma.port,
// -rdma.gid, -rdma.cpus and -rdma.timeout, each defaulting to its
// environment variable. It is what a command that serves the device
// (cmd/rdmapeer) needs; benchmarks register them all with Register.
func RegisterDevice(fs *flag.FlagSet) {
	fs.StringVar(flagDev, "rdma.dev", *flagDev, "RDMA device (default: the first device with an ACTIVE port) [RDMA_DEVICE]")
	fs.IntVar(flagPort, "rdma.port", *flagPort, "RDMA port [RDMA_PORT]")
	fs.IntVar(flagGID, "rdma.gid", *flagGID, "GID index; -1 = best GID (RoCE v2, IPv4-mapped) [RDMA_GID_INDEX]")
	fs.StringVar(flagCPUs, "rdma.cpus", *flagCPUs, "CPUs for the timed loops (a CPU list: 2,3 or 4-7, or none: not pinned): a benchmark's requester first, then its passive side; rdmapeer's sessions one each; default: the device's NUMA node [RDMA_CPUS]")
	fs.DurationVar(flagTimeout, "rdma.timeout", *flagTimeout, "deadline for every single wait for a completion or a peer [RDMA_TIMEOUT]")
	fs.Var(flagClock, "rdma.clock", "the timed loops' clock: tsc (the CPU's counter, cntvct on arm64, calibrated against CLOCK_MONOTONIC_RAW), monotonic (clock_gettime), or auto: the counter where the kernel's clocksource is it [RDMA_CLOCK]")
}

// Register registers on fs every flag of a benchmark or test binary: the
// device flags of RegisterDevice and -rdma.hlog, -rdma.peer,
// -rdma.peer-token and -rdma.peer-token-file, each defaulting to its
// environment variable; Opts reads them once fs is parsed. The engine's
// Main calls it on flag.CommandLine. Registering twice on one set
// panics, as every flag redefinition does; sets registered apart share
// the values (Opts reads what the last one parsed set).
func Register(fs *flag.FlagSet) {
	RegisterDevice(fs)
	fs.StringVar(flagHlog, "rdma.hlog", *flagHlog, "directory for HdrHistogram .hlog files, one per benchmark; the latency families' cycle histograms (perftest's sample) go to its cycles/ [RDMA_HLOG_DIR]")
	fs.StringVar(flagPeer, "rdma.peer", *flagPeer, "host:port of an rdmapeer that plays the passive side on another host [RDMA_PEER]")
	fs.StringVar(flagToken, "rdma.peer-token", *flagToken, "shared secret the peer requires (on the command line ps shows it: prefer the file or the environment) [RDMA_PEER_TOKEN]")
	fs.StringVar(flagTokenF, "rdma.peer-token-file", *flagTokenF, "file holding the shared secret the peer requires [RDMA_PEER_TOKEN_FILE]")
	fs.BoolVar(flagSignal, "rdma.signal-all", *flagSignal, "latency runs do perftest's latency work: every WR signaled and awaited, receives reposted per message, on both sides [RDMA_SIGNAL_ALL]")
	fs.IntVar(flagWarmup, "rdma.warmup", *flagWarmup, fmt.Sprintf("untimed round trips before a latency run's samples, 0 … %d [RDMA_WARMUP]", MaxWarmup))
	fs.Var(flagCM, "rdma.cm", "connect every pair through rdma_cm (perftest's -R) instead of by hand: true, false or auto (through rdma_cm on iWARP devices only); UC cannot be connected through rdma_cm and skips [RDMA_CM]")
}

// peerToken is the peer's secret from -rdma.peer-token or the file
// -rdma.peer-token-file names (oob.ReadTokenFile: its first line, as
// rdmapeer reads it), not both.
func peerToken(token, file string) (string, error) {
	switch {
	case file == "":
		return token, nil
	case token != "":
		return "", fmt.Errorf("rdmatest: both -rdma.peer-token and -rdma.peer-token-file %q are set: give one", file)
	}
	t, err := oob.ReadTokenFile(file)
	if err != nil {
		return "", fmt.Errorf("rdmatest: -rdma.peer-token-file: %w", err)
	}
	return t, nil
}

// Required tells whether a device must exist: under CI=true or
// RDMA_REQUIRE=1 (or true) a missing device fails tests instead of
// skipping them. RDMA_REQUIRE=0 (or false) overrides CI=true; make test
// sets it only for its host pass on a machine without RDMA, right before
// it runs the same tests on a device with RDMA_REQUIRE=1. A value that is
// no boolean requires (Opts reports it): a typo never turns failures into
// skips.
func Required() bool {
	if v := os.Getenv("RDMA_REQUIRE"); v != "" {
		b, err := strconv.ParseBool(v)
		return b || err != nil
	}
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// MaxTimeout bounds -rdma.timeout, the deadline of every single wait.
const MaxTimeout = 24 * time.Hour

// envErrs collects malformed environment values, reported by Opts.
var envErrs []error

// Opts returns the options from the flags (and their environment
// fallbacks; without registered flags, the environment and the
// defaults), checked: a malformed environment value or an out-of-range
// setting is an error naming the value and the limit.
func Opts() (Options, error) {
	o, errs := deviceOpts()
	o.HlogDir, o.Peer = *flagHlog, *flagPeer
	o.SignalAll, o.Warmup, o.CM = *flagSignal, *flagWarmup, *flagCM
	if o.Warmup < 0 || o.Warmup > MaxWarmup {
		errs = append(errs, fmt.Errorf("rdmatest: -rdma.warmup %d is out of range 0 … %d", o.Warmup, MaxWarmup))
	}
	var err error
	if o.PeerToken, err = peerToken(*flagToken, *flagTokenF); err != nil {
		errs = append(errs, err)
	}
	if o.Peer != "" {
		if host, port, err := net.SplitHostPort(o.Peer); err != nil {
			errs = append(errs, fmt.Errorf("rdmatest: -rdma.peer %q is not host:port: %w", o.Peer, err))
		} else if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 || host == "" {
			errs = append(errs, fmt.Errorf("rdmatest: -rdma.peer %q: want a host and a port 1..65535", o.Peer))
		}
	}
	if o.HlogDir != "" {
		if st, err := os.Stat(o.HlogDir); err == nil && !st.IsDir() {
			errs = append(errs, fmt.Errorf("rdmatest: -rdma.hlog %q is a file, not a directory", o.HlogDir))
		}
	}
	if v, ok := os.LookupEnv("RDMA_REQUIRE"); ok && v != "" {
		if _, err := strconv.ParseBool(v); err != nil {
			errs = append(errs, fmt.Errorf("rdmatest: RDMA_REQUIRE=%q is not a boolean (1, true, 0 or false)", v))
		}
	}
	return o, errors.Join(errs...)
}

// DeviceOpts returns only the settings of RegisterDevice (device,
// port, GID, CPUs, timeout), checked as Opts checks them; the client
// settings (HlogDir, Peer, PeerToken) stay empty and their flags and
// environment are not read. It is what a command that serves the device
// (cmd/rdmapeer) uses, so that a client's RDMA_PEER or token file in its
// environment neither stops it nor leaks into it.
func DeviceOpts() (Options, error) {
	o, errs := deviceOpts()
	return o, errors.Join(errs...)
}

func deviceOpts() (Options, []error) {
	errs := append([]error(nil), envErrs...) // RDMA_PORT, RDMA_GID_INDEX, RDMA_TIMEOUT
	o := Options{Device: *flagDev, Port: *flagPort, GIDIndex: *flagGID, Timeout: *flagTimeout, CPUs: *flagCPUs, Clock: verbs.ClockKind(*flagClock)}
	return o, append(errs, o.deviceErrs()...)
}

// CheckDevice checks the device settings of o (the port, the GID index,
// the CPU list, the timeout), each against its limit, as Opts does: what
// opening a device with o refuses before it opens anything. The error
// joins one error per bad setting, each naming the value and the limit.
func (o Options) CheckDevice() error { return errors.Join(o.deviceErrs()...) }

// deviceErrs is CheckDevice's errors, one per bad setting.
func (o Options) deviceErrs() []error {
	var errs []error
	if o.Port < 1 || o.Port > 255 {
		errs = append(errs, fmt.Errorf("rdmatest: -rdma.port %d is out of range 1..255", o.Port))
	}
	if o.GIDIndex < -1 {
		errs = append(errs, fmt.Errorf("rdmatest: -rdma.gid %d is invalid: use -1 (best GID) or an index ≥ 0", o.GIDIndex))
	}
	if o.CPUs != "" && o.CPUs != "none" {
		if _, err := cpus.ParseList(o.CPUs); err != nil {
			errs = append(errs, fmt.Errorf("rdmatest: -rdma.cpus: %w", err))
		}
	}
	if o.Timeout <= 0 || o.Timeout > MaxTimeout {
		errs = append(errs, fmt.Errorf("rdmatest: -rdma.timeout %v is out of range (0, %v]", o.Timeout, MaxTimeout))
	}
	return errs
}

func env(k, def string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return def
}

// envInt and envDuration return def when k is unset; a malformed value
// is recorded for Opts to report.
func envInt(k string, def int) int { return envParse(k, def, strconv.Atoi, "an integer") }

func envDuration(k string, def time.Duration) time.Duration {
	return envParse(k, def, time.ParseDuration, "a duration (e.g. 10s)")
}

func envParse[T any](k string, def T, parse func(string) (T, error), what string) T {
	s, ok := os.LookupEnv(k)
	if !ok {
		return def
	}
	v, err := parse(s)
	if err != nil {
		envErrs = append(envErrs, fmt.Errorf("rdmatest: %s=%q is not %s", k, s, what))
		return def
	}
	return v
}
