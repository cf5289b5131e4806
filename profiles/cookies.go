package profiles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	cdproto "github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/storage"

	"github.com/trawler-dev/trawler/cdp"
)

// This file reads a browser's cookies into Cookies and sets them back, over the Storage domain.

// networkCookie is the part of CDP's Network.Cookie that a Cookie keeps, read with encoding/json
// rather than as cdproto's network.Cookie, whose float64 Expires cannot tell a cookie that never
// expires (null) from one that expires at 0.
type networkCookie struct {
	Name               string          `json:"name"`
	Value              string          `json:"value"`
	Domain             string          `json:"domain"`
	Path               string          `json:"path"`
	Expires            *float64        `json:"expires"` // null for ±Inf
	HTTPOnly           bool            `json:"httpOnly"`
	Secure             bool            `json:"secure"`
	Session            bool            `json:"session"`
	SameSite           string          `json:"sameSite"`
	Priority           string          `json:"priority"`
	SourceScheme       string          `json:"sourceScheme"`
	SourcePort         int             `json:"sourcePort"`
	PartitionKey       json.RawMessage `json:"partitionKey"` // an object; a string in older browsers
	PartitionKeyOpaque bool            `json:"partitionKeyOpaque"`
}

// maxCookieAge is the longest lifetime Chromium grants a cookie; a cookie that says "never expires"
// gets it.
const maxCookieAge = 400 * 24 * time.Hour

func getCookies(ctx context.Context, conn *cdp.Conn, browserContextID string) ([]Cookie, error) {
	params := storage.GetCookiesParams{BrowserContextID: cdproto.BrowserContextID(browserContextID)}
	var res struct {
		Cookies []networkCookie `json:"cookies"`
	}
	if err := cdp.Browser(conn).Call(ctx, storage.CommandGetCookies, params, &res); err != nil {
		return nil, fmt.Errorf("reading cookies: %w", err)
	}
	out := make([]Cookie, 0, len(res.Cookies))
	for _, nc := range res.Cookies {
		c := Cookie{
			Name: nc.Name, Value: nc.Value, Domain: nc.Domain, Path: nc.Path,
			HTTPOnly: nc.HTTPOnly, Secure: nc.Secure, SameSite: nc.SameSite, Priority: nc.Priority,
			SourceScheme: nc.SourceScheme, SourcePort: nc.SourcePort,
		}
		if !nc.Session {
			switch {
			case nc.Expires == nil || math.IsInf(*nc.Expires, 1):
				c.Expires = float64(time.Now().Add(maxCookieAge).Unix())
			case *nc.Expires > 0:
				c.Expires = *nc.Expires
			}
		}
		if len(nc.PartitionKey) > 0 && string(nc.PartitionKey) != "null" {
			if nc.PartitionKeyOpaque {
				continue // an opaque partition cannot be named, so the cookie cannot be set back
			}
			var pk CookiePartitionKey
			if err := json.Unmarshal(nc.PartitionKey, &pk); err != nil {
				var site string
				if json.Unmarshal(nc.PartitionKey, &site) != nil {
					return nil, fmt.Errorf("reading cookie %s of %s: unknown partition key %s", nc.Name, nc.Domain, nc.PartitionKey)
				}
				pk = CookiePartitionKey{TopLevelSite: site}
			}
			c.PartitionKey = &pk
		}
		out = append(out, c)
	}
	return out, nil
}

// param turns a saved cookie into the parameter that sets it back. A host-only cookie is set by URL
// and without a domain, which is what keeps it host-only.
func (c *Cookie) param() *network.CookieParam {
	p := &network.CookieParam{
		Name: c.Name, Value: c.Value, Path: c.Path, Secure: c.Secure, HTTPOnly: c.HTTPOnly,
		SameSite: network.CookieSameSite(c.SameSite), Expires: cdproto.TimeSinceEpoch(c.Expires),
		Priority: network.CookiePriority(c.Priority), SourceScheme: network.CookieSourceScheme(c.SourceScheme),
		SourcePort: int64(c.SourcePort),
	}
	if k := c.PartitionKey; k != nil {
		p.PartitionKey = &network.CookiePartitionKey{TopLevelSite: k.TopLevelSite, HasCrossSiteAncestor: k.HasCrossSiteAncestor}
	}
	if !c.HostOnly() {
		p.Domain = c.Domain
		return p
	}
	scheme := "http"
	if c.Secure || c.SourceScheme == "Secure" {
		scheme = "https"
	}
	host := c.Domain
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]" // an IPv6 address
	}
	path := c.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	p.URL = scheme + "://" + host + path
	return p
}

func setCookies(ctx context.Context, conn *cdp.Conn, browserContextID string, cookies []Cookie) error {
	now := float64(time.Now().Unix())
	params := make([]*network.CookieParam, 0, len(cookies))
	var names []string // for errors, by param
	for i := range cookies {
		c := &cookies[i]
		if !c.Session() && c.Expires <= now {
			continue
		}
		params = append(params, c.param())
		names = append(names, fmt.Sprintf("%s (domain %s, path %s)", c.Name, c.Domain, c.Path))
	}
	if len(params) == 0 {
		return nil
	}
	call := func(ps []*network.CookieParam) error {
		return cdp.Run(ctx, cdp.Browser(conn), storage.SetCookies,
			storage.SetCookiesParams{Cookies: ps, BrowserContextID: cdproto.BrowserContextID(browserContextID)})
	}
	err := call(params)
	if err == nil {
		return nil
	}
	var cdpErr *cdp.Error
	if !errors.As(err, &cdpErr) {
		return fmt.Errorf("writing cookies: %w", err)
	}
	// The browser refuses the whole batch for one cookie it finds invalid: set the others one by
	// one and name those it refuses.
	var bad []string
	for i, p := range params {
		if err := call([]*network.CookieParam{p}); err != nil {
			if !errors.As(err, &cdpErr) {
				return fmt.Errorf("writing cookies: %w", err)
			}
			bad = append(bad, names[i])
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("writing cookies: the browser refused %d of %d: %s", len(bad), len(params), strings.Join(bad, ", "))
	}
	return nil
}
