package config

import (
	"fmt"
	"path/filepath"
)

// Execute are the settings of POST /v2/browser/{id}/execute for the
// languages node and bash (js, evaluated in the session's page, needs
// none of them).
type Execute struct {
	// Mode is where node and bash code runs (TRAWLER_EXECUTE): "docker",
	// a sandbox container per run from Image (the default on the docker
	// runtime; it needs a Docker engine on the process runtime too);
	// "node", a local process with Trawler's own user and no sandbox (the
	// operator's opt-in, for a single-user machine); or "off", which
	// refuses them (the default on the process runtime).
	Mode string
	// Image is the sandbox image of mode docker (TRAWLER_EXECUTE_IMAGE,
	// default trawler/sandbox:latest, built by make images).
	Image string
	// Playwright is the directory of the playwright-core package of mode
	// node (TRAWLER_EXECUTE_PLAYWRIGHT; default: where node finds it from
	// the working directory, else in its global modules).
	Playwright string
}

// execute reads the settings of the execute endpoint.
func (e *envReader) execute(x *Execute) {
	e.str("TRAWLER_EXECUTE", &x.Mode)
	e.str("TRAWLER_EXECUTE_IMAGE", &x.Image)
	e.str("TRAWLER_EXECUTE_PLAYWRIGHT", &x.Playwright)
}

// validateExecute checks the execute settings and fills in the defaults,
// which depend on the runtime.
func (c *Config) validateExecute() []error {
	x := &c.Execute
	if x.Mode == "" {
		x.Mode = "off"
		if c.Runtime == "docker" {
			x.Mode = "docker"
		}
	}
	if x.Image == "" {
		x.Image = "trawler/sandbox:latest"
	}
	var errs []error
	switch x.Mode {
	case "off", "docker":
	case "node":
		if x.Playwright != "" {
			if abs, err := filepath.Abs(x.Playwright); err == nil {
				x.Playwright = abs
			}
		}
	default:
		errs = append(errs, fmt.Errorf("TRAWLER_EXECUTE must be off, node (a local process, no sandbox) or docker (a sandbox container per run), got %q", x.Mode))
	}
	return errs
}
