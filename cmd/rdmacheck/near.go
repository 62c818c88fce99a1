package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// config is the validated command line.
type config struct {
	listen   bool
	connect  string     // the far end's host (near end)
	addr     netip.Addr // the listener's address (far end) or the TCP source address (near end); invalid: any
	port     int        // TCP port of the control channel; rdma_cm listens on port+1
	dev      string     // "" = the only device
	ibPort   int
	gidIndex int // -1 = the best
	timeout  time.Duration
	n        int
	size     int
}

const (
	udpSize     = 64                     // the step 4 datagram
	udpInterval = 200 * time.Millisecond // a datagram is sent again this often until the far end confirms one
	peekFar     = 500 * time.Millisecond // how long a failing near end waits for the far end's own verdict
)

// releaser releases what a run holds, last made first.
type releaser []func() error

func (r *releaser) add(f func() error) { *r = append(*r, f) }

// run releases everything not yet released and returns the first error.
func (r *releaser) run() error {
	var first error
	for i := len(*r) - 1; i >= 0; i-- {
		if err := (*r)[i](); err != nil && first == nil {
			first = err
		}
	}
	*r = nil
	return first
}

// openPort opens the device and checks steps 1 and 2; the device is
// added to rel.
func openPort(h Host, c config, r *reporter, rel *releaser) (Device, PortFacts, GIDFact, *StepError) {
	name, serr := pickDevice(h, c.dev)
	if serr != nil {
		return nil, PortFacts{}, GIDFact{}, serr
	}
	d, err := h.Open(name)
	if err != nil {
		return nil, PortFacts{}, GIDFact{}, fail(stepPort, fmt.Sprintf("cannot open %s: %v", name, err), "the device vanished, or no permission on /dev/infiniband (run as root or join the rdma group)", err)
	}
	rel.add(d.Close)
	if c.ibPort > d.Ports() {
		return nil, PortFacts{}, GIDFact{}, fail(stepPort, fmt.Sprintf("port %d requested (-i) but %s has %d port(s)", c.ibPort, name, d.Ports()), "a wrong -i: ports are numbered from 1", nil)
	}
	pf, err := d.Port(c.ibPort)
	if err != nil {
		return nil, PortFacts{}, GIDFact{}, fail(stepPort, fmt.Sprintf("cannot query %s port %d: %v", name, c.ibPort, err), "the device or its driver is in trouble (dmesg)", err)
	}
	facts, serr := checkPort(pf)
	if serr != nil {
		return nil, pf, GIDFact{}, serr
	}
	r.ok(stepPort, facts)
	gids, err := d.GIDs(c.ibPort)
	if err != nil {
		return nil, pf, GIDFact{}, fail(stepGID, fmt.Sprintf("cannot read the GID table of %s port %d: %v", name, c.ibPort, err), "the device or its driver is in trouble (dmesg)", err)
	}
	g, facts, serr := checkGID(pf, gids, c.gidIndex)
	if serr != nil {
		return nil, pf, g, serr
	}
	r.ok(stepGID, facts)
	return d, pf, g, nil
}

// pickDevice returns the device to use: the named one, else the only one.
func pickDevice(h Host, name string) (string, *StepError) {
	devs, err := h.Devices()
	if err != nil {
		return "", fail(stepPort, "cannot list the RDMA devices: "+err.Error(), "libibverbs or its provider is missing (ibv_devices)", err)
	}
	if len(devs) == 0 {
		return "", fail(stepPort, "no RDMA device", "no driver loaded: load the NIC's (mlx5_ib, irdma, …) or add Soft-RoCE (rdma link add rxe0 type rxe netdev eth0)", nil)
	}
	if name == "" {
		if len(devs) > 1 {
			return "", fail(stepPort, fmt.Sprintf("%d RDMA devices (%s)", len(devs), strings.Join(devs, ", ")), "choose one with -d or RDMA_DEVICE", nil)
		}
		return devs[0], nil
	}
	if !slices.Contains(devs, name) {
		return "", fail(stepPort, fmt.Sprintf("no RDMA device %q; there is %s", name, strings.Join(devs, ", ")), "a wrong -d or RDMA_DEVICE", nil)
	}
	return name, nil
}

