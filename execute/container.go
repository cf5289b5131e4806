package execute

import (
	"context"
	"io"
	"strconv"

	"github.com/trawler-dev/trawler/docker/sandboxshim"
)

// Paths inside the sandbox image (scripts/images.sh sandbox).
const (
	sandboxNode       = "/usr/bin/node"
	sandboxBash       = "/usr/bin/bash"
	sandboxPlaywright = "/opt/trawler/node_modules/playwright-core"
	sandboxCache      = "/opt/trawler/cache"
	// sandboxPort is the loopback port of the run's CDP endpoint in the
	// sandbox, carried over the container's streams to Trawler.
	sandboxPort = 9222
)

// runContainer runs p in a sandbox container. Everything the run writes
// lives in the container's /tmp: the runner, the browser command, the code
// and the run's home.
func (s *Service) runContainer(ctx context.Context, p *program, stdout, stderr io.Writer) (int, error) {
	const tools, home = "/tmp/trawler", "/tmp/run"
	job := sandboxshim.Job{
		Dir:  home,
		Port: sandboxPort,
		Env: []string{
			"PATH=" + tools + "/bin:/usr/local/bin:/usr/bin:/bin",
			"HOME=" + home,
			"TMPDIR=/tmp",
			"LANG=C.UTF-8",
			"TRAWLER_CDP_URL=ws://127.0.0.1:" + strconv.Itoa(sandboxPort) + "/" + p.token,
			"TRAWLER_PAGE_TARGET=" + p.target,
			"TRAWLER_PLAYWRIGHT=" + sandboxPlaywright,
			"TRAWLER_COMPILE_CACHE=" + sandboxCache,
		},
		Files: []sandboxshim.File{
			{Path: tools + "/runner.cjs", Mode: 0o644, Data: runnerJS},
			{Path: tools + "/bin/browser", Mode: 0o755, Data: browserCommand(sandboxBash, sandboxNode, tools+"/runner.cjs")},
		},
	}
	switch p.language {
	case LangNode:
		job.Files = append(job.Files, sandboxshim.File{Path: home + "/code.js", Mode: 0o644, Data: p.code})
		job.Argv = []string{sandboxNode, tools + "/runner.cjs", "node", home + "/code.js"}
	case LangBash:
		job.Files = append(job.Files, sandboxshim.File{Path: home + "/code.sh", Mode: 0o644, Data: p.code})
		job.Argv = []string{sandboxBash, home + "/code.sh"}
	}
	ln := newStreamListener()
	srv := serveCDP(ln, p.endpoint)
	defer srv.Close()
	defer ln.Close()
	return s.cfg.Containers.Run(ctx, p.id, job, ln.serve, stdout, stderr)
}

// browserCommand is the bash sandbox's `browser` command: a script that
// hands its arguments to the runner.
func browserCommand(bash, node, runner string) string {
	return "#!" + bash + "\nexec " + shellQuote(node) + " " + shellQuote(runner) + " browser \"$@\"\n"
}

func shellQuote(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, `'\''`...)
		} else {
			out = append(out, s[i])
		}
	}
	return string(append(out, '\''))
}
