package main

import (
	"errors"
	"flag"
	"fmt"
)

// oneArgument parses args with fs, letting flags come before or after the
// one positional argument, which it returns; what names it in errors
// ("URL", "file").
func oneArgument(fs *flag.FlagSet, args []string, what string) (string, error) {
	var arg string
	rest := args
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			return "", err
		}
		rest = fs.Args()
		if len(rest) > 0 {
			if arg != "" {
				return "", fmt.Errorf("one %s at a time, got %q and %q", what, arg, rest[0])
			}
			arg, rest = rest[0], rest[1:]
		}
	}
	if arg == "" {
		fs.Usage()
		return "", errors.New("a " + what + " is required")
	}
	return arg, nil
}
