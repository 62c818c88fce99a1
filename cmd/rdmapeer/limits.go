package main

import (
	"errors"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/rdmatest/peer"
)

// budget is an amount of each resource a client can make the peer create
// (see costOf): QPs, work requests of every queue, completion queue
// entries, and memory (registered plus the estimated queue rings).
type budget struct {
	QPs, WRs, CQEs int
	Mem            int64
}

// costOf is what req costs against the budgets on a device with lim: the
// QPs, work requests and CQ entries of peer.SetupCost, and as memory its
// registered bytes plus ringBytes, the queue rings the device allocates
// for it. The rings include the send queues' inline space (peer.Cost's
// Inline), which is therefore not added again. req must have passed
// peer.CheckSetup (its values are bounded).
func costOf(req *oob.Setup, lim peer.Limits) budget {
	c := peer.SetupCost(req, lim)
	return budget{QPs: c.QPs, WRs: c.WRs, CQEs: c.CQEs, Mem: c.Registered + ringBytes(req, c)}
}

// The queue rings of a Setup: what the provider and the kernel allocate
// (and, for mlx5, pin) for its send queues, receive queues or SRQ, and
// CQ, beyond the registered buffers. It is an estimate, an upper bound
// for mlx5 (rdma-core's libmlx5) and rxe (the kernel's rdma_rxe) as they
// size their rings, on hosts whose cache lines are at most 64 bytes:
//
//   - a send WQE is sendWQEHeader bytes plus the larger of its one SGE
//     (sgeBytes) and its inline data, rounded up to a power of two. rxe's
//     element is struct rxe_send_wqe (208 bytes in rdma_user_rxe.h) plus
//     that much, rounded so; mlx5's is its largest RC overhead (192
//     bytes: control segment and the memory-window UMR segments) plus
//     its data segment (16 bytes) or inline segment (a 4-byte header and
//     the data), rounded up to 64 bytes, which never exceeds ours;
//   - a receive WQE is recvWQEBytes: rxe's struct rxe_recv_wqe (40 bytes)
//     and one SGE rounded up to a power of two; mlx5 uses 16 per SGE, or
//     32 for an SRQ (next segment and one SGE);
//   - a CQE is cqeBytes: rxe's element holds a kernel struct ib_wc (72
//     bytes on 64-bit hosts), rounded up to a power of two; mlx5's CQEs
//     are 64 bytes, or 128 where cache lines are;
//   - a ring of depth d has the next power of two above d slots (rxe keeps
//     one slot empty, libmlx5 asks for cqe+1 CQEs and rounds the send
//     queue's bytes up to a power of two, which is at most our product),
//     and is rounded up to whole pages (mlx5 puts a QP's send and receive
//     queues in one buffer, no larger than the two rounded apart).
//
// Doorbell records (carved from pages the process's queues share) and the
// context's UAR pages are not counted.
const (
	sendWQEHeader = 208
	sgeBytes      = 16
	recvWQEBytes  = 64
	cqeBytes      = 128
)

// ringBytes estimates the queue rings of req, whose c.Sides CQs have
// c.CQEs entries in all (see the constants above). A second side (role
// write-rpc's responses) has the first's depths, one QP and no SRQ, as
// the first then has: the rings are those of one side, times the sides.
func ringBytes(req *oob.Setup, c peer.Cost) int64 {
	sc := req.Scenario
	page := int64(os.Getpagesize())
	ring := func(depth, elem int64) int64 {
		return (pow2(depth+1)*pow2(elem) + page - 1) / page * page
	}
	sides := int64(max(c.Sides, 1))
	qps, send, recv := int64(sc.QPs), int64(sc.SendDepth), int64(sc.RecvDepth)
	total := qps * ring(send, sendWQEHeader+max(sgeBytes, int64(sc.Inline)))
	if sc.SRQ {
		total += ring(recv, recvWQEBytes)
	} else {
		total += qps * ring(recv, recvWQEBytes)
	}
	return sides * (total + ring(int64(c.CQEs)/sides, cqeBytes))
}

// pow2 is the least power of two ≥ n (1 for n ≤ 1).
func pow2(n int64) int64 {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len64(uint64(n-1))
}

// item is one resource of a budget, with the flag that sets its limit.
type item struct {
	name       string
	ask, limit int64
	flag       string
}

func (b budget) items(limit budget, scope string) []item {
	return []item{
		{"qps", int64(b.QPs), int64(limit.QPs), "-" + scope + "-qps"},
		{"work requests (queue depths × QPs)", int64(b.WRs), int64(limit.WRs), "-" + scope + "-wrs"},
		{"CQ entries", int64(b.CQEs), int64(limit.CQEs), "-" + scope + "-cqe"},
		{"memory bytes (registered + queue rings)", b.Mem, limit.Mem, "-" + scope + "-mem"},
	}
}

