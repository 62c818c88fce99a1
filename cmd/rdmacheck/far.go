package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// Bounds on what a near end may ask of the far end.
const (
	maxCount   = 1_000_000
	maxSize    = 1 << 16
	maxTimeout = 10 * time.Minute
)

// runFar is the far end (-listen): it serves one near end at a time until
// stop is closed, then returns (an error if verbs objects were left open).
// Nothing a client sends ends it: every session's error is printed and
// the next client is served.
func runFar(h Host, c config, out io.Writer, stop <-chan struct{}, ready func(net.Addr)) error {
	host := ""
	if c.addr.IsValid() {
		host = c.addr.String()
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(c.port)))
	if err != nil {
		return fmt.Errorf("cannot listen on TCP %s: %w", net.JoinHostPort(host, strconv.Itoa(c.port)), err)
	}
	fmt.Fprintf(out, "rdmacheck: listening on %s (control channel; rdma_cm on port %d), one client at a time\n", ln.Addr(), c.port+1)
	if ready != nil {
		ready(ln.Addr())
	}
	stopped := make(chan struct{})
	go func() {
		select {
		case <-stop:
		case <-stopped:
		}
		ln.Close()
	}()
	defer close(stopped)
	for {
		nc, err := ln.Accept()
		if err != nil {
			select {
			case <-stop:
				if live := h.Live(); len(live) > 0 {
					return fmt.Errorf("stopped with %d objects open: %s", len(live), listOrNone(live))
				}
				fmt.Fprintln(out, "rdmacheck: stopped; every verbs object released (verbs.Live: 0 open)")
				return nil
			default:
			}
			if isTimeout(err) || errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("accepting on %s: %w", ln.Addr(), err)
			}
			// A transient accept error (EMFILE, ECONNABORTED): the next
			// client may fare better.
			fmt.Fprintf(out, "rdmacheck: accept: %v\n", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		serveOne(h, c, nc, out)
	}
}

// serveOne runs one session and prints how it ended.
func serveOne(h Host, c config, nc net.Conn, out io.Writer) {
	r := &reporter{w: out, prefix: "[" + nc.RemoteAddr().String() + "] "}
	r.note("session opened")
	var rel releaser
	err := farSession(h, c, nc, r, &rel)
	if rerr := rel.run(); rerr != nil && err == nil {
		err = fmt.Errorf("releasing: %w", rerr)
	}
	nc.Close()
	if err != nil {
		r.note("session ended: %v", err)
	} else {
		r.note("session done")
	}
	if live := h.Live(); len(live) > 0 {
		r.note("LEAK: %d objects left open after the session: %s", len(live), listOrNone(live))
	}
}

