package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/schedule"
)

// maxNameLen is the longest node name accepted, a DNS name's limit.
const maxNameLen = 253

// nameChars are the characters a node name may hold besides ASCII
// letters and digits: enough for host names, IPv4 and IPv6 addresses,
// and none that would break a benchmark name (src=NAME/dst=NAME) or an
// .hlog file name.
const nameChars = ".-_:"

// readNodesFile reads the node names of file (see readNodes). A file
// that cannot be opened or read is an error; one whose content is wrong
// a usageError.
func readNodesFile(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readNodes(f, file)
}

// readNodes reads node names from r, one a line: '#' starts a comment,
// white space around a name and blank lines are ignored. It refuses, as
// a usageError naming file and line, a bad name (checkName), a name
// given twice (ignoring case, as host names do), more than
// schedule.MaxNodes names (it stops reading there), and a file with no
// name.
func readNodes(r io.Reader, file string) ([]string, error) {
	sc := bufio.NewScanner(r)
	var names []string
	first := make(map[string]int) // lower-cased name → line it was first on
	line := 0
	for sc.Scan() {
		line++
		name := trimComment(sc.Text())
		if name == "" {
			continue
		}
		if err := checkName(name); err != nil {
			return nil, usageError{fmt.Errorf("%s:%d: %w", file, line, err)}
		}
		key := strings.ToLower(name)
		if prev, dup := first[key]; dup {
			return nil, usageError{fmt.Errorf("%s:%d: node %q is already on line %d", file, line, name, prev)}
		}
		if len(names) == schedule.MaxNodes {
			return nil, usageError{fmt.Errorf("%s:%d: more than %d nodes", file, line, schedule.MaxNodes)}
		}
		first[key] = line
		names = append(names, name)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, usageError{fmt.Errorf("%s:%d: line too long for a node name (at most %d characters)", file, line+1, maxNameLen)}
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(names) == 0 {
		return nil, usageError{fmt.Errorf("%s: no node names", file)}
	}
	return names, nil
}

// checkName tells why name cannot name a node: longer than maxNameLen,
// or holding a character other than ASCII letters, digits and
// nameChars.
func checkName(name string) error {
	if len(name) > maxNameLen {
		return fmt.Errorf("node name %.20q…: %d characters, at most %d", name, len(name), maxNameLen)
	}
	for _, c := range name {
		if !nameChar(c) {
			return fmt.Errorf("node name %q: holds %q; a name holds ASCII letters, digits and %q only", name, c, nameChars)
		}
	}
	return nil
}

// nameChar reports whether c may be in a node name.
func nameChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(nameChars, c)
}

// trimComment returns line without its '#' comment and surrounding
// white space.
func trimComment(line string) string {
	line, _, _ = strings.Cut(line, "#")
	return strings.TrimSpace(line)
}
