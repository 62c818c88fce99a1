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
//     DEV` does), and its cleanup removes only a link it created.
//  3. [NoRDMA]: the kernel has no RDMA at all (containers, CI runners). The
//     work runs inside a small qemu guest instead: see [VM]. The guest boots
//     Debian's stock kernel (linux-image-amd64, whose modules include
//     rdma_rxe) from an initramfs built at run time (busybox-static, the
//     needed modules, and this program itself), mounts the host's root file
//     system read-only over virtio-9p (multidevs=remap), puts a tmpfs on
//     /tmp, mounts the chosen working directory read-write at the same path,
//     creates a veth pair with 192.0.2.1/24 (the documentation range; the
//     guest has no NIC to the outside), makes rxe0 on veth0 with the same
//     [EnsureRxe] code as kind 2, runs one command in the host's working
//     directory, streams its output and returns its exit status.
//
// One rxe device is enough for a loopback pair: both ends of a connection
// are QPs on rxe0 and rxe loops the packets back internally. Two rxe
// devices on the two ends of a veth pair do not reach each other (traffic
// between two local addresses goes through lo, which rxe drops).
//
// Failures of the guest are never reported as a pass: a module that fails
// to load, a kernel panic, a device that does not become ACTIVE, or a
// guest that outlives its deadline each end [VM.Run] with an error that
// says which, with the last lines of the guest console.
package loopback
