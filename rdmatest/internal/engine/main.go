package engine

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest/internal/flags"
	"github.com/rdmabench/rdmabench/rdmatest/internal/hist"
	"github.com/rdmabench/rdmabench/rdmatest/internal/turn"
	"github.com/rdmabench/rdmabench/rdmatest/internal/units"
	"github.com/rdmabench/rdmabench/verbs"
)

// Main is a TestMain for packages of device benchmarks: it registers the
// -rdma.* flags on flag.CommandLine ([flags.Register], unless -rdma.dev is
// there already), parses the flags, prints the benchmark-format
// configuration lines that label the results (rdma-device,
// rdma-provider, rdma-fw, rdma-node-guid, rdma-link-layer, rdma-mtu,
// rdma-speed, rdma-gid-type, rdma-gid-index, rdma-cpus, kernel,
// rdma-core, rdma-clock, rdma-clock-mhz; rdma-host in the qemu guest)
// and the Unit lines,
// then runs the tests, writes the .hlog interval still held for a b.N
// benchmark (hist.FlushHlog) and exits.
//
//	func TestMain(m *testing.M) { rdmatest.Main(m) }
//
// A -test.cpu list (go test -cpu 1,2) with -test.bench is refused: a
// benchmark that uses b.Loop runs once, before the testing package
// applies the list's first value (golang/go#49980), so every benchmark's
// first row would be measured at the GOMAXPROCS the previous one left
// and labelled with another. A single value is applied before any
// benchmark runs.
func Main(m *testing.M) {
	if flag.Lookup("rdma.dev") == nil {
		flags.Register(flag.CommandLine)
	}
	flag.Parse()
	o, err := flags.Opts()
	if err == nil && o.HlogDir != "" {
		err = hist.CheckHlogDir(o.HlogDir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err) // before any benchmark runs on a bad setting
		os.Exit(2)
	}
	if err := applyCPUFlag(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	PrintConfig(os.Stdout)
	printed := units.Count()
	code := m.Run()
	turn.End()
	units.PrintFrom(os.Stdout, printed) // registered while the benchmarks ran
	if err := hist.FlushHlog(); err != nil {
		fmt.Fprintln(os.Stderr, "rdmatest:", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// applyCPUFlag sets GOMAXPROCS from a single-valued -test.cpu, and
// refuses a list of several when benchmarks run (see Main).
func applyCPUFlag() error {
	cpu, bench := flag.Lookup("test.cpu"), flag.Lookup("test.bench")
	if cpu == nil || cpu.Value.String() == "" {
		return nil
	}
	list := strings.Split(cpu.Value.String(), ",")
	if len(list) > 1 {
		if bench != nil && bench.Value.String() != "" {
			return fmt.Errorf("rdmatest: -test.cpu %s: give one value per go test run with benchmarks: "+
				"a b.Loop benchmark runs once, before the testing package applies the first value (golang/go#49980), "+
				"so each benchmark's first row would be measured at another GOMAXPROCS than its name says", cpu.Value)
		}
		return nil // tests run once per value, each after it is applied
	}
	n, err := strconv.Atoi(strings.TrimSpace(list[0]))
	if err != nil || n < 1 {
		return fmt.Errorf("rdmatest: -test.cpu %q is not a positive number", list[0])
	}
	runtime.GOMAXPROCS(n)
	return nil
}

// PrintConfig writes the configuration and Unit lines to w. Without a
// device it writes `rdma-device: none` and the reason on stderr.
func PrintConfig(w io.Writer) {
	for _, kv := range Config() {
		fmt.Fprintf(w, "%s: %s\n", kv[0], kv[1])
	}
	units.PrintFrom(w, 0)
}

// Config returns the configuration keys and values of this machine and
// the chosen device.
func Config() [][2]string {
	cfg := [][2]string{}
	cm := false
	d, err := OpenDev()
	if err != nil {
		fmt.Fprintf(os.Stderr, "rdmatest: no device for the configuration lines: %v\n", err)
		cfg = append(cfg, [2]string{"rdma-device", "none"})
	} else {
		a := d.Attr()
		cfg = append(cfg,
			[2]string{"rdma-device", d.Name()},
			[2]string{"rdma-provider", a.Provider},
			[2]string{"rdma-fw", orNone(a.FWVersion)},
			[2]string{"rdma-node-guid", guid(a.NodeGUID)},
			[2]string{"rdma-link-layer", d.PortAttr.LinkLayer},
			[2]string{"rdma-mtu", fmt.Sprint(d.PortAttr.ActiveMTU)},
			[2]string{"rdma-speed", strings.ReplaceAll(fmt.Sprintf("%dx %s", d.PortAttr.ActiveWidth, d.PortAttr.ActiveSpeed), " ", "")},
			[2]string{"rdma-gid-type", strings.ReplaceAll(d.GIDEntry.Type.String(), " ", "")},
			[2]string{"rdma-gid-index", fmt.Sprint(d.GIDEntry.Index)},
			[2]string{"rdma-cpus", d.cpus.Line()},
		)
		cm = d.UseCM()
		d.Close()
	}
	cfg = append(cfg, [2]string{"kernel", kernelRelease()}, [2]string{"rdma-core", rdmaCoreVersion()})
	if c, err := verbs.LoopClock(); err == nil {
		cfg = append(cfg, c.Config()...)
		fmt.Fprintf(os.Stderr, "rdmatest: the loops' clock: %s %.3f MHz (%s)\n", c.Name, c.MHz, c.Why)
	}
	// Which boot made the runs: the gate compares stored files boot
	// against boot (go doc ./ci/gate, -replicate), never pairing by it.
	if id := bootID(); id != "" {
		cfg = append(cfg, [2]string{"rdma-boot", id})
	}
	if o, err := flags.Opts(); err == nil {
		// How latency runs work and start (rdmatest's doc: the samples),
		// only where they differ from the defaults: a run with other
		// work is another configuration (benchstat and the gate pair
		// results by it), while default runs stay comparable with the
		// files of builds that printed neither line.
		if o.SignalAll {
			cfg = append(cfg, [2]string{"rdma-signal-all", "true"})
		}
		if o.Warmup != 1 {
			cfg = append(cfg, [2]string{"rdma-warmup", strconv.Itoa(o.Warmup)})
		}
	}
	if cm {
		// How pairs were connected, only when through rdma_cm (-rdma.cm,
		// or by default on iWARP): by hand is the default, and results
		// of builds that printed no such line stay comparable.
		cfg = append(cfg, [2]string{"rdma-connect", "cm"})
	}
	cfg = append(cfg, slowConfig()...)
	if os.Getenv("RDMA_IN_VM") == "1" {
		cfg = append(cfg, [2]string{"rdma-host", "qemu-vm"})
	}
	return cfg
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// guid formats a node GUID as ibv_devinfo does (xxxx:xxxx:xxxx:xxxx).
func guid(g uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", g>>48, g>>32&0xffff, g>>16&0xffff, g&0xffff)
}

// bootID is the kernel's random boot id ("" if it cannot be read).
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func kernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// rdmaCoreVersion reads the rdma-core release from the name libibverbs'
// shared object resolves to (libibverbs.so.1.14.44.0 → 44.0: rdma-core
// names the library's minor and patch versions after its own release).
func rdmaCoreVersion() string {
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"} {
		p, err := filepath.EvalSymlinks(filepath.Join(dir, "libibverbs.so.1"))
		if err != nil {
			continue
		}
		if v, ok := strings.CutPrefix(filepath.Base(p), "libibverbs.so.1."); ok {
			if parts := strings.SplitN(v, ".", 2); len(parts) == 2 {
				return parts[1]
			}
		}
	}
	return "unknown"
}
