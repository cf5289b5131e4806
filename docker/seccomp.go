package docker

import (
	"encoding/json"
	"sync"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// browserSeccomp is the seccomp profile of the browser containers: Docker's
// default one, which they would get anyway, plus the three system calls
// Chromium's own sandbox needs to wall in its renderers (clone and unshare
// with new user, pid and network namespaces, and chroot into an empty
// directory there). Docker's default allows those only with CAP_SYS_ADMIN,
// which the containers must not have; with them, Chromium runs with its
// sandbox on instead of --no-sandbox. A namespace opened inside the
// container gives nothing the container has not: no capability outside it,
// no file or network the container cannot reach.
var browserSeccomp = sync.OnceValues(func() (string, error) {
	p := seccomp.DefaultProfile()
	p.Syscalls = append(p.Syscalls, &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{
		Names: []string{"clone", "unshare", "chroot"}, Action: specs.ActAllow}})
	b, err := json.Marshal(p)
	return string(b), err
})
