// Package cpus places the timed loops on CPUs: it chooses the CPUs a
// device's loops run on (-rdma.cpus, else the device's NUMA node, within
// the CPUs the process may use), pins a loop's thread to its CPU, moves
// the rest of the process off the loops' CPUs, hands passive sides
// served to remote clients CPUs of their own, and counts how often a
// loop's thread was preempted.
//
// Every loop that spins (the requester's, and the in-process passive
// side's) runs on an OS thread of its own, pinned to a CPU of its own, as
// perftest's -F-less default and numactl practice do: the CPUs come from
// -rdma.cpus when given, else from the device's NUMA node (sysfs
// device/local_cpulist), intersected with the CPUs this process may use;
// the requester takes the first, the passive side the second. Where
// there are fewer CPUs than spinning loops (threads runs oversubscribe on
// purpose), or with -rdma.cpus none, nothing is pinned. The choice is
// printed as the rdma-cpus configuration line (Plan.Line).
//
// Pinning is Linux's sched_setaffinity. On other systems (Supported is
// false) nothing is pinned: Choose chooses no CPU, a CPU list given with
// -rdma.cpus and every request to pin a thread are errors that say so,
// and preemptions are not counted.
package cpus
