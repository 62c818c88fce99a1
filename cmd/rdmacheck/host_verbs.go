package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/cmd/internal/facts"
	"github.com/rdmabench/rdmabench/verbs"
)

// verbsHost is the real Host: verbs for the device, sysfs (under
// sysfs, normally /sys) for what libibverbs does not say.
type verbsHost struct{ sysfs string }

func (h verbsHost) Devices() ([]string, error) {
	infos, err := verbs.Devices()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(infos))
	for i, d := range infos {
		names[i] = d.Name
	}
	return names, nil
}

func (h verbsHost) Open(name string) (Device, error) {
	d, err := verbs.Open(name)
	if err != nil {
		return nil, err
	}
	return &verbsDevice{d: d, sysfs: h.sysfs}, nil
}

func (h verbsHost) Live() []string {
	live := verbs.Live()
	out := make([]string, len(live))
	for i, o := range live {
		out[i] = o.String()
	}
	return out
}

type verbsDevice struct {
	d     *verbs.Device
	sysfs string
}

func (v *verbsDevice) Name() string { return v.d.Name() }
func (v *verbsDevice) Ports() int   { return v.d.Attr().PhysPortCnt }
func (v *verbsDevice) Close() error { return v.d.Close() }

// portDir is /sys/class/infiniband/<dev>/ports/<port>.
func (v *verbsDevice) portDir(port int) string {
	return filepath.Join(v.sysfs, "class", "infiniband", v.d.Name(), "ports", strconv.Itoa(port))
}

// readSys returns a sysfs file's first line, "" when it cannot be read
// (an unset GID's ndevs entry reads as EINVAL, for instance).
func readSys(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
}

func (v *verbsDevice) Port(port int) (PortFacts, error) {
	pa, err := v.d.Port(port)
	if err != nil {
		return PortFacts{}, err
	}
	f := PortFacts{Device: v.d.Name(), Port: port, State: pa.State, LinkLayer: pa.LinkLayer, Transport: v.d.Attr().NodeTransport,
		ActiveMTU: pa.ActiveMTU, Speed: pa.ActiveSpeed, Width: pa.ActiveWidth, GIDTableLen: pa.GIDTableLen}
	dir := v.portDir(port)
	// phys_state reads "5: LinkUp".
	ps := readSys(filepath.Join(dir, "phys_state"))
	if _, name, ok := strings.Cut(ps, ":"); ok {
		ps = strings.TrimSpace(name)
	}
	f.PhysState = ps
	if pa.LinkLayer == verbs.LinkLayerEthernet {
		f.Netdev = portNetdev(dir, filepath.Join(v.sysfs, "class", "infiniband", v.d.Name()), pa.GIDTableLen)
		if f.Netdev != "" {
			f.NetdevState = readSys(filepath.Join(v.sysfs, "class", "net", f.Netdev, "operstate"))
			q, err := facts.ReadQoS(facts.Source{Sys: v.sysfs}, f.Netdev)
			f.QoS = q.String()
			if err != nil {
				f.QoS = "unreadable: " + err.Error()
			}
		}
	}
	return f, nil
}

// portNetdev names the netdev under a RoCE port: the first GID's
// gid_attrs/ndevs entry, else the device's "parent" (rxe).
func portNetdev(portDir, devDir string, tableLen int) string {
	for i := range min(tableLen, 256) {
		if nd := readSys(filepath.Join(portDir, "gid_attrs", "ndevs", strconv.Itoa(i))); nd != "" {
			return nd
		}
	}
	return readSys(filepath.Join(devDir, "parent"))
}

func (v *verbsDevice) GIDs(port int) ([]GIDFact, error) {
	entries, err := v.d.GIDs(port)
	if err != nil {
		return nil, err
	}
	dir := v.portDir(port)
	out := make([]GIDFact, len(entries))
	for i, e := range entries {
		out[i] = GIDFact{Index: e.Index, GID: e.GID, Type: e.Type,
			Netdev: readSys(filepath.Join(dir, "gid_attrs", "ndevs", strconv.Itoa(e.Index)))}
	}
	return out, nil
}

// Queue depths of the QPs rdmacheck makes.
const (
	udRecvs = 16
	grhLen  = 40
)

// udDatagram is the real Datagram.
type udDatagram struct {
	port, gidIndex int
	size           int // payload bytes per datagram
	pd             *verbs.PD
	cq             *verbs.CQ
	buf            *verbs.Buffer
	mr             *verbs.MR
	qp             *verbs.QP
	ah             *verbs.AH
	ahGID          verbs.GID
	wcs            [1]verbs.WC
}

