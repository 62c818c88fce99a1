// Package fakeko writes minimal kernel module files for tests: an ELF64
// relocatable object whose only contents are a .modinfo section, which is
// all that loopback reads of a module before a guest boots.
package fakeko

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"strings"
)

// Bytes returns an ELF64 little-endian x86-64 relocatable object with a
// .modinfo section holding the given "key=value" strings, each ended by a
// NUL, as the kernel's build writes them.
func Bytes(modinfo ...string) []byte {
	var info bytes.Buffer
	for _, kv := range modinfo {
		info.WriteString(kv)
		info.WriteByte(0)
	}
	shstrtab := []byte("\x00.modinfo\x00.shstrtab\x00")
	const ehsize, shentsize = 64, 64
	infoOff := uint64(ehsize)
	strOff := infoOff + uint64(info.Len())
	shoff := (strOff + uint64(len(shstrtab)) + 7) &^ 7

	var b bytes.Buffer
	le := binary.LittleEndian
	w := func(v any) { _ = binary.Write(&b, le, v) }
	b.Write([]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT), 0})
	b.Write(make([]byte, 8))
	w(uint16(elf.ET_REL))
	w(uint16(elf.EM_X86_64))
	w(uint32(elf.EV_CURRENT))
	w(uint64(0))      // entry
	w(uint64(0))      // phoff
	w(shoff)          // shoff
	w(uint32(0))      // flags
	w(uint16(ehsize)) // ehsize
	w(uint16(0))      // phentsize
	w(uint16(0))      // phnum
	w(uint16(shentsize))
	w(uint16(3)) // shnum
	w(uint16(2)) // shstrndx
	b.Write(info.Bytes())
	b.Write(shstrtab)
	b.Write(make([]byte, int(shoff)-b.Len()))
	section := func(name uint32, typ elf.SectionType, off, size uint64) {
		w(name)
		w(uint32(typ))
		w(uint64(0)) // flags
		w(uint64(0)) // addr
		w(off)
		w(size)
		w(uint32(0)) // link
		w(uint32(0)) // info
		w(uint64(1)) // addralign
		w(uint64(0)) // entsize
	}
	section(0, elf.SHT_NULL, 0, 0)
	section(uint32(strings.Index(string(shstrtab), ".modinfo")), elf.SHT_PROGBITS, infoOff, uint64(info.Len()))
	section(uint32(strings.Index(string(shstrtab), ".shstrtab")), elf.SHT_STRTAB, strOff, uint64(len(shstrtab)))
	return b.Bytes()
}

// Write writes [Bytes] of modinfo to the file p.
func Write(p string, modinfo ...string) error {
	return os.WriteFile(p, Bytes(modinfo...), 0o644)
}
