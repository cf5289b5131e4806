package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trawler mcp, started by the Go SDK's client as a host starts a local
// server: with no URL it runs a Trawler of its own and serves its tools
// over stdio; a scrape answers, a session's cdpUrl is on loopback, and a
// refused argument is the API's error.
func TestMCPCommand(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>MCP page</title></head><body><main><h1>Hello over stdio</h1><p>`+
			strings.Repeat("Some words worth reading. ", 20)+`</p></main></body></html>`)
	}))
	defer site.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(binary, "mcp")
	cmd.Env = append(os.Environ(), "TRAWLER_ALLOW_PRIVATE_NETWORKS=true", "TRAWLER_DATA_DIR=", "TRAWLER_API_KEYS=", "TRAWLER_WARM_BROWSERS=1")
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "trawler-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()

	call := func(name string, args map[string]any) (map[string]any, bool) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err, name)
		var out map[string]any
		text := res.Content[0].(*mcp.TextContent).Text
		require.NoError(t, json.Unmarshal([]byte(text), &out), "%s: %s", name, text)
		return out, res.IsError
	}
	out, isErr := call("firecrawl_scrape", map[string]any{"url": site.URL, "formats": []any{"markdown"}})
	require.False(t, isErr, "scrape: %v", out)
	assert.Contains(t, out["data"].(map[string]any)["markdown"], "# Hello over stdio")
	out, isErr = call("firecrawl_scrape", map[string]any{"url": site.URL, "formats": []any{"markdown"}, "timeout": -5})
	assert.True(t, isErr, "a negative timeout: %v", out)
	assert.Contains(t, out["error"], "timeout")
	out, isErr = call("firecrawl_browser_create", map[string]any{"ttl": 60})
	require.False(t, isErr, "browser create: %v", out)
	assert.True(t, strings.HasPrefix(fmt.Sprint(out["cdpUrl"]), "ws://127.0.0.1:"), "cdpUrl %v", out["cdpUrl"])
	out, isErr = call("firecrawl_browser_delete", map[string]any{"id": out["id"]})
	require.False(t, isErr, "browser delete: %v", out)
}
