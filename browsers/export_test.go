package browsers

// WithLauncher returns c with the proxy listener made by the launcher in
// the sandbox, as for an unprivileged Trawler, whatever the user.
func WithLauncher(c Confinement) Confinement {
	c.launcher = true
	return c
}
