package rdmatest

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"
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
}

var (
	flagDev     = flag.String("rdma.dev", env("RDMA_DEVICE", ""), "RDMA device (default: the first device with an ACTIVE port) [RDMA_DEVICE]")
	flagPort    = flag.Int("rdma.port", envInt("RDMA_PORT", 1), "RDMA port [RDMA_PORT]")
	flagGID     = flag.Int("rdma.gid", envInt("RDMA_GID_INDEX", -1), "GID index; -1 = best GID (RoCE v2, IPv4-mapped) [RDMA_GID_INDEX]")
	flagTimeout = flag.Duration("rdma.timeout", envDuration("RDMA_TIMEOUT", 10*time.Second), "deadline for every single wait for a completion or a peer [RDMA_TIMEOUT]")
	flagHlog    = flag.String("rdma.hlog", env("RDMA_HLOG_DIR", ""), "directory for HdrHistogram .hlog files, one per benchmark [RDMA_HLOG_DIR]")
	flagPeer    = flag.String("rdma.peer", env("RDMA_PEER", ""), "host:port of an rdmapeer that plays the passive side on another host [RDMA_PEER]")
	flagCPUs    = flag.String("rdma.cpus", env("RDMA_CPUS", ""), "CPUs for the timed loops, requester first (a CPU list: 2,3 or 4-7, or none: not pinned); default: the device's NUMA node [RDMA_CPUS]")
	flagToken   = flag.String("rdma.peer-token", env("RDMA_PEER_TOKEN", ""), "shared secret the peer requires [RDMA_PEER_TOKEN]")
)

// envErrs collects malformed environment values, reported by Opts.
var envErrs []error

// Opts returns the options from the flags (and their environment
// fallbacks), checked: a malformed environment value or an out-of-range
// setting is an error naming the value and the limit.
func Opts() (Options, error) {
	errs := append([]error(nil), envErrs...)
	o := Options{Device: *flagDev, Port: *flagPort, GIDIndex: *flagGID, Timeout: *flagTimeout, HlogDir: *flagHlog,
		Peer: *flagPeer, PeerToken: *flagToken, CPUs: *flagCPUs}
	if o.Peer != "" {
		if _, _, err := net.SplitHostPort(o.Peer); err != nil {
			errs = append(errs, fmt.Errorf("rdmatest: -rdma.peer %q is not host:port: %w", o.Peer, err))
		}
	}
	if o.Port < 1 || o.Port > 255 {
		errs = append(errs, fmt.Errorf("rdmatest: -rdma.port %d is out of range 1..255", o.Port))
	}
	if o.GIDIndex < -1 {
		errs = append(errs, fmt.Errorf("rdmatest: -rdma.gid %d is invalid: use -1 (best GID) or an index ≥ 0", o.GIDIndex))
	}
	if o.CPUs != "" && o.CPUs != "none" {
		if _, err := parseCPUList(o.CPUs); err != nil {
			errs = append(errs, fmt.Errorf("rdmatest: -rdma.cpus: %w", err))
		}
	}
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("rdmatest: -rdma.timeout %v must be positive", o.Timeout))
	}
	return o, errors.Join(errs...)
}

func env(k, def string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return def
}

// envInt and envDuration return def when k is unset; a malformed value
// is recorded for Opts to report.
func envInt(k string, def int) int {
	s, ok := os.LookupEnv(k)
	if !ok {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		envErrs = append(envErrs, fmt.Errorf("rdmatest: %s=%q is not an integer", k, s))
		return def
	}
	return v
}

func envDuration(k string, def time.Duration) time.Duration {
	s, ok := os.LookupEnv(k)
	if !ok {
		return def
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		envErrs = append(envErrs, fmt.Errorf("rdmatest: %s=%q is not a duration (e.g. 10s)", k, s))
		return def
	}
	return v
}
