package loopback

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests named TestVMPair* boot two qemu guests at once (1 vCPU and
// 1024 MiB each) and run only with RDMA_VM_TESTS=1.

// realPair returns a Pair for this host whose guests share a scratch
// directory, or skips the test unless the VM tests are enabled. Both
// consoles are logged when the test fails.
func realPair(t *testing.T) *Pair {
	t.Helper()
	skipUnlessVMTests(t, "two qemu guests")
	p, err := NewPair()
	require.NoError(t, err)
	p.Timeout = 2 * time.Minute // a hard stop; a pair boots in 15-60 s on a loaded 2-core host
	share := t.TempDir()
	var consoles [2]bytes.Buffer
	for i, vm := range []*VM{p.A, p.B} {
		vm.Share, vm.Console = share, &consoles[i]
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("guest a console:\n%s\nguest b console:\n%s", consoles[0].String(), consoles[1].String())
		}
	})
	return p
}

// pairRun is one run of a pair: each guest ran a shell script.
type pairRun struct {
	codeA, codeB int
	outA, outB   string
	err          error
	took         time.Duration
}

// runPair runs scriptA in guest a and scriptB in guest b, in the share,
// and logs both outputs.
func runPair(t *testing.T, p *Pair, scriptA, scriptB string) pairRun {
	t.Helper()
	job := func(script string) Job {
		return Job{Args: []string{"sh", "-c", script}, Dir: p.A.Share, Env: []string{guestPath, "SHARE=" + p.A.Share}}
	}
	var outA, outB bytes.Buffer
	start := time.Now()
	codeA, codeB, err := p.Run(context.Background(), job(scriptA), job(scriptB), &outA, &outB)
	r := pairRun{codeA: codeA, codeB: codeB, outA: outA.String(), outB: outB.String(), err: err, took: time.Since(start)}
	t.Logf("Pair.Run took %s (wall clock, from the call to its return): codes a=%d b=%d, err %v", r.took.Round(time.Millisecond), codeA, codeB, err)
	t.Logf("guest a output:\n%s", r.outA)
	t.Logf("guest b output:\n%s", r.outB)
	return r
}

// Shell fragments for the guests' scripts.
const (
	// barrier makes each guest wait (up to 30 s) until the other got
	// here too, through the share both mount: a guest that finishes
	// powers off, and its network goes with it.
	barrier = `barrier() { touch "$SHARE/$RDMA_ROLE.$1"; [ "$RDMA_ROLE" = a ] && peer=b || peer=a
  i=0; while [ ! -e "$SHARE/$peer.$1" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; }
`
	// retryConnect runs a perftest client until it gets past connecting
	// (up to 30 tries a second apart): perftest does not retry, and the
	// server in the other guest may not be listening yet. The client's
	// output streams as it comes (through tee, not after the client
	// returns), so a client that never returns still shows how far it got.
	retryConnect = `retry_connect() { i=0
  while :; do { "$@" 2>&1; echo $? > /tmp/client.rc; } | tee /tmp/client.log; rc=$(cat /tmp/client.rc)
    grep -q "Couldn't connect" /tmp/client.log || return $rc
    i=$((i+1)); [ $i -ge 30 ] && return $rc; sleep 1; done; }
`
	// counters prints rxe0's port counters as NAME:VALUE lines.
	counters = `(cd /sys/class/infiniband/rxe0/ports/1/hw_counters && grep . *)`
	// watchdog N prints, N seconds on, this guest's QPs (state and PSNs)
	// and rxe's counters: what a perftest still waiting on its QP then
	// leaves in the log before timeout ends it (and its QP with it). The
	// caller kills it ($!) when perftest returns in time.
	watchdog = `watchdog() { (sleep $1; echo "--- still running after $1 s: the QPs and counters"; rdma res show qp; ` + counters + `) & }
`
)

