package egress

import (
	"errors"
	"fmt"
	"net"
	"path"
	"strings"
)

// HostRules are the MAP and EXCLUDE rules of Chromium's
// --host-resolver-rules flag ("MAP *.test 127.0.0.1, EXCLUDE a.test"). A
// browser behind a proxy hands host names to the proxy unresolved, so the
// proxy applies the rules in its place and the flag keeps its meaning.
// Written here: no served library parses Chromium's rule syntax.
type HostRules []hostRule

type hostRule struct {
	exclude     bool
	pattern     string // a host name glob; * matches any run of characters
	replacement string // host, or host:port
}

// ErrNotFound is a host that a ~NOTFOUND rule makes unresolvable.
var ErrNotFound = errors.New("the host resolver rules make this host unresolvable")

// ParseHostRules reads the value of --host-resolver-rules.
func ParseHostRules(v string) (HostRules, error) {
	var rules HostRules
	for _, part := range strings.Split(v, ",") {
		f := strings.Fields(part)
		switch {
		case len(f) == 0:
			continue
		case len(f) == 3 && strings.EqualFold(f[0], "MAP"):
			rules = append(rules, hostRule{pattern: strings.ToLower(f[1]), replacement: f[2]})
		case len(f) == 2 && strings.EqualFold(f[0], "EXCLUDE"):
			rules = append(rules, hostRule{exclude: true, pattern: strings.ToLower(f[1])})
		default:
			return nil, fmt.Errorf("host resolver rule %q is not MAP PATTERN REPLACEMENT or EXCLUDE PATTERN", strings.TrimSpace(part))
		}
	}
	return rules, nil
}

// HostRulesFromFlags finds --host-resolver-rules among Chromium flags.
func HostRulesFromFlags(flags []string) (HostRules, error) {
	var rules HostRules
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "--host-resolver-rules="); ok {
			r, err := ParseHostRules(strings.Trim(v, `"`))
			if err != nil {
				return nil, err
			}
			rules = append(rules, r...)
		}
	}
	return rules, nil
}

// Map applies the first MAP rule that matches host, unless an EXCLUDE rule
// matches it (exclusions come first, as in Chromium): ok is false when none
// maps it, port is "" when the replacement keeps the original port.
func (r HostRules) Map(host string) (mapped, port string, ok bool, err error) {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	for _, rule := range r {
		if m, _ := path.Match(rule.pattern, h); m && rule.exclude {
			return "", "", false, nil
		}
	}
	for _, rule := range r {
		if m, _ := path.Match(rule.pattern, h); !m || rule.exclude {
			continue
		}
		if rule.replacement == "~NOTFOUND" {
			return "", "", false, ErrNotFound
		}
		if hh, pp, err := net.SplitHostPort(rule.replacement); err == nil {
			return hh, pp, true, nil
		}
		return strings.Trim(rule.replacement, "[]"), "", true, nil
	}
	return "", "", false, nil
}
