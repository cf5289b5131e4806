// Package disktest gives tests a filesystem that fills: a small tmpfs
// mounted in a temporary directory, and a filler that takes all its room.
package disktest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Small mounts a tmpfs of size bytes in a temporary directory of t's,
// unmounted when t ends; it skips t where mounting is not allowed (not
// root).
func Small(t testing.TB, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem needs root")
	}
	dir, err := os.MkdirTemp("", "trawler-small-disk-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		os.Remove(dir)
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		exec.Command("umount", "-l", dir).Run()
		os.RemoveAll(dir)
	})
	return dir
}

// Fill writes a file into dir until its filesystem is full and returns a
// function that frees that room again.
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "disktest-filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 16<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			break
		}
	}
	f.Close()
	return func() {
		if err := os.Remove(path); err != nil {
			t.Errorf("freeing %s: %v", dir, err)
		}
	}
}
