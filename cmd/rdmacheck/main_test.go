package main

import (
	"bytes"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string // "" = accepted
	}{
		{[]string{"-connect", "hostB"}, ""},
		{[]string{"-listen", "-addr", "192.0.2.2", "-port", "7000", "-x", "3", "-timeout", "2s"}, ""},
		{[]string{}, "give -listen (the far end) or -connect HOST (the near end)"},
		{[]string{"-listen", "-connect", "h"}, "-listen and -connect exclude each other"},
		{[]string{"-connect", ""}, "-connect needs the far end's host name or address"},
		{[]string{"-connect", "h", "extra"}, `unexpected argument "extra": give the far end as -connect HOST`},
		{[]string{"-listen", "-n", "5"}, "-n and -s are the near end's (-connect)"},
		{[]string{"-connect", "h", "-port", "0"}, "-port 0 is outside 1-65534 (a TCP port, and rdma_cm takes port+1)"},
		{[]string{"-connect", "h", "-port", "65535"}, "-port 65535 is outside 1-65534"},
		{[]string{"-connect", "h", "-i", "0"}, "-i 0 is outside 1-255 (port numbers start at 1)"},
		{[]string{"-connect", "h", "-x", "256"}, "-x 256 is outside -1-255 (a GID table index; -1 picks the best)"},
		{[]string{"-connect", "h", "-x", "-2"}, "-x -2 is outside -1-255"},
		{[]string{"-connect", "h", "-n", "0"}, "-n 0 is outside 1-1000000 (ping-pongs)"},
		{[]string{"-connect", "h", "-n", "1000001"}, "-n 1000001 is outside 1-1000000"},
		{[]string{"-connect", "h", "-s", "0"}, "-s 0 is outside 1-65536 (bytes)"},
		{[]string{"-connect", "h", "-s", "70000"}, "-s 70000 is outside 1-65536"},
		{[]string{"-connect", "h", "-timeout", "0s"}, "-timeout 0s is outside 10ms-10m0s"},
		{[]string{"-connect", "h", "-timeout", "11m"}, "-timeout 11m0s is outside 10ms-10m0s"},
		{[]string{"-connect", "h", "-addr", "hostA"}, `-addr "hostA" is not an IP address`},
		{[]string{"-connect", "h", "-d", strings.Repeat("x", 65)}, "is 65 bytes long (device names have at most 64)"},
		{[]string{"-connect", "h", "-n", "many"}, `invalid value "many" for flag -n`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			_, err := parseFlags(tt.args, "", &stderr)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error()+stderr.String(), tt.want)
		})
	}
}

// TestBadFlagTouchesNothing: a bad flag is refused with exit status 2
// before any device is looked at.
func TestBadFlagTouchesNothing(t *testing.T) {
	h := newFakeHost(newFabric(), "192.0.2.1")
	h.devs = nil // a Devices call would still work: Live tells what was opened
	var out, errOut bytes.Buffer
	assert.Equal(t, 2, run([]string{"-connect", "h", "-n", "0"}, "", h, &out, &errOut))
	assert.Contains(t, errOut.String(), "rdmacheck: -n 0 is outside 1-1000000")
	assert.Empty(t, out.String())
	assert.Empty(t, h.Live())
}

func TestDeviceFromEnvironment(t *testing.T) {
	c, err := parseFlags([]string{"-connect", "h"}, "rxe7", &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "rxe7", c.dev)
	c, err = parseFlags([]string{"-connect", "h", "-d", "mlx5_0"}, "rxe7", &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "mlx5_0", c.dev, "-d wins over RDMA_DEVICE")
}