// runNear is the near end (-connect): the seven steps against the far end.
// It returns the first failed step (a *StepError), after releasing
// everything.
func runNear(h Host, c config, out io.Writer) (err error) {
	r := &reporter{w: out}
	var rel releaser
	defer func() {
		if rerr := rel.run(); rerr != nil && err == nil {
			err = fail(stepClose, "releasing: "+rerr.Error(), "a bug in rdmacheck", rerr)
		}
	}()

	// Steps 1 and 2.
	d, pf, g, serr := openPort(h, c, r, &rel)
	if serr != nil {
		return serr
	}

	// Step 3: the control channel.
	target := net.JoinHostPort(c.connect, strconv.Itoa(c.port))
	dialer := net.Dialer{Timeout: c.timeout}
	if c.addr.IsValid() {
		dialer.LocalAddr = &net.TCPAddr{IP: c.addr.AsSlice()}
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	nc, err := dialer.DialContext(ctx, "tcp", target)
	cancel()
	if err != nil {
		what, cause := dialFailure(err, c.connect, target, c.timeout)
		return fail(stepControl, what, cause, err)
	}
	defer nc.Close()
	far := nc.RemoteAddr().String()
	farIP, _ := netip.ParseAddrPort(far)
	t := newCtl(nc)
	hello := message{Type: msgHello, Version: protoVersion, Device: pf.Device, Port: pf.Port, GIDIndex: g.Index,
		GID: g.GID.String(), GIDType: g.Type.String(), LinkLayer: pf.LinkLayer,
		Size: c.size, Count: c.n, TimeoutMS: c.timeout.Milliseconds()}
	if err := t.send(hello, time.Now().Add(c.timeout)); err != nil {
		return fail(stepControl, fmt.Sprintf("TCP reached %s but sending on it failed: %v", far, err), "the far end closed the connection: it is not rdmacheck -listen, or it refused us", err)
	}
	fh, err := t.expect(time.Now().Add(c.timeout), msgHello)
	if err != nil {
		return ctlFailure(stepControl, far, "its hello", c.timeout, err)
	}
	farGID, farType, serr := validFarHello(fh, far)
	if serr != nil {
		return serr
	}
	r.ok(stepControl, fmt.Sprintf("TCP to %s in %s; far end %s port %d, GID index %d %s %s", far, roundDur(time.Since(start)), fh.Device, fh.Port, fh.GIDIndex, farGID, farType))

	// Step 4: UDP 4791.
	if serr := nearUDP(d, c, r, &rel, t, pf, g, fh, far, farGID, farType); serr != nil {
		return serr
	}

	// Step 5: rdma_cm connect.
	if err := t.send(message{Type: msgCM}, time.Now().Add(c.timeout)); err != nil {
		return ctlFailure(stepCM, far, "", c.timeout, err)
	}
	cm, err := t.expect(time.Now().Add(c.timeout), msgCM)
	if err != nil {
		return ctlFailure(stepCM, far, "the port of its rdma_cm listener", c.timeout, err)
	}
	if cm.CMPort <= 0 || cm.CMPort > 65535 {
		return fail(stepCM, fmt.Sprintf("the far end %s named rdma_cm port %d (valid: 1-65535)", far, cm.CMPort), "the far end is not a compatible rdmacheck", nil)
	}
	dst := netip.AddrPortFrom(farIP.Addr().Unmap(), uint16(cm.CMPort))
	start = time.Now()
	conn, err := d.DialCM(dst, c.size, time.Now().Add(c.timeout))
	if err != nil {
		what := fmt.Sprintf("to %s: %v", dst, err)
		// The far end's own view, when it failed first (its cause left
		// out: the line has one).
		var ff *farFail
		if _, ferr := t.expect(time.Now().Add(peekFar), msgCM); errors.As(ferr, &ff) {
			what += "; the far end: " + strings.TrimPrefix(withoutCause(ff.line), stepCM+": ")
		}
		return fail(stepCM, what, cmCause(err), err)
	}
	rel.add(conn.Close)
	took := time.Since(start)
	// The far end says when its receives are posted.
	acc, err := t.expect(time.Now().Add(c.timeout), msgCM)
	if err != nil {
		return ctlFailure(stepCM, far, "word of the accepted connection", c.timeout, err)
	}
	if !acc.Got || acc.QPN == 0 || acc.QPN > 0xffffff {
		return fail(stepCM, fmt.Sprintf("the far end %s reported the connection with QPN %d (valid: 1-0xffffff)", far, acc.QPN), "the far end is not a compatible rdmacheck", nil)
	}
	r.ok(stepCM, fmt.Sprintf("RC QP 0x%x connected to the far end's QP 0x%x through rdma_cm at %s in %s", conn.QPN(), acc.QPN, dst, roundDur(took)))

	// Step 6: ping-pongs.
	if serr := nearPings(conn, c, r, t, far); serr != nil {
		return serr
	}

	// Step 7: disconnect and release.
	if err := t.send(message{Type: msgBye}, time.Now().Add(c.timeout)); err != nil {
		return ctlFailure(stepClose, far, "", c.timeout, err)
	}
	if err := rel.run(); err != nil {
		return fail(stepClose, "releasing this end: "+err.Error(), "a bug in rdmacheck, or the device failed", err)
	}
	bye, err := t.expect(time.Now().Add(c.timeout), msgBye)
	if err != nil {
		return ctlFailure(stepClose, far, "its release report", c.timeout, err)
	}
	here := h.Live()
	if len(here) > 0 || len(bye.Live) > 0 {
		what := fmt.Sprintf("objects left open: %d here (%s), %d at the far end (%s)", len(here), listOrNone(here), len(bye.Live), listOrNone(bye.Live))
		return fail(stepClose, what, "a leak in rdmacheck: a bug, report it with this line", nil)
	}
	r.ok(stepClose, "disconnected; every verbs object released here (verbs.Live: 0 open) and at the far end (0 open)")
	return nil
}

// nearUDP is step 4 on the near end.
func nearUDP(d Device, c config, r *reporter, rel *releaser, t *ctl, pf PortFacts, g GIDFact, fh message, far string, farGID verbs.GID, farType verbs.GIDType) *StepError {
	applies, why := udpApplies(pf, g)
	if !applies {
		if err := t.send(message{Type: msgUDP, Skip: true}, time.Now().Add(c.timeout)); err != nil {
			return ctlFailure(stepUDP, far, "", c.timeout, err)
		}
		r.ok(stepUDP, "does not apply: "+why)
		return nil
	}
	if farType != verbs.GIDTypeRoCEv2 {
		return fail(stepUDP, fmt.Sprintf("this end's GID index %d is RoCE v2 but the far end's (index %d, %s) is %s", g.Index, fh.GIDIndex, farGID, farType),
			"both ends must use the same RoCE version: a wrong GID index (-x) on one of them", nil)
	}
	if fh.QPN == 0 {
		return fail(stepUDP, fmt.Sprintf("the far end %s has no UD QP for the datagram: its port takes no RoCE v2 (%s, GID index %d %s)", far, fh.LinkLayer, fh.GIDIndex, farType),
			"the two ends are not alike: check the far end's device (-d) and GID index (-x)", nil)
	}
	dg, err := d.Datagram(pf.Port, g.Index, udpSize)
	if err != nil {
		return fail(stepUDP, "cannot create the UD QP that sends the datagram: "+err.Error(), "the device refused a UD QP (its limits, or memory lock limits: ulimit -l)", err)
	}
	rel.add(dg.Close)
	var nb [8]byte
	_, _ = rand.Read(nb[:])
	nonce := binary.BigEndian.Uint64(nb[:]) | 1
	if err := t.send(message{Type: msgUDP, Nonce: nonce, QPN: dg.QPN()}, time.Now().Add(c.timeout)); err != nil {
		return ctlFailure(stepUDP, far, "", c.timeout, err)
	}
	payload := datagramPayload(nonce)
	start := time.Now()
	// The far end waits c.timeout (or less) and then answers: give it
	// the time to say so.
	deadline := start.Add(c.timeout + c.timeout/2 + time.Second)
	for sent := 0; ; sent++ {
		if time.Now().After(deadline) {
			return fail(stepUDP, fmt.Sprintf("the far end %s gave no verdict on the datagrams within %s", far, roundDur(time.Since(start))), "the far end is stuck, or the TCP channel broke", nil)
		}
		if err := dg.Send(farGID, fh.QPN, fh.QKey, payload, time.Now().Add(c.timeout)); err != nil {
			return fail(stepUDP, fmt.Sprintf("the UD send to %s (QPN 0x%x) failed on this end: %v", farGID, fh.QPN, err), "this end cannot send RoCE v2: no route or neighbour for the far end's address from this GID's netdev", err)
		}
		m, err := t.expect(time.Now().Add(udpInterval), msgUDP)
		if isTimeout(err) {
			continue
		}
		if err != nil {
			return ctlFailure(stepUDP, far, "its datagram verdict", c.timeout, err)
		}
		if !m.Got {
			return udpBlocked(far, time.Duration(m.Waited)*time.Microsecond)
		}
		r.ok(stepUDP, fmt.Sprintf("a RoCE v2 datagram (UD SEND, %d B, %d sent) reached the far end's UD QP 0x%x in %s", udpSize, sent+1, fh.QPN, roundDur(time.Duration(m.Elapsed)*time.Microsecond)))
		return nil
	}
}

// datagramPayload is step 4's datagram: the nonce, then a pattern.
func datagramPayload(nonce uint64) []byte {
	p := make([]byte, udpSize)
	fillPattern(p, 0, 'u')
	binary.BigEndian.PutUint64(p, nonce)
	return p
}

// nearPings is step 6 on the near end.
func nearPings(conn Conn, c config, r *reporter, t *ctl, far string) *StepError {
	out, in := make([]byte, c.size), make([]byte, c.size)
	rtts := make([]time.Duration, 0, c.n)
	for i := range c.n {
		fillPattern(out, i, 'a')
		start := time.Now()
		if err := conn.Send(out, start.Add(c.timeout)); err != nil {
			return fail(stepPing, fmt.Sprintf("ping %d of %d: the send failed: %v", i, c.n, err), wcCause(err), err)
		}
		n, err := conn.Recv(in, time.Now().Add(c.timeout))
		if err != nil {
			if m, ferr := t.expect(time.Now().Add(peekFar), msgPings); ferr == nil && m.Mismat != "" {
				return fail(stepPing, m.Mismat+", seen by the far end "+far, mismatchCause, nil)
			} else if ff := (*farFail)(nil); errors.As(ferr, &ff) {
				return fail(stepPing, fmt.Sprintf("no answer to ping %d of %d; the far end: %s", i, c.n, strings.TrimPrefix(withoutCause(ff.line), stepPing+": ")), wcCause(err), err)
			}
			if isTimeout(err) {
				return fail(stepPing, fmt.Sprintf("no answer to ping %d of %d within %s", i, c.n, c.timeout), "the far end stopped answering (see its output) or the RC connection broke", err)
			}
			return fail(stepPing, fmt.Sprintf("ping %d of %d: the receive failed: %v", i, c.n, err), wcCause(err), err)
		}
		rtts = append(rtts, time.Since(start))
		if m := checkPattern(in[:n], c.size, i, 'b'); m != nil {
			return fail(stepPing, m.String()+", seen by this end", mismatchCause, nil)
		}
	}
	m, err := t.expect(time.Now().Add(c.timeout), msgPings)
	if err != nil {
		return ctlFailure(stepPing, far, "its ping verdict", c.timeout, err)
	}
	if m.Mismat != "" {
		return fail(stepPing, m.Mismat+", seen by the far end "+far, mismatchCause, nil)
	}
	lo, med, hi := roundTrips(rtts)
	r.ok(stepPing, fmt.Sprintf("%d × %d B SEND/RECV round trips, every payload checked on both ends; round trip min %s median %s max %s (a bring-up figure, not a benchmark)",
		c.n, c.size, roundDur(lo), roundDur(med), roundDur(hi)))
	return nil
}

// validFarHello checks the far end's hello.
func validFarHello(m message, far string) (verbs.GID, verbs.GIDType, *StepError) {
	if m.Fail != "" {
		return verbs.GID{}, 0, fail(stepControl, fmt.Sprintf("TCP reached %s, but the far end failed its own check: %s", far, m.Fail), "", nil)
	}
	bad := func(what string) *StepError {
		return fail(stepControl, fmt.Sprintf("the far end %s sent a bad hello: %s", far, what), "the far end is not a compatible rdmacheck -listen", nil)
	}
	if m.Version != protoVersion {
		return verbs.GID{}, 0, bad(fmt.Sprintf("protocol version %d (this end speaks %d)", m.Version, protoVersion))
	}
	gid, err := parseGID(m.GID)
	if err != nil {
		return verbs.GID{}, 0, bad(err.Error())
	}
	ty, err := parseGIDType(m.GIDType)
	if err != nil {
		return verbs.GID{}, 0, bad(err.Error())
	}
	if m.QPN > 0xffffff {
		return verbs.GID{}, 0, bad(fmt.Sprintf("UD QPN %d (valid: 1-0xffffff)", m.QPN))
	}
	return gid, ty, nil
}

func parseGID(s string) (verbs.GID, error) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return verbs.GID{}, fmt.Errorf("GID %.64q: %w", s, err)
	}
	return verbs.GID(a.As16()), nil
}

