package mcpserver

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handler serves srv over MCP's streamable HTTP transport (sessions, and
// server-sent events for calls that report progress). Every request must
// authenticate as the API's routes do (authenticate gives the team, refuse
// answers the API's 401); a session is its team's, and a request of another
// team for it is refused (the SDK checks TokenInfo.UserID). The tools make
// their calls with each request's own Authorization header.
func Handler(srv *mcp.Server, authenticate func(header string) (team string, err error),
	refuse func(http.ResponseWriter, error), log *slog.Logger) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{SessionTimeout: 30 * time.Minute, Logger: log})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		team, err := authenticate(r.Header.Get("Authorization"))
		if err != nil {
			refuse(w, err)
			return
		}
		r = r.Clone(r.Context())
		r.Header.Set(hostHeader, r.Host)
		r.Header.Set(remoteHeader, r.RemoteAddr)
		r.Header.Del(tlsHeader)
		if r.TLS != nil {
			r.Header.Set(tlsHeader, "1")
		}
		if r.Header.Get("Authorization") == "" {
			// Local mode takes callers without a key; the SDK's bearer
			// check does not.
			r.Header.Set("Authorization", "Bearer local")
		}
		verify := func(_ context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
			return &auth.TokenInfo{UserID: team}, nil
		}
		auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h).ServeHTTP(w, r)
	})
}
