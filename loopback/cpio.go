package loopback

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
)

// archive is an initramfs under construction: a set of regular files and
// directories written out as a "newc" cpio archive, the format the kernel
// unpacks into its rootfs at boot (Documentation/driver-api/early-userspace).
type archive struct {
	files map[string]archiveFile
}

type archiveFile struct {
	mode uint32 // permission bits and type (0o040000 dir, 0o100000 file, 0o120000 symlink)
	data []byte
}

const (
	modeDir     = 0o040000
	modeFile    = 0o100000
	modeSymlink = 0o120000
)

func newArchive() *archive { return &archive{files: map[string]archiveFile{}} }

// add puts a file with the given permissions at name (a path relative to
// the archive root), creating its parent directories.
func (a *archive) add(name string, perm uint32, data []byte) {
	a.mkdirAll(path.Dir(name))
	a.files[clean(name)] = archiveFile{mode: modeFile | perm, data: data}
}

// symlink adds a symbolic link name → target.
func (a *archive) symlink(name, target string) {
	a.mkdirAll(path.Dir(name))
	a.files[clean(name)] = archiveFile{mode: modeSymlink | 0o777, data: []byte(target)}
}

// addFile copies a file of the host into the archive at name.
func (a *archive) addFile(name, hostPath string, perm uint32) error {
	data, err := os.ReadFile(hostPath)
	if err != nil {
		return fmt.Errorf("initramfs: %w", err)
	}
	a.add(name, perm, data)
	return nil
}

func (a *archive) mkdirAll(dir string) {
	for d := clean(dir); d != "." && d != ""; d = path.Dir(d) {
		if _, ok := a.files[d]; !ok {
			a.files[d] = archiveFile{mode: modeDir | 0o755}
		}
	}
}

func clean(name string) string { return strings.TrimPrefix(path.Clean("/"+name), "/") }

// names lists the archive's entries in the order they are written:
// sorted, so that every directory precedes its contents.
func (a *archive) names() []string {
	names := make([]string, 0, len(a.files))
	for n := range a.files {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// writeTo writes the archive in newc format, ending with the TRAILER!!!
// entry. Every entry belongs to root; inode numbers count from 1.
func (a *archive) writeTo(w io.Writer) error {
	var buf bytes.Buffer
	ino := uint32(1)
	entry := func(name string, f archiveFile) {
		nlink := uint32(1)
		if f.mode&0o170000 == modeDir {
			nlink = 2
		}
		fmt.Fprintf(&buf, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
			ino, f.mode, 0, 0, nlink, 0, len(f.data), 0, 0, 0, 0, len(name)+1, 0)
		buf.WriteString(name)
		buf.WriteByte(0)
		pad4(&buf)
		buf.Write(f.data)
		pad4(&buf)
		ino++
	}
	for _, n := range a.names() {
		entry(n, a.files[n])
	}
	entry("TRAILER!!!", archiveFile{})
	_, err := w.Write(buf.Bytes())
	return err
}

func pad4(b *bytes.Buffer) {
	for b.Len()%4 != 0 {
		b.WriteByte(0)
	}
}
