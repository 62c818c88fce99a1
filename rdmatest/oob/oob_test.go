package oob

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func validSetup() *Setup {
	return &Setup{
		Scenario:  Scenario{Op: "RDMA_WRITE", Transport: "RC", Role: "target", Size: 4096, QPs: 2, SendDepth: 128, RecvDepth: 1, SlotSize: 4096},
		Endpoints: []Endpoint{{QPN: 0x11, PSN: 0x1000, GID: "::ffff:192.0.2.1"}, {QPN: 0x12, PSN: 0x2000, GID: "::ffff:192.0.2.1"}},
		Targets:   []Target{{Addr: 0x7f0000001000, RKey: 0x1234}, {Addr: 0x7f0000002000, RKey: 0x1234}},
		MTU:       1024,
		QKey:      0x1234567,
	}
}

var testNonce = bytes.Repeat([]byte{7}, NonceLen)

func frame(t MsgType, payload []byte) []byte {
	var hdr [10]byte
	copy(hdr[:], "RDBP")
	hdr[4], hdr[5] = Version, byte(t)
	binary.BigEndian.PutUint32(hdr[6:], uint32(len(payload)))
	return append(hdr[:], payload...)
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteFrame(&buf, MsgHello, &Hello{Version: Version, Client: "bench on hostA", Nonce: testNonce}))
	require.NoError(t, WriteFrame(&buf, MsgSetup, validSetup()))
	var h Hello
	require.NoError(t, Decode(&buf, MsgHello, &h))
	assert.Equal(t, "bench on hostA", h.Client)
	var s Setup
	require.NoError(t, Decode(&buf, MsgSetup, &s))
	assert.Equal(t, *validSetup(), s)
	_, _, err := ReadFrame(&buf)
	assert.ErrorIs(t, err, io.EOF, "a clean close between frames is io.EOF")
}

func TestPeerError(t *testing.T) {
	for _, tc := range []struct {
		name, msg, want string
	}{
		{"plain", "authentication failed", "oob: peer refused: authentication failed"},
		{"forged log line", "no\n2026/12/01 rdmapeer: client admitted\x1b[2J", "oob: peer refused: no?2026/12/01 rdmapeer: client admitted?[2J"},
		{"invalid UTF-8", "a\xffb", "oob: peer refused: a?b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, WriteFrame(&buf, MsgError, &Error{Msg: tc.msg}))
			var ok HelloOK
			err := Decode(&buf, MsgHelloOK, &ok)
			var pe *PeerError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.want, err.Error())
		})
	}
	t.Run("too long", func(t *testing.T) {
		payload := []byte(`{"msg":"` + strings.Repeat("x", 5000) + `"}`)
		var ok HelloOK
		err := Decode(bytes.NewReader(frame(MsgError, payload)), MsgHelloOK, &ok)
		require.Error(t, err)
		var pe *PeerError
		assert.False(t, errors.As(err, &pe), "an oversized Error is a protocol error, not a refusal")
		assert.Contains(t, err.Error(), "invalid Error from the peer: msg of 5000 bytes exceeds 1024")
	})
}

func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "busy: 4 clients", "busy: 4 clients"},
		{"controls", "a\tb\rc\x00", "a?b?c?"},
		{"long", strings.Repeat("é", MaxMsgLen), strings.Repeat("é", (MaxMsgLen-3)/2) + "…"},
		{"exactly the limit", strings.Repeat("x", MaxMsgLen), strings.Repeat("x", MaxMsgLen)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Sanitize(tc.in)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, len(got), MaxMsgLen)
		})
	}
}

func TestProofs(t *testing.T) {
	a, err := NewNonce()
	require.NoError(t, err)
	b, err := NewNonce()
	require.NoError(t, err)
	require.Len(t, a, NonceLen)
	assert.NotEqual(t, a, b, "nonces are random")
	p := ClientProof("s3cret", a, b)
	require.Len(t, p, ProofLen)
	assert.True(t, ProofOK(p, ClientProof("s3cret", a, b)))
	for name, other := range map[string][]byte{
		"another token":        ClientProof("s3cret2", a, b),
		"another peer nonce":   ClientProof("s3cret", b, b),
		"another client nonce": ClientProof("s3cret", a, a),
		"the peer's proof":     PeerProof("s3cret", b, a),
		"nothing":              nil,
	} {
		assert.False(t, ProofOK(other, p), name)
	}
	assert.NotContains(t, string(p), "s3cret")
}

