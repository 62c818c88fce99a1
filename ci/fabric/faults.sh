# ci/fabric/faults.sh — the faults of the fabric pass (sourced by
# node.sh in the guests of ci/fabric/cluster.sh). Two faults, on the
# guests' eth0 (192.0.2.<i> = node<i>), both by netem delay, whose
# magnitude TCG noise cannot blur: in these guests an 8-byte WRITE round
# trip takes 3–15 ms and a 64 KiB WRITE stream runs at 4–7 MB/s, and a
# healthy node's round trips came out up to 2.2× slower than the others'
# (CI at eedb7be). 50 ms more on a path makes its round trips 55 ms or
# more, over 4× slower even against the slowest healthy ones, and cuts
# the stream to a fraction (rxe keeps few packets in flight per QP, and
# netem holds them). 20 ms made them only 2.7–6× slower.
#
#   bad node: node3 delays every packet it sends by FAULT_NODE_DELAY
#             (default 50ms): each of its links, both ways (its data out,
#             its acknowledgements and answers back);
#   bad link: node1 delays what it sends to node2, and node2 what it
#             sends to node1, by FAULT_LINK_DELAY (default 50ms), in a
#             prio band of their own chosen by a u32 filter on the
#             destination address: node1–node2 only, both directions.
# FAULT_NODE= (set and empty) leaves the bad node out: the link alone
# (how ci/gate/testdata/fabric-*.txt were made).
FAULT_NODE=${FAULT_NODE-node3}
FAULT_LINK=(node1 node2)
FAULT_LINK_DESC="node1 and node2 delay what they send each other"
FAULT_NODE_DELAY=${FAULT_NODE_DELAY:-50ms}
FAULT_LINK_DELAY=${FAULT_LINK_DELAY:-50ms}

# addr NODE: the node's address on the segment.
addr() { echo "192.0.2.${1#node}"; }

# inject NODE: puts NODE's part of the faults on its eth0 and shows it.
inject() {
	local me=$1 dev=${RDMA_NETDEV:-eth0}
	# A queue long enough that the delay never drops a packet.
	if [[ -n $FAULT_NODE && $me == "$FAULT_NODE" ]]; then
		tc qdisc add dev "$dev" root netem delay "$FAULT_NODE_DELAY" limit 100000 || return
	fi
	local other=
	[[ $me == "${FAULT_LINK[0]}" ]] && other=${FAULT_LINK[1]}
	[[ $me == "${FAULT_LINK[1]}" ]] && other=${FAULT_LINK[0]}
	if [[ -n $other ]]; then
		# Bands 1:1-1:3 keep prio's default map; 1:4 only gets what the
		# filter sends there.
		tc qdisc add dev "$dev" root handle 1: prio bands 4 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 || return
		tc qdisc add dev "$dev" parent 1:4 handle 40: netem delay "$FAULT_LINK_DELAY" limit 100000 || return
		tc filter add dev "$dev" parent 1: protocol ip prio 1 u32 match ip dst "$(addr "$other")/32" flowid 1:4 || return
	fi
	echo "fault on $me ($dev):"
	tc qdisc show dev "$dev"
	tc filter show dev "$dev"
}
