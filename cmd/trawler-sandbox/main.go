// Command trawler-sandbox is the entrypoint of Trawler's execute sandbox
// image: it runs the program Trawler sends over the container's standard
// streams and carries the program's output, exit code and loopback
// connections back over them (see package docker/sandboxshim).
// scripts/images.sh puts it in the image.
package main

import (
	"os"

	"github.com/trawler-dev/trawler/docker/sandboxshim"
)

func main() {
	os.Exit(sandboxshim.Main(os.Stdin, os.Stdout, os.Stderr))
}