func TestVMPairPing(t *testing.T) {
	p := realPair(t)
	// Wait for the peer (it may boot later), ping it 3 times, then wait
	// until the peer has pinged too.
	script := barrier + `ibv_devinfo -d rxe0 | grep -E 'state|link_layer'
i=0; until busybox ping -c 1 -W 1 $RDMA_PEER_ADDR >/dev/null 2>&1 || [ $i -ge 30 ]; do i=$((i+1)); done
busybox ping -c 3 -W 5 $RDMA_PEER_ADDR; rc=$?
echo "role $RDMA_ROLE local $RDMA_LOCAL_ADDR peer $RDMA_PEER_ADDR netdev $RDMA_NETDEV"
barrier pinged; exit $rc`
	r := runPair(t, p, script, script)
	require.NoError(t, r.err)
	assert.Equal(t, 0, r.codeA)
	assert.Equal(t, 0, r.codeB)
	for _, g := range []struct{ out, want string }{
		{r.outA, "role a local 192.0.2.1 peer 192.0.2.2 netdev eth0"},
		{r.outB, "role b local 192.0.2.2 peer 192.0.2.1 netdev eth0"},
	} {
		assert.Contains(t, g.out, "PORT_ACTIVE")
		assert.Contains(t, g.out, "link_layer:\t\tEthernet")
		assert.Contains(t, g.out, "3 packets transmitted, 3 packets received, 0% packet loss")
		assert.Contains(t, g.out, g.want)
	}
}

// bwLine matches perftest's result row for 4096-byte messages: bytes,
// iterations, peak and average bandwidth (perftest's MB/sec is MiB/s,
// 2^20 bytes per second, from the first post to the last completion).
var bwLine = regexp.MustCompile(`(?m)^\s*4096\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s*$`)

// averageBW returns the average bandwidth of perftest's result row in out.
func averageBW(t *testing.T, out string) float64 {
	t.Helper()
	m := bwLine.FindStringSubmatch(out)
	require.NotNil(t, m, "perftest's result row in:\n%s", out)
	bw, err := strconv.ParseFloat(m[3], 64)
	require.NoError(t, err)
	return bw
}

func TestVMPairSendBW(t *testing.T) {
	p := realPair(t)
	const bw = "ib_send_bw -d rxe0 -s 4096 -n 2000 -F"
	r := runPair(t, p, bw, retryConnect+"retry_connect "+bw+" $RDMA_PEER_ADDR")
	require.NoError(t, r.err)
	assert.Equal(t, 0, r.codeA, "server in a")
	assert.Equal(t, 0, r.codeB, "client in b")
	t.Logf("ib_send_bw between the guests, 4096 B x 2000 sends: average %.2f MiB/s (client, b) / %.2f MiB/s (server, a), perftest's figure (first post to last completion)",
		averageBW(t, r.outB), averageBW(t, r.outA))
}

// parseCounters reads the NAME:VALUE lines of counters in out.
func parseCounters(out string) map[string]int64 {
	c := map[string]int64{}
	for _, l := range strings.Split(out, "\n") {
		name, v, ok := strings.Cut(l, ":")
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); ok && err == nil && !strings.ContainsAny(name, " \t") {
			c[name] = n
		}
	}
	return c
}

