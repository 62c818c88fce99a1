package loopback

import (
	"bytes"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cpioEntry is one entry of a newc archive as readNewc found it.
type cpioEntry struct {
	name   string
	ino    uint32
	mode   uint32
	nlink  uint32
	data   []byte
	offset int // of the header in the archive
}

// readNewc parses a newc ("070701") cpio archive up to and including its
// TRAILER!!! entry, checking the format strictly: the magic, hex fields,
// the NUL after each name, 4-byte alignment with zero padding, and nothing
// after the trailer.
func readNewc(t *testing.T, b []byte) []cpioEntry {
	t.Helper()
	const hdrLen = 110
	var entries []cpioEntry
	pos := 0
	align := func(what string) {
		for ; pos%4 != 0; pos++ {
			require.Less(t, pos, len(b), "archive ends inside the padding after %s", what)
			require.Zero(t, b[pos], "non-zero padding byte at %d after %s", pos, what)
		}
	}
	for {
		require.Zero(t, pos%4, "header at %d is not 4-byte aligned", pos)
		require.LessOrEqual(t, pos+hdrLen, len(b), "archive ends inside a header at %d", pos)
		hdr := string(b[pos : pos+hdrLen])
		require.Equal(t, "070701", hdr[:6], "magic at %d", pos)
		field := func(i int) uint32 {
			v, err := strconv.ParseUint(hdr[6+8*i:6+8*i+8], 16, 32)
			require.NoError(t, err, "header field %d at %d", i, pos)
			return uint32(v)
		}
		e := cpioEntry{ino: field(0), mode: field(1), nlink: field(4), offset: pos}
		size, nameSize := int(field(6)), int(field(11))
		pos += hdrLen
		require.LessOrEqual(t, pos+nameSize, len(b), "archive ends inside a name")
		require.Positive(t, nameSize)
		require.Zero(t, b[pos+nameSize-1], "name at %d lacks its NUL", pos)
		e.name = string(b[pos : pos+nameSize-1])
		pos += nameSize
		align(e.name)
		require.LessOrEqual(t, pos+size, len(b), "archive ends inside the data of %s", e.name)
		e.data = b[pos : pos+size]
		pos += size
		align(e.name)
		entries = append(entries, e)
		if e.name == "TRAILER!!!" {
			require.Equal(t, len(b), pos, "bytes after the trailer")
			return entries
		}
	}
}

// entryMap indexes entries by name, failing on duplicates.
func entryMap(t *testing.T, entries []cpioEntry) map[string]cpioEntry {
	t.Helper()
	m := map[string]cpioEntry{}
	for _, e := range entries {
		require.NotContains(t, m, e.name, "duplicate entry")
		m[e.name] = e
	}
	return m
}

func TestArchiveWriteTo(t *testing.T) {
	type file struct {
		name    string
		mode    uint32
		content string
	}
	tests := []struct {
		name  string
		build func(a *archive)
		want  []file // every entry but the trailer, in archive order
	}{
		{
			name:  "empty",
			build: func(a *archive) {},
		},
		{
			name: "nested file gets its parents first",
			build: func(a *archive) {
				a.add("a/b/c.txt", 0o644, []byte("hello"))
			},
			want: []file{
				{"a", modeDir | 0o755, ""},
				{"a/b", modeDir | 0o755, ""},
				{"a/b/c.txt", modeFile | 0o644, "hello"},
			},
		},
		{
			name: "names and data of every length mod 4",
			build: func(a *archive) {
				for i := 1; i <= 5; i++ {
					a.add(strings.Repeat("n", i), 0o600, []byte(strings.Repeat("d", i-1)))
				}
			},
			want: []file{
				{"n", modeFile | 0o600, ""},
				{"nn", modeFile | 0o600, "d"},
				{"nnn", modeFile | 0o600, "dd"},
				{"nnnn", modeFile | 0o600, "ddd"},
				{"nnnnn", modeFile | 0o600, "dddd"},
			},
		},
		{
			name: "symlink, executable, leading slash and dot-dot cleaned",
			build: func(a *archive) {
				a.add("/bin/busybox", 0o755, []byte("ELF"))
				a.symlink("bin/sh", "busybox")
				a.add("x/../init", 0o755, []byte("#!/bin/sh\n"))
			},
			want: []file{
				{"bin", modeDir | 0o755, ""},
				{"bin/busybox", modeFile | 0o755, "ELF"},
				{"bin/sh", modeSymlink | 0o777, "busybox"},
				{"init", modeFile | 0o755, "#!/bin/sh\n"},
			},
		},
		{
			name: "a later add replaces the file",
			build: func(a *archive) {
				a.add("f", 0o644, []byte("old"))
				a.add("f", 0o600, []byte("new!"))
			},
			want: []file{{"f", modeFile | 0o600, "new!"}},
		},
		{
			name: "a sibling sorting between parent and child",
			build: func(a *archive) {
				a.add("a-b", 0o644, nil)
				a.add("a/b", 0o644, nil)
			},
			want: []file{
				{"a", modeDir | 0o755, ""},
				{"a-b", modeFile | 0o644, ""},
				{"a/b", modeFile | 0o644, ""},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newArchive()
			tt.build(a)
			var buf bytes.Buffer
			require.NoError(t, a.writeTo(&buf))
			entries := readNewc(t, buf.Bytes())

			require.Len(t, entries, len(tt.want)+1)
			seen := map[string]bool{}
			for i, e := range entries[:len(tt.want)] {
				w := tt.want[i]
				assert.Equal(t, w.name, e.name, "entry %d", i)
				assert.Equal(t, fmt.Sprintf("%o", w.mode), fmt.Sprintf("%o", e.mode), "mode of %s", e.name)
				assert.Equal(t, w.content, string(e.data), "data of %s", e.name)
				assert.Equal(t, uint32(i+1), e.ino, "inode of %s", e.name)
				wantLinks := uint32(1)
				if e.mode&0o170000 == modeDir {
					wantLinks = 2
				}
				assert.Equal(t, wantLinks, e.nlink, "nlink of %s", e.name)
				if dir := parentDir(e.name); dir != "" {
					assert.True(t, seen[dir], "%s comes before its directory %s", e.name, dir)
				}
				seen[e.name] = true
			}
			trailer := entries[len(entries)-1]
			assert.Equal(t, "TRAILER!!!", trailer.name)
			assert.Empty(t, trailer.data)
			assert.Zero(t, buf.Len()%4, "archive length")

			if cpio, err := exec.LookPath("cpio"); err == nil {
				cmd := exec.Command(cpio, "-it", "--quiet")
				cmd.Stdin = bytes.NewReader(buf.Bytes())
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "cpio -it: %s", out)
				names := make([]string, 0, len(tt.want))
				for _, w := range tt.want {
					names = append(names, w.name)
				}
				assert.Equal(t, names, strings.Fields(string(out)), "cpio -it listing")
			}
		})
	}
}

// parentDir is the directory of name in the archive, "" at the top.
func parentDir(name string) string {
	i := strings.LastIndexByte(name, '/')
	if i < 0 {
		return ""
	}
	return name[:i]
}

func TestArchiveAddFileMissing(t *testing.T) {
	err := newArchive().addFile("bin/busybox", "/nonexistent/busybox", 0o755)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/nonexistent/busybox")
}