func parseGIDType(s string) (verbs.GIDType, error) {
	for _, t := range []verbs.GIDType{verbs.GIDTypeIB, verbs.GIDTypeRoCEv1, verbs.GIDTypeRoCEv2} {
		if t.String() == s {
			return t, nil
		}
	}
	return 0, fmt.Errorf("GID type %.32q (valid: IB, RoCE v1, RoCE v2)", s)
}

// dialFailure names why TCP to the far end failed.
func dialFailure(err error, host, target string, timeout time.Duration) (what, cause string) {
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		return fmt.Sprintf("cannot resolve %q: %v", host, dns.Err), "a wrong host name: give the far end's IP address"
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("TCP to %s was refused", target), "nothing listens there: start rdmacheck -listen on the far end, or a wrong -port"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Sprintf("no route to %s: %v", target, err), "a wrong address, or the interface towards it is down or has no address"
	case isTimeout(err) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no TCP answer from %s in %s", target, timeout), "the host is down or unreachable, or a firewall drops TCP to that port"
	}
	return fmt.Sprintf("TCP to %s failed: %v", target, err), "no IP reachability to the far end"
}

// ctlFailure is a step that failed on the control channel.
func ctlFailure(step, far, waitingFor string, timeout time.Duration, err error) *StepError {
	var ff *farFail
	switch {
	case errors.As(err, &ff):
		return fail(step, "the far end: "+strings.TrimPrefix(ff.line, step+": "), "", err)
	case isTimeout(err):
		if waitingFor == "" {
			waitingFor = "its answer"
		}
		return fail(step, fmt.Sprintf("the far end %s did not send %s within %s", far, waitingFor, timeout), "the far end is stuck or serving another client (one at a time), or it is not rdmacheck -listen", err)
	case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
		return fail(step, fmt.Sprintf("the far end %s closed the control channel", far), "it failed or stopped: see its output", err)
	}
	return fail(step, fmt.Sprintf("the control channel to %s: %v", far, err), "the far end is not a compatible rdmacheck -listen", err)
}

// wcCause names the likely cause of a failed send or receive on the RC
// connection.
func wcCause(err error) string {
	var wc *verbs.WCError
	if errors.As(err, &wc) {
		switch wc.Status {
		case verbs.WCRetryExcErr:
			return "the far end stopped acknowledging: the link or RoCE path broke mid-run, or the far end's QP is gone"
		case verbs.WCRNRRetryExcErr:
			return "the far end had no receive posted: it stopped or fell behind"
		case verbs.WCWRFlushErr:
			return "the connection was already broken (an earlier error, or a disconnect)"
		}
	}
	return "the RC connection broke (see the far end's output)"
}

// withoutCause is a failure line without its " — cause".
func withoutCause(line string) string {
	what, _, _ := strings.Cut(line, " — ")
	return what
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "; ")
}

// roundDur rounds d for printing.
func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d >= time.Microsecond:
		return d.Round(100 * time.Nanosecond)
	}
	return d
}