func TestBadFrames(t *testing.T) {
	nonce := `"nonce":"` + base64.StdEncoding.EncodeToString(testNonce) + `"`
	hello := []byte(`{"version":2,"client":"x",` + nonce + `}`)
	var good Hello
	require.NoError(t, Decode(bytes.NewReader(frame(MsgHello, hello)), MsgHello, &good), "the table's base frame is valid")
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"truncated header", []byte("RDBP\x01"), "truncated header"},
		{"wrong magic", append([]byte("HTTP"), frame(MsgHello, hello)[4:]...), `magic "HTTP", want "RDBP"`},
		{"wrong version", func() []byte { f := frame(MsgHello, hello); f[4] = 9; return f }(), "protocol version 9, this side speaks 2"},
		{"version 1 (token in clear)", func() []byte { f := frame(MsgHello, hello); f[4] = 1; return f }(), "protocol version 1, this side speaks 2"},
		{"unknown type", frame(MsgType(42), hello), "unknown message type 42 (known: 1..18)"},
		{"oversized length", func() []byte { f := frame(MsgHello, nil); binary.BigEndian.PutUint32(f[6:], 1<<31); return f }(), "payload length 2147483648 exceeds 65536"},
		{"truncated payload", frame(MsgHello, hello)[:14], "Hello payload truncated"},
		{"unexpected type", frame(MsgSetup, hello), "got Setup, want Hello"},
		{"unknown field", frame(MsgHello, []byte(`{"version":2,"admin":true}`)), `unknown field "admin"`},
		{"a v1 token", frame(MsgHello, []byte(`{"version":2,"token":"s3cret",`+nonce+`}`)), `unknown field "token"`},
		{"trailing data", frame(MsgHello, []byte(`{"version":2,`+nonce+`} {}`)), "trailing data"},
		{"not JSON", frame(MsgHello, []byte(`\x00\x01`)), "payload:"},
		{"version field", frame(MsgHello, []byte(`{"version":3,`+nonce+`}`)), "version 3, this side speaks 2"},
		{"no nonce", frame(MsgHello, []byte(`{"version":2}`)), "nonce of 0 bytes, want 32"},
		{"short nonce", frame(MsgHello, []byte(`{"version":2,"nonce":"AAAA"}`)), "nonce of 3 bytes, want 32"},
		{"long client", frame(MsgHello, []byte(`{"version":2,`+nonce+`,"client":"`+strings.Repeat("a", 300)+`"}`)), "client of 300 bytes exceeds 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h Hello
			err := Decode(bytes.NewReader(tc.in), MsgHello, &h)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestSetupValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Setup)
		want string
	}{
		{"unknown op", func(s *Setup) { s.Scenario.Op = "RDMA_FLUSH" }, `op "RDMA_FLUSH" is not one of`},
		{"unknown transport", func(s *Setup) { s.Scenario.Transport = "XRC" }, `transport "XRC" is not one of`},
		{"unknown role", func(s *Setup) { s.Scenario.Role = "shell" }, `role "shell" is not one of`},
		{"size too large", func(s *Setup) { s.Scenario.Size = 2 << 30 }, "size 2147483648 out of range 0..1073741824"},
		{"too many QPs", func(s *Setup) { s.Scenario.QPs = 5000 }, "qps 5000 out of range 1..256"},
		{"zero QPs", func(s *Setup) { s.Scenario.QPs = 0 }, "qps 0 out of range 1..256"},
		{"deep send queue", func(s *Setup) { s.Scenario.SendDepth = 1 << 20 }, "send_depth 1048576 out of range 1..65536"},
		{"bad MTU", func(s *Setup) { s.MTU = 1500 }, "mtu 1500 is not one of [256 512 1024 2048 4096]"},
		{"signal_all without an echo", func(s *Setup) { s.Scenario.Role, s.Scenario.SignalAll = "sink", true }, "signal_all needs role echo or write-echo, not sink"},
		{"endpoint count", func(s *Setup) { s.Endpoints = s.Endpoints[:1] }, "1 endpoints for qps 2"},
		{"QPN zero", func(s *Setup) { s.Endpoints[0].QPN = 0 }, "endpoint 0: qpn 0x0 out of range 0x1..0xffffff"},
		{"PSN too wide", func(s *Setup) { s.Endpoints[1].PSN = 1 << 24 }, "endpoint 1: psn 0x1000000 out of range 0..0xffffff"},
		{"no QKey", func(s *Setup) { s.QKey = 0 }, "qkey 0x0 out of range 0x1..0x7fffffff"},
		{"controlled QKey", func(s *Setup) { s.QKey = 0x80000001 }, "qkey 0x80000001 out of range 0x1..0x7fffffff"},
		{"UC through rdma_cm", func(s *Setup) { s.CM, s.Scenario.Transport = true, "UC" }, "cm: UC cannot be connected through rdma_cm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := validSetup()
			tc.mod(s)
			err := s.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	assert.NoError(t, validSetup().Validate())
	cm := validSetup()
	cm.CM = true
	assert.NoError(t, cm.Validate(), "RC through rdma_cm")
}

func TestSetupOKCMAddr(t *testing.T) {
	ok := SetupOK{Endpoints: []Endpoint{{QPN: 1, GID: "::1"}}, Targets: []Target{{}}, MTU: 1024}
	for _, good := range []string{"", "192.0.2.2:4791", "[2001:db8::1]:1"} {
		ok.CMAddr = good
		assert.NoError(t, ok.Validate(), good)
	}
	for addr, want := range map[string]string{
		"192.0.2.2":             `cm_addr "192.0.2.2" is not an address and port 1..65535`,
		"192.0.2.2:0":           `cm_addr "192.0.2.2:0" is not an address and port 1..65535`,
		"0.0.0.0:5":             `cm_addr "0.0.0.0:5" is not an address and port 1..65535`,
		"host:5":                `cm_addr "host:5" is not an address and port 1..65535`,
		strings.Repeat("1", 48): "cm_addr of 48 characters exceeds 47",
	} {
		ok.CMAddr = addr
		assert.ErrorContains(t, ok.Validate(), want, addr)
	}
}

// FuzzDecode: no input makes the decoder panic or accept an invalid
// message.
func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	_ = WriteFrame(&buf, MsgSetup, validSetup())
	f.Add(buf.Bytes())
	cm := validSetup()
	cm.CM = true
	buf.Reset()
	_ = WriteFrame(&buf, MsgSetup, cm)
	f.Add(buf.Bytes())
	buf.Reset()
	_ = WriteFrame(&buf, MsgSetup, programSetup()) // side B's program
	f.Add(buf.Bytes())
	f.Add(frame(MsgHello, []byte(`{"version":2,"client":"x"}`)))
	f.Add(frame(MsgError, []byte(`{"msg":"no"}`)))
	f.Add([]byte("RDBP\x01\x03\x00\x00\x00\x02{}"))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var s Setup
		if err := Decode(bytes.NewReader(in), MsgSetup, &s); err == nil {
			require.NoError(t, s.Validate(), "Decode accepted an invalid Setup")
			require.LessOrEqual(t, len(s.Endpoints), MaxQPs)
		}
	})
}

