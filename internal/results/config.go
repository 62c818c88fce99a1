package results

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// maxTapLine is the longest line configTap keeps; a longer one is not a
// configuration line (benchfmt's own line limit is lower).
const maxTapLine = 1 << 20

// configTap watches the bytes benchfmt reads and keeps the configuration
// lines, wherever they are in the file (FinalConfig): benchfmt itself
// only attaches configuration to the results after it, and copying every
// result's configuration would cost results × keys (a fabric stream's
// facts are thousands of keys).
type configTap struct {
	line     []byte
	overlong bool
	keys     map[string]string // key → value; later lines win
}

func newConfigTap() *configTap { return &configTap{keys: make(map[string]string)} }

// Write implements io.Writer; it never fails.
func (t *configTap) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.add(p)
			break
		}
		t.add(p[:i])
		t.flush()
		p = p[i+1:]
	}
	return n, nil
}

// add appends part of a line.
func (t *configTap) add(p []byte) {
	if t.overlong || len(t.line)+len(p) > maxTapLine {
		t.overlong, t.line = true, t.line[:0]
		return
	}
	t.line = append(t.line, p...)
}

// flush ends the current line, filing it when it is a configuration
// line.
func (t *configTap) flush() {
	line := bytes.TrimSuffix(t.line, []byte("\r"))
	if !t.overlong {
		if key, val, ok := parseKeyValue(line); ok {
			if len(val) == 0 {
				delete(t.keys, string(key))
			} else {
				t.keys[string(key)] = string(val)
			}
		}
	}
	t.line, t.overlong = t.line[:0], false
}

// parseKeyValue splits a "key: value" configuration line as benchfmt
// does: the key begins with a lower-case letter and holds no space and
// no upper-case letter; one or more spaces or tabs follow the colon
// unless the value is empty.
func parseKeyValue(line []byte) (key, val []byte, ok bool) {
	for i := 0; i < len(line); {
		r, n := utf8.DecodeRune(line[i:])
		if (i == 0 && !unicode.IsLower(r)) || unicode.IsSpace(r) || unicode.IsUpper(r) {
			return nil, nil, false
		}
		if i > 0 && r == ':' {
			key, val = line[:i], line[i+1:]
			break
		}
		i += n
	}
	if len(key) == 0 {
		return nil, nil, false
	}
	if len(val) == 0 {
		return key, val, true
	}
	trimmed := bytes.TrimLeft(val, " \t")
	return key, trimmed, len(trimmed) < len(val)
}