// farSession is one near end's session on the far end.
func farSession(h Host, c config, nc net.Conn, r *reporter, rel *releaser) error {
	t := newCtl(nc)
	client := nc.RemoteAddr().String()
	// failTo reports a failed step to the near end and ends the session.
	failTo := func(serr *StepError) error {
		r.fail(serr)
		_ = t.send(message{Type: msgFail, Fail: serr.Error()}, time.Now().Add(c.timeout))
		return serr
	}
	hello, err := t.expect(time.Now().Add(c.timeout), msgHello)
	if err != nil {
		return fmt.Errorf("reading the hello: %w", err)
	}
	wait, err := validNearHello(hello, c.timeout)
	if err != nil {
		_ = t.send(message{Type: msgFail, Fail: "control channel: refused the hello: " + err.Error()}, time.Now().Add(c.timeout))
		return fmt.Errorf("a bad hello: %w", err)
	}

	d, pf, g, serr := openPort(h, c, r, rel)
	if serr != nil {
		r.fail(serr)
		_ = t.send(message{Type: msgHello, Version: protoVersion, Fail: serr.Error()}, time.Now().Add(c.timeout))
		return serr
	}
	reply := message{Type: msgHello, Version: protoVersion, Device: pf.Device, Port: pf.Port, GIDIndex: g.Index,
		GID: g.GID.String(), GIDType: g.Type.String(), LinkLayer: pf.LinkLayer}
	var dg Datagram
	if ok, _ := udpApplies(pf, g); ok {
		dg, err = d.Datagram(pf.Port, g.Index, udpSize)
		if err != nil {
			return failTo(fail(stepUDP, "cannot create the UD QP that receives the datagram: "+err.Error(), "the device refused a UD QP (its limits, or memory lock limits: ulimit -l)", err))
		}
		rel.add(dg.Close)
		reply.QPN, reply.QKey = dg.QPN(), dg.QKey()
	}
	if err := t.send(reply, time.Now().Add(c.timeout)); err != nil {
		return fmt.Errorf("sending the hello: %w", err)
	}
	r.ok(stepControl, fmt.Sprintf("hello from %s (%s port %d, GID index %d %s %s): %d × %d B pings, waits of %s",
		client, hello.Device, hello.Port, hello.GIDIndex, hello.GID, hello.GIDType, hello.Count, hello.Size, wait))

	// Step 4.
	m, err := t.expect(time.Now().Add(wait), msgUDP)
	if err != nil {
		return fmt.Errorf("waiting for the datagram test: %w", err)
	}
	if !m.Skip {
		if dg == nil {
			return failTo(fail(stepUDP, fmt.Sprintf("GID index %d here is %s: it takes no RoCE v2 datagram", g.Index, g.Type), "both ends must use RoCE v2 GIDs: a wrong GID index (-x) on one of them", nil))
		}
		if err := farUDP(dg, t, r, m.Nonce, wait, client); err != nil {
			return err
		}
	}

	// Step 5.
	if _, err := t.expect(time.Now().Add(wait), msgCM); err != nil {
		return fmt.Errorf("waiting for the rdma_cm step: %w", err)
	}
	local, ok := netip.AddrFromSlice(nc.LocalAddr().(*net.TCPAddr).IP)
	if !ok {
		return fmt.Errorf("the control channel's local address %s", nc.LocalAddr())
	}
	at := netip.AddrPortFrom(local.Unmap(), uint16(c.port+1))
	ln, err := d.ListenCM(at, hello.Size)
	if err != nil {
		return failTo(fail(stepCM, fmt.Sprintf("cannot listen through rdma_cm on %s: %v", at, err), cmCause(err), err))
	}
	rel.add(ln.Close)
	if err := t.send(message{Type: msgCM, CMPort: c.port + 1}, time.Now().Add(c.timeout)); err != nil {
		return fmt.Errorf("sending the rdma_cm port: %w", err)
	}
	conn, err := ln.Accept(time.Now().Add(wait))
	if err != nil {
		return failTo(fail(stepCM, fmt.Sprintf("no rdma_cm connection accepted on %s: %v", at, err), cmCause(err), err))
	}
	rel.add(conn.Close)
	// Its receives are posted: the near end may send.
	if err := t.send(message{Type: msgCM, QPN: conn.QPN(), Got: true}, time.Now().Add(c.timeout)); err != nil {
		return fmt.Errorf("sending the connection's QPN: %w", err)
	}
	r.ok(stepCM, fmt.Sprintf("accepted an rdma_cm connection on %s to RC QP 0x%x", at, conn.QPN()))

	// Step 6.
	in, out := make([]byte, hello.Size), make([]byte, hello.Size)
	for i := range hello.Count {
		n, err := conn.Recv(in, time.Now().Add(wait))
		if err != nil {
			serr := fail(stepPing, fmt.Sprintf("ping %d of %d did not arrive: %v", i, hello.Count, err), wcCause(err), err)
			r.fail(serr)
			return serr
		}
		if mm := checkPattern(in[:n], hello.Size, i, 'a'); mm != nil {
			serr := fail(stepPing, mm.String()+", seen by the far end", mismatchCause, nil)
			r.fail(serr)
			_ = t.send(message{Type: msgPings, Iter: i, Mismat: mm.String()}, time.Now().Add(c.timeout))
			return serr
		}
		fillPattern(out, i, 'b')
		if err := conn.Send(out, time.Now().Add(wait)); err != nil {
			serr := fail(stepPing, fmt.Sprintf("the answer to ping %d of %d failed: %v", i, hello.Count, err), wcCause(err), err)
			r.fail(serr)
			return serr
		}
	}
	if err := t.send(message{Type: msgPings, Iter: hello.Count}, time.Now().Add(c.timeout)); err != nil {
		return fmt.Errorf("sending the ping verdict: %w", err)
	}
	r.ok(stepPing, fmt.Sprintf("%d × %d B pings checked and answered", hello.Count, hello.Size))

	// Step 7.
	if _, err := t.expect(time.Now().Add(wait), msgBye); err != nil {
		return fmt.Errorf("waiting for the bye: %w", err)
	}
	if err := rel.run(); err != nil {
		return failTo(fail(stepClose, "releasing: "+err.Error(), "a bug in rdmacheck, or the device failed", err))
	}
	live := h.Live()
	if len(live) > 32 {
		live = append(live[:32], fmt.Sprintf("… %d more", len(live)-32))
	}
	if err := t.send(message{Type: msgBye, Live: live}, time.Now().Add(c.timeout)); err != nil {
		return fmt.Errorf("sending the release report: %w", err)
	}
	if len(live) > 0 {
		serr := fail(stepClose, fmt.Sprintf("%d objects left open: %s", len(live), listOrNone(live)), "a leak in rdmacheck: a bug, report it with this line", nil)
		r.fail(serr)
		return serr
	}
	r.ok(stepClose, "disconnected; every verbs object released (verbs.Live: 0 open)")
	return nil
}

