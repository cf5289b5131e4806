// Command trawler-shim is the entrypoint of Trawler's browser image: it
// starts Chromium with its DevTools on a pipe and carries that pipe, and the
// browser's proxy connections, over the container's standard streams (see
// package docker/shim). scripts/images.sh puts it in the image.
package main

import (
	"os"

	"github.com/trawler-dev/trawler/docker/shim"
)

func main() {
	os.Exit(shim.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
