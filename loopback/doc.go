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
//     about 1.5× slower meanwhile (docs/compare.md); a pair's two guests
//     share the host's CPUs and are not pinned.
//
// One rxe device is enough for a loopback pair: both ends of a connection
// are QPs on rxe0 and rxe loops the packets back internally. Two rxe
// devices on the two ends of a veth pair do not reach each other (traffic
// between two local addresses goes through lo, which rxe drops).
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
// Failures of the guest are never reported as a pass: a module that fails
// to load, a kernel panic, a device that does not become ACTIVE, or a
// guest that outlives its deadline each end [VM.Run] with an error that
// says which, with the last lines of the guest console.
package loopback
