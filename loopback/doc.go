// Package loopback finds or makes an RDMA device for rdmabench's tests and
// benchmarks, on any Linux machine.
//
// There are three kinds of machine, told apart by [Detect]:
//
//  1. [HasDevice]: /sys/class/infiniband lists a device (a real HCA such as
//     mlx5_0, or an rxe/siw device someone already created). It is used as it
//     is.
//  2. [HasRxeModule]: the running kernel ships rdma_rxe (loaded, built in, or
//     present under /lib/modules/$(uname -r)) but no device exists yet.
//     [EnsureRxe] creates a Soft-RoCE link on a network interface through
//     netlink (RDMA_NLDEV_CMD_NEWLINK, as `rdma link add NAME type rxe netdev
//     DEV` does), and its cleanup removes only a link it created. rxevm puts
//     it on a veth pair made for the run ([EnsureVeth], [HostVethName]) so
//     that RoCE is not reachable from the host's network, unless told
//     another interface.
//  3. [NoRDMA]: the kernel has no RDMA at all (containers, CI runners). The
//     work runs inside a small qemu guest instead: see [VM]. The guest boots
//     Debian's stock kernel (linux-image-amd64, whose modules include
//     rdma_rxe) from an initramfs built at run time (busybox-static, the
//     needed modules, and this program itself), mounts the host's root file
//     system read-only over virtio-9p (multidevs=remap), puts a tmpfs on
//     /tmp, mounts the chosen working directory read-write at the same path
//     (security_model=mapped-xattr: nothing the guest makes there is a
//     setuid file or a device node on the host),
//     creates a veth pair with 192.0.2.1/24 (the documentation range; the
//     guest has no NIC to the outside), makes rxe0 on veth0 with the same
//     [EnsureRxe] code as kind 2, runs one command in the host's working
//     directory, streams its output and returns its exit status. A single
//     guest's vCPU threads are pinned one to a host CPU: unpinned, the
//     host sometimes runs both on one core for seconds and the guest runs
//     about 1.5× slower meanwhile (docs/compare.md); the guests of a pair
//     or a cluster share the host's CPUs and are not pinned.
//
// One rxe device is enough for a loopback pair: both ends of a connection
// are QPs on rxe0 and rxe loops the packets back internally. Two rxe
// devices on the two ends of a veth pair do not reach each other (traffic
// between two local addresses goes through lo, which rxe drops).
//
// # Soft-iWARP
//
// Debian's kernel is built without siw, the software iWARP driver. A
// siw.ko built for the guest kernel (ci/siw.sh build, docs/siw.md) is
// loaded from its host path through [VM.ModuleFiles], after
// [SiwModules], and a job with [Job.LinkType] [LinkSiw] gets siw0 on
// veth0 instead of rxe0, made by [EnsureLink] through the same netlink
// call as rxe. Not both: with rxe0 and siw0 on one netdev, rdma_cm binds
// the address to rxe0. rxevm -siw FILE does all of this.
//
// # Two guests
//
// A [Pair] boots two guests at once, whose rxe devices reach each other
// over a real (virtual) wire, and runs one [Job] in each; it is how a
// client and a server on two hosts are tested here:
//
//	p, err := loopback.NewPair() // 1 vCPU and 1024 MiB each
//	codeA, codeB, err := p.Run(ctx, server, client, outA, outB)
//
// Each guest gets a virtio NIC ([VM.NIC]) on qemu's socket backend in UDP
// mode: the two qemu processes exchange the Ethernet frames as datagrams
// between two free ports of 127.0.0.1 (not over qemu's TCP mode, whose
// Nagle and delayed-ACK waits put tens of milliseconds under every round
// trip; see [NIC]). The guests load [NetModules] too
// (the virtio_net driver chain, and sch_netem so that a job can add delay
// or loss with the host's tc). There is no veth in this mode: rxe0 runs on
// eth0, which has 192.0.2.1/24 in A and 192.0.2.2/24 in B ([PairSides]).
// Each job learns its side from its environment: RDMA_ROLE (a or b),
// RDMA_LOCAL_ADDR, RDMA_PEER_ADDR and RDMA_NETDEV (eth0).
//
// One deadline, [Pair.Timeout], covers both guests, boots included. When
// a guest fails or its command exits with a non-zero status, the other
// guest is stopped at once, and the error (a [*PairError]) names the guest
// that failed and why, with its console tail. A guest whose command ends
// powers off, and its end of the wire goes with it: a job that must keep
// answering until the other's is done has to wait for it (the tests use a
// file in the share both guests mount).
//
// # A cluster
//
// A [Cluster] boots N guests (2 to [MaxClusterSize], 8) on one virtual
// Ethernet segment and runs one [Job] in each; it is the base of the
// fabric tests (ci/fabric/cluster.sh runs a Slurm cluster of 4 on it):
//
//	c, err := loopback.NewCluster(4) // 1 vCPU and 256 MiB each
//	codes, err := c.Run(ctx, jobs, outs)
//
// 256 MiB is twice the smallest that ran the Slurm pass (128 MiB; at 96
// MiB the kernel panics unpacking the initramfs): the guests' files are
// the host's, over 9p. 8 guests is a limit of time, not of the code: the
// guests' vCPUs share the host's cores, and 4 boot in 15-20 s on 2.
//
// Guest i is named node(i+1) (or Cluster.Names[i]) and has
// 192.0.2.(i+1)/24 and MAC 52:54:00:00:02:(i+1) on eth0, with rxe0 on it;
// its host name is its name, and an /etc/hosts bind-mounted over the
// host's names every guest. Each job learns its place from RDMA_NODE_INDEX
// (i, from 0), RDMA_NODE_NAME, RDMA_NODES (all addresses in order),
// RDMA_NODE_NAMES, RDMA_LOCAL_ADDR and RDMA_NETDEV. One deadline,
// [Cluster.Timeout], covers all guests; the first guest that fails or
// whose command exits non-zero stops all the others, and the error (a
// [*ClusterError]) names it, with its console tail, and the guests it
// stopped. A [Pair] runs on the same machinery, as two guests a and b on
// a point-to-point wire.
//
// The segment is qemu's socket backend in multicast mode (-netdev
// socket,mcast=GROUP:PORT,localaddr=127.0.0.1): every qemu sends its
// guest's frames to one multicast group joined on the loopback interface
// only, the kernel hands each datagram to every member (the hub), and
// each virtio NIC drops the unicast frames meant for another MAC. Each
// run takes a random group of 239.0.0.0/8 and a free port, so that two
// clusters on one host do not share a segment; nothing leaves 127.0.0.1.
// The other two candidates, measured here (qemu 7.2, 2 cores, TCG, 4
// guests of 1 vCPU; every guest pinged every other 100 times, 20 ms
// apart, one guest at a time, 2 runs per backend, interleaved):
//
//	backend                        loss      min RTT  mean RTT  worst RTT
//	socket mcast (chosen)          0/2400    1.68 ms  4.66 ms   122 ms
//	dgram mcast (qemu >= 7.2)      0/2400    1.48 ms  6.07 ms   180 ms
//	vde_switch (vde2, -netdev vde) 0/2400    1.38 ms  11.05 ms  249 ms
//
// and ibv_rc_pingpong (RC, 64 B, 2000 round trips) between node1 and
// node2 while node3 and node4 idled: 2.3-2.4 ms a round trip on the
// multicast segment (two runs) against 8.9 and 28.9 ms through
// vde_switch, whose extra process on the frames' path waits for a core
// of its own; two guests on a pair's point-to-point wire took 2.7 ms, and
// a cluster of two on the multicast segment 3.4 ms, that same hour (the
// host was shared with other work: compare within a column, not across
// hours). The dgram backend is the same kernel path as socket's
// multicast mode, but needs qemu 7.2 (Ubuntu 22.04 ships 6.2) and an
// explicit local.port=0; vde needs another package and a switch process
// to start, watch and stop. Ping latency here is the host's scheduling
// of 4 vCPUs on 2 cores far more than any backend.
//
// Failures of the guest are never reported as a pass: a module that fails
// to load, a kernel panic, a device that does not become ACTIVE, or a
// guest that outlives its deadline each end [VM.Run] with an error that
// says which, with the last lines of the guest console.
package loopback