func (v *verbsDevice) Datagram(port, gidIndex, size int) (_ Datagram, err error) {
	u := &udDatagram{port: port, gidIndex: gidIndex, size: size}
	defer func() {
		if err != nil {
			u.Close()
		}
	}()
	slot := grhLen + size
	if u.pd, err = v.d.AllocPD(); err != nil {
		return nil, err
	}
	if u.cq, err = v.d.NewCQ(2*udRecvs+2, nil); err != nil {
		return nil, err
	}
	if u.buf, err = verbs.AllocBuffer((udRecvs+1)*slot, false); err != nil {
		return nil, err
	}
	if u.mr, err = u.pd.RegMR(u.buf, verbs.AccessLocalWrite); err != nil {
		return nil, err
	}
	if u.qp, err = u.pd.NewQP(verbs.QPConfig{Transport: verbs.TransportUD, SendCQ: u.cq, RecvCQ: u.cq, MaxSendWR: 2, MaxRecvWR: udRecvs}); err != nil {
		return nil, err
	}
	if err = u.qp.Connect(verbs.ConnectConfig{Port: port, GIDIndex: gidIndex}); err != nil {
		return nil, err
	}
	wrs := make([]verbs.RecvWR, udRecvs)
	for i := range wrs {
		wrs[i] = u.recvWR(i)
	}
	if err = u.qp.PostRecv(wrs); err != nil {
		return nil, err
	}
	return u, nil
}

func (u *udDatagram) slot() int { return grhLen + u.size }

func (u *udDatagram) recvWR(i int) verbs.RecvWR {
	wr := verbs.RecvWR{ID: uint64(i), NumSGE: 1}
	wr.SGE[0] = u.mr.SGE(i*u.slot(), u.slot())
	return wr
}

func (u *udDatagram) QPN() uint32  { return u.qp.QPN() }
func (u *udDatagram) QKey() uint32 { return verbs.DefaultQKey }

const sendID = 1 << 32

func (u *udDatagram) Send(dst verbs.GID, qpn, qkey uint32, payload []byte, deadline time.Time) error {
	if len(payload) > u.size {
		return fmt.Errorf("a datagram of %d bytes exceeds the UD QP's %d", len(payload), u.size)
	}
	if u.ah == nil || u.ahGID != dst {
		if u.ah != nil {
			if err := u.ah.Close(); err != nil {
				return err
			}
			u.ah = nil
		}
		ah, err := u.pd.NewAH(verbs.AHConfig{Port: u.port, GIDIndex: u.gidIndex, GID: dst})
		if err != nil {
			return fmt.Errorf("the address handle for %s: %w", dst, err)
		}
		u.ah, u.ahGID = ah, dst
	}
	off := udRecvs * u.slot()
	copy(u.buf.Bytes()[off:], payload)
	wr := verbs.Send(u.mr.SGE(off, len(payload))).To(u.ah.Dest(qpn, qkey)).Signaled()
	wr.ID = sendID
	if err := u.qp.PostSend([]verbs.SendWR{wr}); err != nil {
		return err
	}
	_, err := u.poll(deadline, true, nil)
	return err
}

func (u *udDatagram) Recv(p []byte, deadline time.Time) (int, error) {
	return u.poll(deadline, false, p)
}

// poll waits for the send completion (send) or the next receive, whose
// payload goes to p; receives are reposted at once, a receive seen
// while waiting for a send is dropped (the far end only receives, the
// near end only sends).
func (u *udDatagram) poll(deadline time.Time, send bool, p []byte) (int, error) {
	for {
		// One completion at a time: a receive polled is never dropped.
		n, err := u.cq.Poll(u.wcs[:1])
		if err != nil {
			return 0, err
		}
		got := -1
		for _, wc := range u.wcs[:n] {
			if err := wc.Err(); err != nil {
				return 0, err
			}
			if wc.ID == sendID {
				if send {
					got = 0
				}
				continue
			}
			if !send && got < 0 {
				off := int(wc.ID)*u.slot() + grhLen
				n := min(max(0, int(wc.ByteLen)-grhLen), u.size)
				got = copy(p, u.buf.Bytes()[off:off+n])
			}
			if err := u.qp.PostRecv([]verbs.RecvWR{u.recvWR(int(wc.ID))}); err != nil {
				return 0, err
			}
		}
		if got >= 0 {
			return got, nil
		}
		if time.Now().After(deadline) {
			what := "a datagram"
			if send {
				what = "the datagram's send completion"
			}
			return 0, fmt.Errorf("no %s within the deadline: %w", what, os.ErrDeadlineExceeded)
		}
		runtime.Gosched()
	}
}

func (u *udDatagram) Close() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if u.qp != nil {
		keep(u.qp.Close())
	}
	if u.ah != nil {
		keep(u.ah.Close())
	}
	if u.cq != nil {
		keep(u.cq.Close())
	}
	if u.mr != nil {
		keep(u.mr.Close())
	}
	if u.buf != nil {
		keep(u.buf.Close())
	}
	if u.pd != nil {
		keep(u.pd.Close())
	}
	return first
}
