// Package facts has one job: what a node reports about itself for
// fabric blame — its device, link and host facts, and its port counters
// before and after a run — written as the configuration lines of the
// blame contract (see package blame):
//
//	fabric.node.<name>.<fact>: <value>
//	fabric.node.<name>.counter.<counter>: <delta>
//
// Collect gathers the facts of one port from sysfs, /proc and the port
// attributes the caller read through verbs (PortAttrs: the package needs
// no cgo of its own); Facts.ConfigLines writes them. Snapshot reads the
// port counters (through rdmatest.ReadCounters), Delta subtracts two
// snapshots and CounterLines writes the deltas.
//
// Every file is read under a Source, the roots of sysfs and /proc, so
// that tests run on a fake tree without a device.
//
// # Where each fact comes from
//
//   - dev: the device name given to Collect.
//   - fw: PortAttrs.FW, else <sys>/class/infiniband/<dev>/fw_ver (absent
//     when both are empty, as on rxe).
//   - kernel: <proc>/sys/kernel/osrelease.
//   - mtu: PortAttrs.ActiveMTU (bytes; absent when 0).
//   - link-speed: the text of <dev>/ports/<port>/rate, "100 Gb/sec (4X
//     EDR)", checked against itself (4 × EDR's 25 Gb/s is 100) and
//     against PortAttrs.ActiveWidth × ActiveSpeed when those are given.
//   - link-rate-mbps: the rate's total Gb/s × 1000/8, in MB/s (10^6
//     bytes/s) like the rows: width × per-lane Gb/s, the nominal
//     signalling rate the kernel reports. No overhead is subtracted: not
//     the encoding (8b/10b up to QDR leaves 80% of it for data; 64b/66b
//     from FDR on), nor packet headers, nor on RoCE Ethernet framing. No
//     transfer reaches it, so value ÷ rate stays below 1 and a floor
//     given as a fraction of it is conservative as a bound; it asks a
//     little more of the achievable rate than its number says (a floor
//     of 0.5 of a QDR link is 0.625 of its data rate). On RoCE the
//     kernel maps the Ethernet speed to an IB rate, and a netdev of
//     unknown speed (rxe over virtio or veth) to 1000 Mb/s, "2.5 Gb/sec
//     (1X SDR)": there the rate is no bound at all.
//   - gid-type: PortAttrs.GIDType (absent when empty).
//   - pcie-speed, pcie-width, pcie-max-speed, pcie-max-width: the PCI
//     device behind <dev>/device (current_link_speed "8.0 GT/s PCIe" →
//     "8.0 GT/s", current_link_width "16" → "x16", max_link_speed,
//     max_link_width). A device without one (rxe, siw) has none of these
//     facts; a link the kernel cannot report ("Unknown" speed, width 0,
//     as on a virtual function) leaves that fact absent.
//   - numa-node: <dev>/device/numa_node; absent when -1 or missing.
//   - governor: the scaling_governor of every CPU under
//     <sys>/devices/system/cpu: their common value, or when they differ
//     "mixed:performance=30,powersave=2" (governors by name, with their
//     CPU counts); absent without cpufreq.
//   - netdev: a RoCE port's netdev, <dev>/ports/<port>/gid_attrs/ndevs/0.
//   - ecn-np, ecn-rp, qos-trust, pfc: the netdev's RoCE ECN priorities
//     as notification and reaction point, its trust mode and its PFC
//     setting, where sysfs has them (ReadQoS: mlx5's ecn/, MLNX_OFED's
//     qos/; rxe and siw have none).
//
// A fact that does not exist is absent; a file that exists and cannot
// be read or parsed is an error naming the file and its value.
package facts
