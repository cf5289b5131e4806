// Package mcpserver is Trawler's Model Context Protocol server: the API's
// endpoints as MCP tools, named and shaped as firecrawl-mcp's, served over
// the streamable HTTP transport at /v2/mcp and over stdio by `trawler mcp`,
// on the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// A tool is a REST call and nothing else: its arguments are the endpoint's
// body, and it is made through the same handler as a client's request
// (InProcess) or over HTTP to a running Trawler (Remote), with the caller's
// own Authorization header. Validation, errors, team isolation, credits,
// the activity log, the network guard and zero data retention are the
// API's, not a second implementation of them.
package mcpserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
)

// A Call is one request of Trawler's REST API.
type Call struct {
	Method, Path string
	// Auth is the caller's Authorization header.
	Auth        string
	ContentType string
	Body        []byte
	// Host, Remote and TLS are the MCP request's, when it came over HTTP:
	// the API answers loopback callers in local mode and builds the URLs it
	// hands out (a session's cdpUrl) from them.
	Host, Remote string
	TLS          bool
}

// A Caller makes a Call and returns the API's status and answer.
type Caller func(ctx context.Context, c Call) (status int, answer []byte, err error)

// InProcess makes calls through api, the service's own handler, without a
// socket. The API's answers are JSON documents of bounded size (the
// paging of job results keeps them so), which the recorder holds.
func InProcess(api http.Handler) Caller {
	return func(ctx context.Context, c Call) (int, []byte, error) {
		req, err := newRequest(ctx, "http://trawler.invalid", c)
		if err != nil {
			return 0, nil, err
		}
		// Fiber's adaptor routes by RequestURI, which a server sets.
		req.RequestURI = c.Path
		req.Host, req.RemoteAddr = c.Host, c.Remote
		if req.Host == "" {
			req.Host = "127.0.0.1"
		}
		if req.RemoteAddr == "" {
			req.RemoteAddr = "127.0.0.1:1"
		}
		if c.TLS {
			req.TLS = &tls.ConnectionState{}
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		return rec.Code, rec.Body.Bytes(), nil
	}
}

// Remote makes calls over HTTP to the Trawler at base
// ("http://127.0.0.1:3002").
func Remote(base string, client *http.Client) Caller {
	base = strings.TrimRight(base, "/")
	return func(ctx context.Context, c Call) (int, []byte, error) {
		req, err := newRequest(ctx, base, c)
		if err != nil {
			return 0, nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, fmt.Errorf("%s %s: %w", c.Method, c.Path, err)
		}
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		if err != nil {
			return 0, nil, fmt.Errorf("%s %s: reading the answer: %w", c.Method, c.Path, err)
		}
		return resp.StatusCode, answer, nil
	}
}

func newRequest(ctx context.Context, base string, c Call) (*http.Request, error) {
	var body io.Reader
	if c.Body != nil {
		body = bytes.NewReader(c.Body)
	}
	req, err := http.NewRequestWithContext(ctx, c.Method, base+c.Path, body)
	if err != nil {
		return nil, err
	}
	if c.Auth != "" {
		req.Header.Set("Authorization", c.Auth)
	}
	if c.Body != nil {
		ct := c.ContentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	return req, nil
}
