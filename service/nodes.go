package service

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/trawler-dev/trawler/egress"
	"github.com/trawler-dev/trawler/sessions"
	"github.com/trawler-dev/trawler/store"
	"github.com/trawler-dev/trawler/wire"
)

// nodeHeader carries TRAWLER_NODE_SECRET on a request one node forwards to
// another: the receiving node serves it itself, and never forwards it
// again.
const nodeHeader = "X-Trawler-Node-Secret"

// forwarder sends a session's requests that land on a node other than the
// session's own (behind a load balancer, say) to that node, over HTTP:
// the CDP proxy and the live view (WebSockets included), DELETE
// /v2/browser/{id} and its execute. The owning node authenticates them as
// it would from the client itself (the session's token, the API key), and
// sees their activity.
type forwarder struct {
	store    *store.Store
	sessions *sessions.Manager
	secret   string
	log      *slog.Logger
	// lease bounds how long ago a node was seen for it to be forwarded
	// to: the nodes that stopped have their sessions ended.
	lease time.Duration

	mu    sync.Mutex
	urls  map[string]*url.URL // node → its URL, as last read
	asked time.Time
}

// sessionOf returns the id of the session that request r is about, "" for
// any other request.
func sessionOf(r *http.Request) string {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/cdp/"):
		id, _, _ := strings.Cut(strings.TrimPrefix(p, "/cdp/"), "/")
		return id
	case strings.HasPrefix(p, "/live/"):
		id, _, _ := strings.Cut(strings.TrimPrefix(p, "/live/"), "/")
		if id == "static" {
			return ""
		}
		return id
	case strings.HasPrefix(p, "/v2/browser/") && r.Method != http.MethodGet:
		id, rest, _ := strings.Cut(strings.TrimPrefix(p, "/v2/browser/"), "/")
		if rest == "" || rest == "execute" {
			return id
		}
	}
	return ""
}

func (f *forwarder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get(nodeHeader); got != "" {
			if subtle.ConstantTimeCompare([]byte(got), []byte(f.secret)) != 1 {
				wire.WriteError(w, http.StatusForbidden, "FORBIDDEN", nodeHeader+" does not match this node's TRAWLER_NODE_SECRET")
				return
			}
			r.Header.Del(nodeHeader)
			next.ServeHTTP(w, r) // forwarded once: served here, whatever it finds
			return
		}
		id := sessionOf(r)
		if id == "" || f.sessions.Runs(id) {
			next.ServeHTTP(w, r)
			return
		}
		target := f.owner(r.Context(), id)
		if target == nil {
			next.ServeHTTP(w, r) // not active anywhere: answered here from the store
			return
		}
		proxy := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				// The owning node builds the URLs it answers with (a
				// cdpUrl, /json/version) from the host the client asked.
				pr.Out.Host = pr.In.Host
				pr.Out.Header.Set(nodeHeader, f.secret)
			},
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				f.log.Warn("forwarding a session's request to its node", "session", id, "node", target.Host, "err", err)
				wire.WriteError(w, http.StatusBadGateway, "NODE_UNREACHABLE",
					"the node running this browser session could not be reached: "+err.Error())
			},
			FlushInterval: -1,
		}
		proxy.ServeHTTP(w, r)
	})
}

// owner returns the URL of the node running session id when that is
// another node, nil otherwise.
func (f *forwarder) owner(ctx context.Context, id string) *url.URL {
	rec, err := f.store.Session(ctx, id)
	if err != nil || rec.Status != "active" || rec.Node == "" || rec.Node == f.store.Node() {
		return nil
	}
	urls := f.nodeURLs(ctx, false)
	if urls[rec.Node] == nil {
		urls = f.nodeURLs(ctx, true) // a node that started since
	}
	return urls[rec.Node]
}

// nodeURLs returns the nodes' URLs, read again when fresh is set or the
// last read is older than a third of a lease.
func (f *forwarder) nodeURLs(ctx context.Context, fresh bool) map[string]*url.URL {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !fresh && f.urls != nil && time.Since(f.asked) < f.lease/3 {
		return f.urls
	}
	raw, err := f.store.NodeURLs(ctx, time.Now().Add(-f.lease))
	if err != nil {
		f.log.Error("reading the nodes' URLs", "err", err)
		return f.urls
	}
	out := map[string]*url.URL{}
	for node, s := range raw {
		if u, err := url.Parse(s); err == nil {
			out[node] = u
		}
	}
	f.urls, f.asked = out, time.Now()
	return out
}

// denyNodes makes every node's address, as the nodes table gives it,
// unreachable from this node's browsers: a page must not reach another
// node's API or CDP proxy any more than this node's own.
func denyNodes(ctx context.Context, st *store.Store, proxy *egress.Proxy, denied map[string]bool, lease time.Duration) error {
	urls, err := st.NodeURLs(ctx, time.Now().Add(-24*time.Hour))
	if err != nil {
		return err
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || denied[u.Host] {
			continue
		}
		host, port := u.Hostname(), u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		addrs := []string{host}
		if net.ParseIP(host) == nil {
			rctx, cancel := context.WithTimeout(ctx, lease/3)
			addrs, err = net.DefaultResolver.LookupHost(rctx, host)
			cancel()
			if err != nil {
				continue // tried again at the next heartbeat
			}
		}
		for _, a := range addrs {
			proxy.Deny(net.JoinHostPort(a, port))
		}
		denied[u.Host] = true
	}
	return nil
}

// instanceReaper removes the containers of a service instance (a node) on
// this node's container engine.
type instanceReaper interface {
	ReapInstance(ctx context.Context, instance string) (int, error)
}

// lostNodesWindow is how long ago a node may have been last seen for its
// containers to be looked for: a node's restart under its name clears
// them too.
const lostNodesWindow = 24 * time.Hour

// reapLost removes the containers of the nodes last seen before before:
// their browsers and sandboxes run on, orphaned, on an engine this node
// shares (a compose rig, one Docker host), holding memory and pool places
// nobody will give back. Each lost node is reaped once per time it was
// last seen; a failure is tried again at the next heartbeat.
func (s *Service) reapLost(ctx context.Context, before time.Time) {
	if len(s.reapers) == 0 {
		return
	}
	lost, err := s.Store.LostNodes(ctx, before, before.Add(-lostNodesWindow))
	if err != nil {
		s.log.Error("reading the nodes that stopped", "err", err)
		return
	}
	for _, n := range lost {
		if s.reaped[n.ID].Equal(n.SeenAt) {
			continue
		}
		removed := 0
		var failed error
		for _, r := range s.reapers {
			k, err := r.ReapInstance(ctx, n.ID)
			removed += k
			failed = errors.Join(failed, err)
		}
		if removed > 0 {
			s.log.Warn("removed the containers of a node that stopped", "node", n.ID, "containers", removed)
		}
		if failed != nil {
			s.log.Error("removing the containers of a node that stopped", "node", n.ID, "err", failed)
			continue
		}
		if s.reaped == nil {
			s.reaped = map[string]time.Time{}
		}
		s.reaped[n.ID] = n.SeenAt
	}
}