// ErrOverLimit is a request beyond the peer's per-client or total limits.
var ErrOverLimit = errors.New("over this peer's limit")

// within checks a client's cost against the per-client limits.
func (b budget) within(limit budget) error {
	var errs []error
	for _, it := range b.items(limit, "max") {
		if it.ask > it.limit {
			errs = append(errs, fmt.Errorf("%s %d exceeds this peer's limit %d per client (%s): %w", it.name, it.ask, it.limit, it.flag, ErrOverLimit))
		}
	}
	return errors.Join(errs...)
}

// pool is the global budget every session draws from.
type pool struct {
	mu    sync.Mutex
	total budget
	used  budget
}

// take reserves c, or says which resource is exhausted.
func (p *pool) take(c budget) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	in := budget{p.used.QPs + c.QPs, p.used.WRs + c.WRs, p.used.CQEs + c.CQEs, p.used.Mem + c.Mem}
	var errs []error
	used := p.used.items(p.total, "total")
	for i, it := range in.items(p.total, "total") {
		if it.ask > it.limit {
			errs = append(errs, fmt.Errorf("%s: %d in use by other clients + %d asked exceeds this peer's total %d (%s): %w",
				it.name, used[i].ask, it.ask-used[i].ask, it.limit, it.flag, ErrOverLimit))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	p.used = in
	return nil
}

// give returns what take reserved.
func (p *pool) give(c budget) {
	p.mu.Lock()
	p.used = budget{p.used.QPs - c.QPs, p.used.WRs - c.WRs, p.used.CQEs - c.CQEs, p.used.Mem - c.Mem}
	p.mu.Unlock()
}

func (p *pool) inUse() budget {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// Failed handshakes: after maxFails from one address within failWindow,
// the address is refused for blockFor; after prefixMaxFails from the
// addresses of one prefix (-prefix-v4, -prefix-v6: a /24 or a /64 by
// default), the whole prefix is, so that a client cannot go on from the
// next address of its range.
const (
	maxFails       = 5
	prefixMaxFails = 4 * maxFails
	failWindow     = time.Minute
	blockFor       = time.Minute
)

// The default prefixes of the lockout and the log budget
// (-prefix-v4, -prefix-v6): what one site or one host's IPv6 range
// usually holds.
const (
	defaultPrefixV4 = 24
	defaultPrefixV6 = 64
)

// Log lines about one address (its connections, handshakes and
// sessions) are rate-limited by a token bucket kept with its entry, and
// by one of its prefix's entry, shared by the prefix's addresses:
// logBurst lines at once, then one every logEvery. The lines beyond are
// counted, and sweep logs "N lines from HOST suppressed" once
// logSummaryEvery has passed since the first of them (and serve, when it
// ends, whatever is left). An entry is kept until its bucket is full
// again and its summary logged, so that an address cannot get a fresh
// burst by closing its connection.
const (
	logBurst        = 32
	logEvery        = 250 * time.Millisecond
	logSummaryEvery = 10 * time.Second
)

// defaultMaxHosts is -max-hosts: how many addresses the table of hosts
// holds at most.
//
// An entry is dropped once nothing of it is left: no connection, no
// failed handshake within failWindow, no block, and its log bucket full
// with no summary pending (release drops it if so at once; sweep, every
// sweepEvery, drops the ones that expire later: after a refusal, failed
// handshakes or log lines).
// When the table is full, a new address first makes admit drop the
// expired entries; if none has expired, the new address is refused,
// naming the limit. No live entry is ever dropped early: evicting a
// blocked address, or one with recent failures, would let an attacker
// clear its own block by connecting from enough other addresses. The
// price of that choice: an attacker with more than -max-hosts addresses
// (an IPv6 range) that fails a handshake from each can keep new addresses
// out for about a minute at a time; addresses in the table (clients with
// a connection open) are served on, and -max-conns still bounds what is
// open.
const defaultMaxHosts = 4096

// sweepEvery is how often serve sweeps the table of hosts.
const sweepEvery = time.Second

// hosts counts connections, failed handshakes and log lines per remote
// address, in a table of at most max addresses, and per prefix of
// addresses ("192.0.2.0/24"), in a table of at most max prefixes. When
// the prefixes' table is full, a new prefix is not tracked (its
// addresses still are): the address table is what bounds a client.
type hosts struct {
	mu       sync.Mutex
	perHost  int
	max      int
	prefixV4 int // bits of an IPv4 address's prefix; 32: none
	prefixV6 int // bits of an IPv6 address's prefix; 128: none
	m        map[string]*hostState
	pm       map[string]*hostState // by prefix
	now      func() time.Time
	maxFails int
	// prefixMaxFails is maxFails of a prefix (prefixMaxFails).
	prefixMaxFails int
	// other is the log bucket of the addresses refused because the
	// table is full (they have no entry): one for all of them.
	other logBucket
}

type hostState struct {
	conns        int
	fails        []time.Time
	blockedUntil time.Time
	log          logBucket
}

// logBucket is a token bucket of log lines (see logBurst). Its zero
// value is full.
type logBucket struct {
	used       float64   // tokens spent, 0..logBurst (0: full)
	at         time.Time // when used was brought up to date
	suppressed int       // lines dropped since the last summary
	since      time.Time // when the first of them was dropped
}

// refill brings the bucket up to now.
func (b *logBucket) refill(now time.Time) {
	if d := now.Sub(b.at); d > 0 {
		b.used = max(0, b.used-float64(d)/float64(logEvery))
	}
	b.at = now
}

// allow spends a token for one line, or counts the line as suppressed.
func (b *logBucket) allow(now time.Time) bool {
	b.refill(now)
	if b.used+1 <= logBurst {
		b.used++
		return true
	}
	if b.suppressed == 0 {
		b.since = now
	}
	b.suppressed++
	return false
}

// summary takes the count of suppressed lines when its summary is due
// (logSummaryEvery after the first of them), or at once when all.
func (b *logBucket) summary(now time.Time, all bool) int {
	n := b.suppressed
	if n == 0 || !all && now.Sub(b.since) < logSummaryEvery {
		return 0
	}
	b.suppressed = 0
	return n
}

// quiet tells whether the bucket is full with no summary pending: a new
// one would be the same.
func (b *logBucket) quiet(now time.Time) bool {
	b.refill(now)
	return b.used == 0 && b.suppressed == 0
}

func newHosts(perHost, maxHosts, prefixV4, prefixV6 int) *hosts {
	return &hosts{perHost: perHost, max: maxHosts, prefixV4: prefixV4, prefixV6: prefixV6, m: map[string]*hostState{},
		pm: map[string]*hostState{}, now: time.Now, maxFails: maxFails, prefixMaxFails: prefixMaxFails}
}

// prefixOf is the key of host's prefix ("192.0.2.0/24"), or "" when
// host is no IP address or its prefix is the whole address.
func (h *hosts) prefixOf(host string) string {
	a, err := netip.ParseAddr(host)
	if err != nil {
		return ""
	}
	a = a.Unmap().WithZone("")
	bits := h.prefixV6
	if a.Is4() {
		bits = h.prefixV4
	}
	if bits >= a.BitLen() {
		return ""
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return ""
	}
	return p.String()
}

// hostOf is the address's IP (the whole string when it has no port).
func hostOf(a net.Addr) string {
	if a == nil {
		return "unknown"
	}
	h, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return h
}

// admit counts a new connection from host, or refuses it: its address
// or its prefix is blocked, it has -max-conns-per-host connections, or
// the table has no room for it.
func (h *hosts) admit(host string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if st := h.m[host]; st != nil {
		h.prune(h.m, host, st, now) // old failures out; an expired entry goes
	}
	pfx := h.prefixOf(host)
	ps := h.pm[pfx]
	if ps != nil {
		h.prune(h.pm, pfx, ps, now)
		if now.Before(ps.blockedUntil) {
			return fmt.Errorf("refused: %d failed handshakes from %s within %v; try again in %v", len(ps.fails), pfx, failWindow, ps.blockedUntil.Sub(now).Round(time.Second))
		}
	}
	st, err := h.entry(host, now)
	if err != nil {
		return err
	}
	// A refusal keeps the entry: it is blocked, or has connections.
	if now.Before(st.blockedUntil) {
		return fmt.Errorf("refused: %d failed handshakes from %s within %v; try again in %v", len(st.fails), host, failWindow, st.blockedUntil.Sub(now).Round(time.Second))
	}
	if st.conns >= h.perHost {
		return fmt.Errorf("refused: %d connections from %s already (-max-conns-per-host %d)", st.conns, host, h.perHost)
	}
	st.conns++
	if ps := h.prefixEntry(pfx, now); ps != nil {
		ps.conns++ // kept while its addresses have connections
	}
	return nil
}

// entry is host's entry, made when missing if the table has room (after
// dropping the expired entries when it is full); h.mu is held.
func (h *hosts) entry(host string, now time.Time) (*hostState, error) {
	if st := h.m[host]; st != nil {
		return st, nil
	}
	if len(h.m) >= h.max {
		for k, st := range h.m {
			h.prune(h.m, k, st, now)
		}
	}
	if len(h.m) >= h.max {
		return nil, fmt.Errorf("refused: the peer tracks %d addresses already (connections, failed handshakes, blocks; -max-hosts %d); try again in a minute", len(h.m), h.max)
	}
	st := &hostState{}
	h.m[host] = st
	return st, nil
}

// prefixEntry is the entry of prefix pfx, made when missing if its table
// has room; nil for no prefix ("") or no room. h.mu is held.
func (h *hosts) prefixEntry(pfx string, now time.Time) *hostState {
	if pfx == "" {
		return nil
	}
	if ps := h.pm[pfx]; ps != nil {
		return ps
	}
	if len(h.pm) >= h.max {
		for k, ps := range h.pm {
			h.prune(h.pm, k, ps, now)
		}
		if len(h.pm) >= h.max {
			return nil
		}
	}
	ps := &hostState{}
	h.pm[pfx] = ps
	return ps
}

// release ends a connection admitted for host.
func (h *hosts) release(host string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	if st := h.m[host]; st != nil {
		st.conns--
		h.prune(h.m, host, st, now)
	}
	pfx := h.prefixOf(host)
	if ps := h.pm[pfx]; ps != nil && ps.conns > 0 {
		ps.conns--
		h.prune(h.pm, pfx, ps, now)
	}
}

// fail records a failed handshake from host (and its prefix) and tells
// how many there were from host within failWindow, and what is blocked
// now: host, its prefix, or "" for nothing. Host has an entry (it was
// admitted); were the table full without one, the failure would not be
// counted.
func (h *hosts) fail(host string) (int, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	st, err := h.entry(host, now)
	if err != nil {
		return 0, ""
	}
	blocked := ""
	pfx := h.prefixOf(host)
	if ps := h.prefixEntry(pfx, now); ps != nil {
		ps.fails = append(ps.fails, now)
		h.prune(h.pm, pfx, ps, now)
		if len(ps.fails) >= h.prefixMaxFails {
			ps.blockedUntil, blocked = now.Add(blockFor), pfx
		}
	}
	st.fails = append(st.fails, now)
	h.prune(h.m, host, st, now)
	if len(st.fails) >= h.maxFails {
		st.blockedUntil = now.Add(blockFor)
		if blocked == "" {
			blocked = host
		}
	}
	return len(st.fails), blocked
}

// logLine tells whether a line about host may be logged now (its log
// bucket, or the shared one of the addresses without an entry); a line
// refused is counted for the summary.
func (h *hosts) logLine(host string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	st := h.m[host]
	if st == nil {
		return h.other.allow(now)
	}
	// The address's bucket first: one address's flood is summed up under
	// its name; the prefix's then holds back many addresses of one
	// range, each with a full bucket of its own.
	if !st.log.allow(now) {
		return false
	}
	if ps := h.pm[h.prefixOf(host)]; ps != nil {
		return ps.log.allow(now)
	}
	return true
}

// sweep drops the expired entries and returns the summaries of
// suppressed lines that are due (all of them when all).
func (h *hosts) sweep(all bool) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	var lines []string
	for _, m := range []map[string]*hostState{h.m, h.pm} {
		for key, st := range m {
			if n := st.log.summary(now, all); n > 0 {
				lines = append(lines, fmt.Sprintf("%d lines from %s suppressed (more than %d at once or one per %v)", n, key, logBurst, logEvery))
			}
			h.prune(m, key, st, now)
		}
	}
	sort.Strings(lines)
	if n := h.other.summary(now, all); n > 0 {
		lines = append(lines, fmt.Sprintf("%d lines from addresses refused while the table was full (-max-hosts %d) suppressed", n, h.max))
	}
	return lines
}

// size is the number of entries, of addresses and of prefixes.
func (h *hosts) size() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.m) + len(h.pm)
}

// prune forgets failures older than failWindow, and host (an address
// of m, or a prefix) when nothing of it is left (see defaultMaxHosts);
// h.mu is held.
func (h *hosts) prune(m map[string]*hostState, host string, st *hostState, now time.Time) {
	i := 0
	for i < len(st.fails) && now.Sub(st.fails[i]) > failWindow {
		i++
	}
	st.fails = st.fails[i:]
	if st.conns == 0 && len(st.fails) == 0 && !now.Before(st.blockedUntil) && st.log.quiet(now) {
		delete(m, host)
	}
}