// TestFarEndSurvivesHostileClients: whatever a client sends, the far end
// ends only that session, releases what it made and serves the next
// client in full.
func TestFarEndSurvivesHostileClients(t *testing.T) {
	fab := newFabric()
	near, far := newFakeHost(fab, "192.0.2.1"), newFakeHost(fab, "192.0.2.2")
	fc := testConfig()
	fc.addr = mustAddr("127.0.0.1")
	port, farOut, halt := startFar(t, far, fc)
	hello := func(mut func(m map[string]any)) string {
		m := map[string]any{"type": "hello", "version": 1, "gid": "::ffff:192.0.2.1", "gid_type": "RoCE v2", "size": 64, "count": 10, "timeout_ms": 300}
		mut(m)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return string(b) + "\n"
	}
	hostile := []struct {
		name, send string
		reply      string // in the far end's answer, if any
	}{
		{"garbage", "\x00\x01not json at all\n", ""},
		{"no newline, too long", strings.Repeat("A", 3*maxMsg), ""},
		{"no type", "{}\n", ""},
		{"wrong first message", `{"type":"bye"}` + "\n", ""},
		{"old protocol", hello(func(m map[string]any) { m["version"] = 0 }), "protocol version 0"},
		{"huge count", hello(func(m map[string]any) { m["count"] = 1 << 40 }), "ping count 1099511627776 (valid: 1-1000000)"},
		{"negative size", hello(func(m map[string]any) { m["size"] = -1 }), "ping size -1 (valid: 1-65536)"},
		{"huge size", hello(func(m map[string]any) { m["size"] = 1 << 30 }), "ping size 1073741824 (valid: 1-65536)"},
		{"endless timeout", hello(func(m map[string]any) { m["timeout_ms"] = int64(1) << 50 }), "timeout 1125899906842624 ms"},
		{"bad GID", hello(func(m map[string]any) { m["gid"] = "not-a-gid" }), "unable to parse IP"},
		{"bad GID type", hello(func(m map[string]any) { m["gid_type"] = "RoCE v9" }), "(valid: IB, RoCE v1, RoCE v2)"},
		{"wrong type", `{"type":"hello","version":"one"}` + "\n", ""},
		{"silent", "", ""},
		{"hello then garbage", hello(func(map[string]any) {}) + "]]]\n", ""},
		{"hello then a ping count lie", hello(func(map[string]any) {}) + `{"type":"udp","skip":true}` + "\n" + `{"type":"cm"}` + "\n", ""},
	}
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			nc, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
			require.NoError(t, err)
			defer nc.Close()
			if h.send != "" {
				_, _ = nc.Write([]byte(h.send))
			}
			require.NoError(t, nc.SetReadDeadline(time.Now().Add(3*time.Second)))
			var got bytes.Buffer
			buf := make([]byte, 4096)
			for {
				n, err := nc.Read(buf)
				got.Write(buf[:n])
				if err != nil {
					break
				}
			}
			if h.reply != "" {
				assert.Contains(t, got.String(), h.reply)
			}
			assert.Empty(t, far.Live(), "the far end released this session's objects")
		})
	}
	// The next client gets a full session.
	c := testConfig()
	c.connect, c.port = "127.0.0.1", port
	var out bytes.Buffer
	require.NoError(t, runNear(near, c, &out), "far end:\n%s", farOut)
	assert.Contains(t, out.String(), "ok   disconnect:")
	require.NoError(t, halt())
	assert.NotContains(t, farOut.String(), "LEAK")
}

func TestCtlKeepsAPartialLineOverATimeout(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	t1 := newCtl(b)
	go func() { _, _ = a.Write([]byte(`{"type":"udp",`)) }()
	_, err := t1.recv(time.Now().Add(100 * time.Millisecond))
	require.True(t, isTimeout(err), "a half line and then nothing: a timeout, not %v", err)
	go func() { _, _ = a.Write([]byte(`"got":true}` + "\n")) }()
	m, err := t1.recv(time.Now().Add(time.Second))
	require.NoError(t, err)
	assert.Equal(t, message{Type: msgUDP, Got: true}, m)
}

func TestPattern(t *testing.T) {
	p := make([]byte, 100)
	fillPattern(p, 42, 'a')
	assert.Nil(t, checkPattern(p, 100, 42, 'a'))
	assert.NotNil(t, checkPattern(p, 100, 43, 'a'), "another iteration's payload does not pass")
	assert.NotNil(t, checkPattern(p, 100, 42, 'b'), "the other side's payload does not pass")
	m := checkPattern(p[:99], 100, 42, 'a')
	require.NotNil(t, m)
	assert.Equal(t, "iteration 42: 99 bytes received instead of 100", m.String())
	p[7] ^= 1
	m = checkPattern(p, 100, 42, 'a')
	require.NotNil(t, m)
	assert.Equal(t, 7, m.Byte)
}