// TestReadTokenFile: rdmapeer and its clients read a token file the same
// way, and refuse what is not one.
func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	for _, tc := range []struct {
		name, path, want, err string
	}{
		{"one line", file("a", "0123456789abcdef\n"), "0123456789abcdef", ""},
		{"CRLF and spaces", file("b", "  0123456789abcdef \r\n"), "0123456789abcdef", ""},
		{"a comment after the first line", file("c", "0123456789abcdef\n# made 2026-12-01\n"), "0123456789abcdef", ""},
		{"empty first line", file("d", "\nsecret\n"), "", "its first line is empty"},
		{"too long", file("e", strings.Repeat("x", MaxTokenFile+1)), "", "more than 4096 bytes"},
		{"a directory", dir, "", "not a regular file"},
		{"missing", filepath.Join(dir, "none"), "", "no such file"},
	} {
		got, err := ReadTokenFile(tc.path)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		_, err := ReadTokenFile("/dev/zero")
		assert.ErrorContains(t, err, "not a regular file", "a device is never read")
	}
}

// TestMaxQPsFitAFrame: a Setup and a SetupOK of MaxQPs QPs, every field
// at its largest, fit in one frame, so a peer never creates a session it
// cannot answer.
func TestMaxQPsFitAFrame(t *testing.T) {
	eps := make([]Endpoint, MaxQPs)
	tgs := make([]Target, MaxQPs)
	for i := range eps {
		eps[i] = Endpoint{QPN: 1<<24 - 1, PSN: 1<<24 - 1, GID: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", LID: 0xffff}
		tgs[i] = Target{Addr: ^uint64(0), RKey: ^uint32(0)}
	}
	setup := validSetup()
	setup.Scenario.QPs, setup.Endpoints, setup.Targets = MaxQPs, eps, tgs
	setup.Scenario.Op = strings.Repeat("X", MaxNameLen)                                   // longer than any valid value: the worst case
	setup.Scenario.RPC, setup.Resp = &RPC{Window: MaxRPCWindow, Stride: MaxSize}, &eps[0] // write-rpc's fields too
	for _, m := range []any{setup, &SetupOK{Endpoints: eps, Targets: tgs, MTU: 4096, Resp: &eps[0]}} {
		var buf bytes.Buffer
		require.NoError(t, WriteFrame(&buf, MsgSetup, m), "%T of %d QPs", m, MaxQPs)
		assert.Less(t, buf.Len(), MaxPayload*3/4, "room to spare")
	}
}

// stallAfter reads n bytes of b, then fails as a connection whose read
// deadline passed.
type stallAfter struct {
	b []byte
	n int
}

func (s *stallAfter) Read(p []byte) (int, error) {
	if s.n == 0 {
		return 0, os.ErrDeadlineExceeded
	}
	k := copy(p[:min(len(p), s.n)], s.b)
	s.b, s.n = s.b[k:], s.n-k
	return k, nil
}

// TestFrameStalledMidway: a frame cut short by a deadline is a
// *FrameError that still matches os.ErrDeadlineExceeded, in the header or
// in the payload.
func TestFrameStalledMidway(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteFrame(&buf, MsgSetup, validSetup()))
	for _, n := range []int{4, 12} { // in the header, in the payload
		_, _, err := ReadFrame(&stallAfter{b: buf.Bytes(), n: n})
		require.Error(t, err, "cut after %d bytes", n)
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "cut after %d bytes: %v", n, err)
	}
}

// TestStoppedSpan: the sink's receive interval a client asked for is
// bounded (a negative or absurd value from a peer is refused), omitted
// from the frame unless set, and Stop.Times likewise, so that a Stop or
// Stopped without them is what an older side sends and takes.
func TestStoppedSpan(t *testing.T) {
	for _, tc := range []struct {
		span int64
		ok   bool
	}{{0, true}, {12345, true}, {MaxRecvSpanNs, true}, {-1, false}, {MaxRecvSpanNs + 1, false}} {
		err := (&Stopped{Received: 3, RecvSpanNs: tc.span}).Validate()
		if tc.ok {
			assert.NoError(t, err, tc.span)
		} else {
			assert.ErrorContains(t, err, fmt.Sprintf("recv_span_ns %d out of range", tc.span))
		}
	}
	for _, v := range []any{&Stop{}, &Stopped{Received: 3}} {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "times")
		assert.NotContains(t, string(b), "recv_span_ns")
	}
}