// farUDP waits for the near end's datagram.
func farUDP(dg Datagram, t *ctl, r *reporter, nonce uint64, wait time.Duration, client string) error {
	start := time.Now()
	deadline := start.Add(wait)
	buf := make([]byte, udpSize)
	stray := 0
	for {
		n, err := dg.Recv(buf, deadline)
		if isTimeout(err) {
			elapsed := time.Since(start)
			_ = t.send(message{Type: msgUDP, Got: false, Stray: stray, Elapsed: elapsed.Microseconds(), Waited: wait.Microseconds()}, time.Now().Add(wait))
			serr := fail(stepUDP, fmt.Sprintf("no RoCE v2 datagram (UDP port 4791) from %s arrived in %s (%d stray)", client, wait, stray),
				"a firewall passing TCP but dropping UDP, a switch port without RoCE, or a wrong GID index/type", nil)
			r.fail(serr)
			return serr
		}
		if err != nil {
			serr := fail(stepUDP, "the UD receive failed: "+err.Error(), "the device failed (dmesg)", err)
			_ = t.send(message{Type: msgFail, Fail: serr.Error()}, time.Now().Add(wait))
			r.fail(serr)
			return serr
		}
		if n < 8 || binary.BigEndian.Uint64(buf) != nonce {
			stray++
			continue
		}
		elapsed := time.Since(start)
		if err := t.send(message{Type: msgUDP, Got: true, Stray: stray, Elapsed: elapsed.Microseconds()}, time.Now().Add(wait)); err != nil {
			return fmt.Errorf("sending the datagram verdict: %w", err)
		}
		r.ok(stepUDP, fmt.Sprintf("a RoCE v2 datagram from %s arrived in %s", client, roundDur(elapsed)))
		return nil
	}
}

// validNearHello checks a near end's hello and returns the wait the
// session uses: the shorter of the two ends' -timeout.
func validNearHello(m message, own time.Duration) (time.Duration, error) {
	if m.Version != protoVersion {
		return 0, fmt.Errorf("protocol version %d (this end speaks %d)", m.Version, protoVersion)
	}
	if m.Size < 1 || m.Size > maxSize {
		return 0, fmt.Errorf("ping size %d (valid: 1-%d)", m.Size, maxSize)
	}
	if m.Count < 1 || m.Count > maxCount {
		return 0, fmt.Errorf("ping count %d (valid: 1-%d)", m.Count, maxCount)
	}
	if m.TimeoutMS < 1 || m.TimeoutMS > maxTimeout.Milliseconds() {
		return 0, fmt.Errorf("timeout %d ms (valid: 1-%d)", m.TimeoutMS, maxTimeout.Milliseconds())
	}
	if _, err := parseGID(m.GID); err != nil {
		return 0, err
	}
	if _, err := parseGIDType(m.GIDType); err != nil {
		return 0, err
	}
	if len(m.Device) > 64 {
		return 0, fmt.Errorf("device name of %d bytes (valid: up to 64)", len(m.Device))
	}
	return min(own, time.Duration(m.TimeoutMS)*time.Millisecond), nil
}
