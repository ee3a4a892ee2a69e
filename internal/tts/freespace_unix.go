//go:build linux || darwin

package tts

import "syscall"

// freeSpace is the space an unprivileged process may still write on the
// file system holding dir.
func freeSpace(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
