// Command rdmapeer serves the passive side of rdmabench's scenarios to
// benchmark processes on other hosts.
//
//	rdmapeer [-listen :18515] [-token SECRET] [-rdma.dev mlx5_0] …
//
// On host B run rdmapeer; on host A run the benchmarks with
// -rdma.peer hostB:18515 (and -rdma.peer-token SECRET when B has one).
// For each benchmark run the client connects over TCP (package
// rdmatest/oob), asks for the passive side of its scenario (receives
// posted and reposted, ping-pong answers, or memory that A writes, reads
// or updates atomically), connects its QPs to the peer's, and runs; when
// the client stops, disconnects or dies, everything made for it is
// released. The peer keeps serving other clients.
//
// Safety: a client sees only the memory registered for its own scenario,
// with the least access that scenario needs (remote write only for WRITE,
// remote read only for READ, remote atomic only for atomics, none for
// SEND); -max-clients, -max-qps and -max-mem bound what clients can make
// it create; -token requires a shared secret. Every request is validated
// (rdmatest/oob) before anything is created.
package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
)

// limits bound what one client may make the peer create.
type limits struct {
	clients int
	qps     int
	mem     int64
	idle    time.Duration
}

func main() {
	var (
		listen = flag.String("listen", ":18515", "TCP address to serve on")
		token  = flag.String("token", os.Getenv("RDMA_PEER_TOKEN"), "shared secret clients must present [RDMA_PEER_TOKEN]")
		lim    limits
	)
	flag.IntVar(&lim.clients, "max-clients", 8, "clients served at once")
	flag.IntVar(&lim.qps, "max-qps", 256, "QPs per client")
	flag.Int64Var(&lim.mem, "max-mem", 256<<20, "bytes of registered memory per client")
	flag.DurationVar(&lim.idle, "idle", 10*time.Minute, "drop a client that sends nothing for this long while its scenario runs")
	flag.Parse()
	log.SetPrefix("rdmapeer: ")
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)

	d, err := rdmatest.OpenDev()
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("serving %s port %d (GID %s) on %s", d.Name(), d.Port, d.GID.GID, ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, ln, &server{dev: d, token: *token, lim: lim}); err != nil {
		log.Fatal(err)
	}
}

// server holds what every session shares.
type server struct {
	dev   *rdmatest.Dev
	token string
	lim   limits
	// dev is used by one session at a time while it creates resources;
	// the data path of each session runs on its own.
	mu sync.Mutex
	// ok and failed count the sessions that ended, by how.
	ok, failed atomic.Int64
}

// serve accepts clients until ctx ends, then waits for the sessions.
func serve(ctx context.Context, ln net.Listener, s *server) error {
	go func() { <-ctx.Done(); ln.Close() }()
	slots := make(chan struct{}, s.lim.clients)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case slots <- struct{}{}:
		default:
			refuse(conn, fmt.Sprintf("busy: %d clients already (-max-clients)", s.lim.clients))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			who := conn.RemoteAddr().String()
			if err := s.session(conn); err != nil {
				s.failed.Add(1)
				log.Printf("%s: %v", who, err)
			} else {
				s.ok.Add(1)
				log.Printf("%s: done", who)
			}
		}()
	}
}

func refuse(conn net.Conn, msg string) {
	conn.SetDeadline(time.Now().Add(time.Second))
	oob.WriteFrame(conn, oob.MsgError, &oob.Error{Msg: msg})
	conn.Close()
}

// session serves one client: hello, setup, start, stop. Whatever ends it
// — a stop, an error, the client closing or dying — releases everything.
func (s *server) session(conn net.Conn) (err error) {
	defer conn.Close()
	fail := func(err error) error {
		oob.WriteFrame(conn, oob.MsgError, &oob.Error{Msg: trim(err.Error())})
		return err
	}
	step := time.Minute // bound on each setup exchange
	conn.SetDeadline(time.Now().Add(step))
	var hello oob.Hello
	if err := oob.Decode(conn, oob.MsgHello, &hello); err != nil {
		return fail(err)
	}
	if subtle.ConstantTimeCompare([]byte(hello.Token), []byte(s.token)) != 1 {
		return fail(errors.New("token mismatch"))
	}
	a := s.dev.Attr()
	if err := oob.WriteFrame(conn, oob.MsgHelloOK, &oob.HelloOK{Device: a.Name, Provider: a.Provider, FW: a.FWVersion, MTU: s.dev.PortAttr.ActiveMTU}); err != nil {
		return err
	}

	var req oob.Setup
	if err := oob.Decode(conn, oob.MsgSetup, &req); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the client left before asking for a scenario")
		}
		return fail(err)
	}
	sc := req.Scenario
	if sc.QPs > s.lim.qps {
		return fail(fmt.Errorf("qps %d exceeds this peer's limit %d (-max-qps)", sc.QPs, s.lim.qps))
	}
	if mem := int64(2) * int64(sc.QPs) * int64(sc.SlotSize+64); mem > s.lim.mem {
		return fail(fmt.Errorf("registered memory %d bytes exceeds this peer's limit %d (-max-mem)", mem, s.lim.mem))
	}
	s.mu.Lock()
	p, err := rdmatest.NewPassive(s.dev, &req, s.lim.idle)
	s.mu.Unlock()
	if err != nil {
		return fail(err)
	}
	defer func() {
		if cerr := p.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := oob.WriteFrame(conn, oob.MsgSetupOK, p.SetupOK()); err != nil {
		return err
	}
	if err := oob.Decode(conn, oob.MsgStart, &oob.Start{}); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the client left before starting its scenario; released its resources")
		}
		return fail(err)
	}
	if err := p.Start(); err != nil {
		return fail(err)
	}
	if err := oob.WriteFrame(conn, oob.MsgStarted, &oob.Started{}); err != nil {
		return err
	}
	log.Printf("%s: %s %s %s size %d qps %d", conn.RemoteAddr(), sc.Role, sc.Transport, sc.Op, sc.Size, sc.QPs)

	// The scenario runs; the next frame is the client's Stop (or its
	// connection ending).
	conn.SetDeadline(time.Now().Add(s.lim.idle))
	if err := oob.Decode(conn, oob.MsgStop, &oob.Stop{}); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the client left without stopping; released its resources")
		}
		return fail(err)
	}
	st, err := p.Stop()
	if err != nil {
		return fail(err)
	}
	conn.SetDeadline(time.Now().Add(step))
	return oob.WriteFrame(conn, oob.MsgStopped, st)
}

func trim(s string) string {
	if len(s) > oob.MaxMsgLen {
		return s[:oob.MaxMsgLen-3] + "..."
	}
	return s
}
