// Package blame has one job: from a fabric result stream, name the bad
// nodes and the bad links of an RDMA fabric, each with the numbers and
// the evidence that convict it.
//
// # The result stream (the coordinator's contract)
//
// A fabric run writes one Go benchmark format stream
// (golang.org/x/perf/benchfmt):
//
//	Unit MB/s better=higher
//	Unit msgs/s better=higher
//	Unit p50-ns better=lower
//	fabric.node.node7.fw: 28.39.1002
//	fabric.node.node7.link-rate-mbps: 12500
//	fabric.node.node7.counter.symbol_error: 12
//	BenchmarkFabric/src=node7/dst=node8/op=write/size=65536  2000  5300 ns/op  12364 MB/s  188660 msgs/s
//
// Rows. Every Benchmark row is one run of one scenario over one
// directed link: its name holds a src=NODE part (the requester) and a
// dst=NODE part (the passive side), two different nodes, written first.
// The scenario is the rest of the name, the other key=value parts in
// order without the -GOMAXPROCS suffix ("op=write/size=65536"); a base
// other than Fabric stays in front ("FabricLat/op=send"); with no other
// part the scenario is the base. Repeated rows of a link and scenario
// are its runs. Values are read as written (MB/s is testing's unit, 10^6
// bytes/s, not tidied to B/s). Node names are 1 to 253 ASCII letters,
// digits, '.', '-', '_' or ':', distinct ignoring case, at most
// MaxNodes of them.
//
// Units. A unit used for blame needs a direction: a `Unit NAME
// better=higher|lower` line (benchfmt.UnitMetadata), or benchfmt's
// built-in one (MB/s higher, ns/op lower). Read refuses a stream whose
// MB/s, msgs/s or p50-ns has none.
//
// Node facts are benchfmt configuration lines, keyed
// fabric.node.<name>.<fact> with <name> the node name in lower case (a
// benchfmt key begins with a lower-case letter and holds no space and no
// upper-case letter). The facts: dev (mlx5_0), fw, kernel, mtu (active,
// bytes), link-speed ("100 Gb/sec (4X EDR)"), link-rate-mbps (width ×
// speed in MB/s, 10^6 bytes/s, like the rows; a positive number),
// gid-type (RoCE v2, IB), pcie-speed, pcie-width, pcie-max-speed,
// pcie-max-width ("16.0 GT/s", "x16"), governor (cpufreq) and numa-node.
// Other facts are kept and not judged.
//
// Counters are the deltas over the run of the port and hw counters,
// fabric.node.<name>.counter.<counter>: <delta> (a number), counter
// names lowered (port_rcv_errors, symbol_error, link_downed,
// port_xmit_discards, rnr_nak_retry_err, duplicate_request,
// out_of_sequence, np_cnp_sent, rp_cnp_handled,
// np_ecn_marked_roce_packets, …). The traffic counters
// (port_xmit_data, port_rcv_packets, …) are ignored; every other counter
// that moved is evidence. Rows may also carry the source node's watched
// counters of that run as units "<counter>/run" (better=lower; rdmafabric
// writes those that moved): they give each link an error rate (the
// error-rate rule below).
//
// A configuration line is read wherever it is, a later value replacing
// an earlier one and an empty value deleting it; write them before the
// rows so that any benchfmt tool shows them on every row.
//
// # The rules
//
// Metrics. Each scenario is judged on its bandwidth, MB/s if it has it,
// else msgs/s, and, for a latency scenario (one with p50-ns and no
// MB/s), on p50-ns too (Options.Units replaces the choice). A link's
// value in a metric is the median over its runs: the average bandwidth
// of each run, never a peak.
//
// Goodness. A link's goodness g is its value over the median value of
// all links (inverted for lower-is-better units): 1 is typical, below 1
// is worse. A node has two scores, one a direction: sending (the links
// it is the source of) and receiving. Each is its goodness with its
// best partner in that direction: the largest g of those links. A node
// slow with all is slow even with its best partner; a bad link or a bad
// partner leaves a healthy node its other partners (with 4 nodes, one
// bad node and one bad link make 8 of the 12 links slow: a median over
// a node's links blamed the link's ends as much as the node, on a real
// run). The directions are apart because a fault on a node's egress (a
// lossy transmitter, a rate limit) slows what it sends and hardly what
// it receives: a score over both directions hid a node with 5% egress
// loss (issue #44).
//
// Outliers. A value is an outlier below when it is under
// m·exp(−K·MAD) (not with a baseline, see Baseline), m·(1 − MinDrop)
// and m·exp(−K·σ·√(2/r)), where m is the median of the other values
// and MAD (scaled by 1.4826, a standard
// deviation for normal noise) the median absolute deviation of their
// logarithms from log m, leaving the judged one out so that one bad
// node of four cannot hide itself by pulling the median; at least two
// other values are needed. The spread is a factor, as rates vary: on
// the linear scale, m − K·MAD fell to zero when healthy links were 2×
// apart, and then nothing at all could be named (CI at a02c6e3,
// testdata/ci-a02c6e3-faults.txt). K defaults to 4: with MAD as σ a
// healthy node is below it about once in 30000. MinDrop defaults to
// 10%: a tight fabric has a MAD of a fraction of a percent, and a node
// 2% slower is noise to an operator, not a node to drain.
//
// Noise from the same run. σ is the metric's run-to-run noise: the
// standard deviation of one run's log value about its link's median,
// robust (1.4826 × MAD, pooled over the runs), taken over the links at
// or above the median link: faults only make links worse, and a
// fault's own spread (a fixed delay is steady) says nothing of how far
// a healthy link moves. A median over r runs is compared with another,
// hence √(2/r). The spread of three other nodes' scores (4 nodes) is a
// poor measure of noise; the runs add one, each run of a link falling
// in another round (the coordinator runs the schedule once a run).
//
// Every run. With two runs a link or more, each verdict on the medians
// must also hold on every run alone (run k of every link, judged the
// same way, the run-noise bound exp(−k·σ·√1.5): one run against the
// median of the others'): a TCG phase or a burst that hits one run of a
// link is not the link's, a fault is there in every run. On fresh
// clones of 443df5a, a healthy node came out 3.3× slower than its peers
// in one run of two (its 8-byte round trips 2.2 and 0.8 ms against 0.4-0.5 ms) and
// was named, and make test failed. k follows the number of runs r so
// that noise passes in all of them with fixed odds, those of 3σ in 2
// runs: Φ(−k)^r = Φ(−3)², k 3.0 for 2 runs, 2.25 for 3, 1.79 for 4. At
// 3σ whatever the runs, a link limited to 49% of the others' rate in
// make test's 4 runs went unnamed (testdata/random4-44bd6e1-1).
//
// Baseline. With Options.Baseline, a healthy run of the same fabric
// (rdmafabric -baseline, refused when its own judgement names anything:
// CheckBaseline), every verdict on a metric also needs the value to be
// worse than the baseline's worst link (its median over runs), and in
// every run alone worse than the baseline's worst single run: the
// bound is the goodness of that value against this run's median link,
// min'd into every node and link threshold (and so into Confirm). The
// noise the run itself shows can be too little: rxe's TCG guests have
// slow phases in which a healthy node's 8-byte round trips take 3-4 ms
// against 0.4 ms, for whole runs; on a fresh clone of f665301 the
// faults pass of 2 runs caught node2 in that phase in both, its one
// healthy partner left 7× slower than the other links, and named it
// (testdata/ci-f665301-fresh12-*). The healthy pass of the same boot
// had shown the phase (4.0 ms). With a baseline, no verdict needs to
// stand out from the spread of the others (K is not applied to it, on
// the medians or in any run): with 4 nodes that is the spread of 3
// values, a poor measure of noise; the baseline's worst link and worst
// run take its place beside the run noise. With it 2 of the 3
// rate-limited real runs that were missed are named exactly
// (testdata/seed11, seed22), and so is random4-257c7b5-3's node3
// (egress limited to 44%, score 0.29 of its peers' in all 4 runs),
// which the spread had barred at 0.24 because one peer's best link ran
// 2× the others. The bound
// restrains and never names;
// it is absolute, so take the baseline on the same fabric, software
// and settings, and recently (in CI: the same boot). Its cost: a fault
// no worse than the baseline's worst link is not named (a 50% rate
// limit, where the healthy links' bandwidth spread 3×, is not).
//
// Bad node (slow-with-all): a score of it is an outlier among the
// nodes' scores in the same direction, in any metric; the finding says
// which direction. The scores are then computed again without the
// links to the nodes found bad, and judged again, until the bad nodes
// settle (at most 5 rounds): a bad partner pulls a score down, most in
// a small fabric, and is no fault of the node. Bad node (below-floor): its link-rate-mbps is
// known and, in its best MB/s scenario, the median over its links of
// value ÷ link rate (the lower rate of the two ends) is below Floor
// (default 0.5): every node being equally slow hides from the relative
// rule but not from this one; the best scenario, because small messages
// never approach the line rate. Bad node (no-results): it has facts but
// no row.
//
// Bad link (slow-link): among the links whose ends are not bad nodes,
// its g is an outlier, and each end is healthy on its other links on
// the side the link runs on (the source's sending score and the
// destination's receiving score without this link, their best other
// partners, are not outliers among the nodes' scores; a fault on an
// end's other side does not slow the link). The links of a bad node are
// not named: the node explains them.
//
// The node and link rules tell a node from a link by a node's other
// partners: run every pair (schedule all). With two links a node
// (schedules quick and ring) a slow link drags both its ends' scores
// down and they are named instead; retest those nodes against each
// other and against healthy ones before draining.
//
// Confirmation. With Options.Confirm, Judge names suspects, not
// verdicts. Retests lists the second pass: each suspect node against
// healthy nodes in both directions, each suspect link re-run as is and
// each of its ends against a healthy third node. Confirm names a suspect
// only when that second pass shows it again, judged against the first
// pass's medians and thresholds (the retests run in the same session):
// a node whose median g over its retest links in the direction it was
// named in is again an outlier, or
// again below the floor, or again without a row; a link whose re-run g
// is again an outlier while its ends are healthy with their third
// nodes, on the sides the link runs on.
// A suspect the second pass did not measure is not confirmed.
//
// Bad node or link (error-rate): a stream whose rows carry the source
// node's watched counters per run (`<counter>/run` units, as rdmafabric
// writes them: retries, retransmissions, sequence errors, drops; not
// traffic, not preempted/run) gives each link an error rate, the
// counters' deltas per iteration. A node is bad when its rate with its
// best partner, in a direction, is above 4 times the upper quartile of
// the other nodes' (counters come in bursts), at least 0.5 errors an
// operation and 5 events, over all runs and in every run alone,
// whatever its timing: a lossy transmitter errs on every link it sends
// on. A link between nodes not named is bad by the same test against
// the other such links (its reverse left out). In rxe's TCG guests
// healthy links erred up to 0.3 times an operation, a node losing 5% of
// what it sent 6 times, a link delaying 40 ms twice. On retest an
// error-rate suspect is confirmed when its retest links' pooled rate
// passes the same test against the first pass's reference.
//
// Evidence. Beside each verdict, stable reason codes: counter-moved,
// and facts against the majority of nodes (more than half of those
// reporting it): fw-differs, kernel-differs, mtu-differs, speed-differs
// and width-differs (from link-speed), gid-type-differs, ecn-differs
// (ecn-np or ecn-rp), qos-trust-differs, pfc-differs; pcie-below-max
// (trained below its maximum speed or width); governor-not-performance.
// Evidence explains; it never names a node by itself. The facts of a
// node not named that differ from the majority are listed as the
// report's Mismatches (CONFIG lines in the text), so that a node whose
// ECN or PFC settings differ from the others' is flagged even when its
// timing is fine.
package blame