func TestVMPairWriteUnderLoss(t *testing.T) {
	p := realPair(t)
	// b (the client, which sends the RDMA WRITEs) drops 10% of what it
	// sends; RC must retransmit what was lost.
	//
	// -t 16 keeps at most 16 writes (64 PSNs) outstanding. At perftest's
	// default of 128, rxe's requester hits its own flow control ~1700
	// times a run under this loss (over 128 unacknowledged PSNs, or over
	// 64 sent skbs not yet freed), mostly inside ib_write_bw's post_send.
	// In Linux 6.1's rxe those exits test the limit and only then set the
	// flag that asks for a wake-up (req.wait_psn, need_req_skb), unlocked;
	// an ACK or skb free in between wakes nobody, and when nothing is left
	// in flight no retransmit timer restarts the QP. That is the likely
	// cause of the one hang seen (not reproduced in 55 runs here). At -t 16
	// neither limit is reached (0 such exits in 4 counted runs), and the
	// loss shows as before: ~450 retries, ~300 NAKs, ~400 out-of-sequence
	// packets, ~18 s.
	//
	// perftest has no deadline of its own (the client polls its CQ, the
	// server blocks reading its TCP socket) and rxe takes perftest's fixed
	// retry_cnt of 7 as "retry forever", so a stuck QP never ends in an
	// error: timeout makes it fail within a minute, with both QPs and
	// counters in the log (watchdog), instead of the guests' 2-minute kill
	// with b's output lost; the barrier keeps a's guest up until b printed.
	const bw = "ib_write_bw -d rxe0 -s 4096 -n 1000 -F -t 16"
	r := runPair(t, p,
		barrier+watchdog+"watchdog 55; wd=$!; timeout 90 stdbuf -o0 -e0 "+bw+"; rc=$?; kill $wd; "+counters+"; barrier done; exit $rc",
		barrier+watchdog+retryConnect+`tc qdisc add dev $RDMA_NETDEV root netem loss 10% || exit 99
watchdog 55; wd=$!; retry_connect timeout 60 stdbuf -o0 -e0 `+bw+` $RDMA_PEER_ADDR; rc=$?; kill $wd
tc -s qdisc show dev $RDMA_NETDEV; `+counters+"; barrier done; exit $rc")
	require.NotEqual(t, 124, r.codeB, "ib_write_bw in b was not done after 60 s: its QP stopped making progress (b's output has its QP and counters)")
	require.NoError(t, r.err)
	assert.Equal(t, 0, r.codeA, "server in a")
	assert.Equal(t, 0, r.codeB, "client in b")
	bwB := averageBW(t, r.outB)

	dropped := regexp.MustCompile(`dropped (\d+)`).FindStringSubmatch(r.outB)
	require.NotNil(t, dropped, "tc -s shows netem's drops")
	ca, cb := parseCounters(r.outA), parseCounters(r.outB)
	require.Contains(t, cb, "completer_retry_err", "rxe's counters in b's output")
	require.Contains(t, ca, "out_of_seq_request", "rxe's counters in a's output")
	t.Logf("10%% loss on b's egress: netem dropped %s packets; b (requester): sent_pkts %d, completer_retry_err %d (retransmissions started), rcvd_seq_err %d (NAKs received); a (responder): rcvd_pkts %d, out_of_seq_request %d, duplicate_request %d; average %.2f MiB/s (perftest's figure)",
		dropped[1], cb["sent_pkts"], cb["completer_retry_err"], cb["rcvd_seq_err"], ca["rcvd_pkts"], ca["out_of_seq_request"], ca["duplicate_request"], bwB)
	assert.Positive(t, cb["completer_retry_err"], "the requester retransmitted")
	assert.Positive(t, ca["out_of_seq_request"], "the responder saw the gaps")
	// On rxe this cannot fail while perftest asks for retry_cnt 7: rxe
	// reads 7 as "retry forever" and never counts an exhausted QP. It
	// stays for HCAs and a perftest that honours --retry_count.
	assert.Zero(t, cb["retry_exceeded_err"], "no QP gave up")
	// 1000 writes of 4096 B at MTU 1024 are 4000 packets; every lost one
	// makes go-back-N resend the window behind it.
	assert.Greater(t, cb["sent_pkts"], int64(4000))
}

func TestVMPairFailures(t *testing.T) {
	t.Run("command fails in b", func(t *testing.T) {
		p := realPair(t)
		r := runPair(t, p, "echo waiting for a client; sleep 1000", "echo b fails; exit 3")
		require.Error(t, r.err)
		assert.Contains(t, r.err.Error(), "guest b's command exited with status 3; guest a was stopped because guest b ended first")
		assert.Equal(t, 3, r.codeB)
		assert.Equal(t, -1, r.codeA)
		assert.Equal(t, "b fails\n", r.outB)
		assert.Less(t, r.took, p.Timeout, "a is stopped, not left to the deadline")
	})
	t.Run("guest a fails to set up rxe", func(t *testing.T) {
		p := realPair(t)
		p.A.LoadModules = slices.DeleteFunc(slices.Clone(GuestModules), func(m string) bool { return m == "crc32_generic" })
		r := runPair(t, p, "exit 0", "sleep 1000")
		require.Error(t, r.err)
		assert.Contains(t, r.err.Error(), "guest a: guest failed: rdma link add rxe0 type rxe netdev eth0")
		assert.Contains(t, r.err.Error(), "--- last guest console lines ---")
		assert.Contains(t, r.err.Error(), "guest b was stopped because guest a ended first")
		assert.Equal(t, -1, r.codeA)
		assert.Equal(t, -1, r.codeB)
		assert.Less(t, r.took, p.Timeout, "b is stopped, not left to the deadline")
	})
}
