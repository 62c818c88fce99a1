//go:build !linux

package verbs

func mmapBuffer(int, bool) ([]byte, error) { return nil, ErrNotSupported }

func munmapBuffer([]byte) error { return ErrNotSupported }
