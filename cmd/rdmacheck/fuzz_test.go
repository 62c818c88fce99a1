package main

import (
	"net"
	"strings"
	"testing"
	"time"
)

// FuzzControlMessage: whatever bytes arrive on the control channel, the
// reader and both ends' hello checks return a message or an error, never
// panic, and never take more than maxMsg bytes for a message.
func FuzzControlMessage(f *testing.F) {
	f.Add([]byte(`{"type":"hello","version":1,"gid":"::ffff:192.0.2.1","gid_type":"RoCE v2","size":64,"count":10,"timeout_ms":300}` + "\n"))
	f.Add([]byte(`{"type":"hello","version":1,"gid":"fe80::1","gid_type":"IB","qpn":17,"qkey":286331153}` + "\n"))
	f.Add([]byte(`{"type":"udp","nonce":1,"qpn":18}` + "\n" + `{"type":"cm"}` + "\n"))
	f.Add([]byte(`{"type":"fail","fail":"device and port: x — y"}` + "\n"))
	f.Add([]byte(strings.Repeat("{", maxMsg+1)))
	f.Fuzz(func(t *testing.T, in []byte) {
		a, b := net.Pipe()
		defer a.Close()
		go func() {
			_, _ = a.Write(in)
			a.Close()
		}()
		c := newCtl(b)
		for range 8 {
			m, err := c.expect(time.Now().Add(time.Second), msgHello, msgUDP, msgCM, msgPings, msgBye)
			if err != nil {
				break
			}
			if len(c.buf) > maxMsg {
				t.Fatalf("%d bytes buffered, more than maxMsg", len(c.buf))
			}
			if w, err := validNearHello(m, time.Minute); err == nil && (w <= 0 || w > time.Minute || m.Size < 1 || m.Size > maxSize || m.Count < 1 || m.Count > maxCount) {
				t.Fatalf("accepted a hello out of bounds: %+v (wait %s)", m, w)
			}
			_, _, _ = validFarHello(m, "far")
		}
	})
}
