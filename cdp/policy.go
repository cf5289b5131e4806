package cdp

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
)

// refusalCode is the CDP error code of a command Trawler refuses: the one
// the browser itself uses for a command it does not allow.
const refusalCode = -32000

// vet checks one client command before it reaches the browser, and notes
// which tab it brings to the front. A session's client owns its browser,
// but not the machine the browser runs on, nor the network position of
// Trawler: commands that would let a page read the host's files, write
// outside the browser's own directory, bypass the egress proxy or open
// ports are refused with a CDP error saying why, and a download directory
// is replaced by the browser's own. target is the target of the session the
// command goes to ("" for the browser).
func (m *Mux) vet(msg []byte, h header, target string) ([]byte, *Error) {
	domain, _, _ := strings.Cut(h.method, ".")
	switch domain {
	case "Tethering":
		return nil, refuse(h.method + " is not available: Trawler's browsers open no ports on the host")
	case "Extensions", "PWA":
		return nil, refuse(h.method + " is not available: Trawler's browsers install nothing from the host")
	}
	switch h.method {
	case "Target.activateTarget":
		var p struct {
			TargetID string `json:"targetId"`
		}
		if json.Unmarshal(paramsOf(msg), &p) == nil {
			m.activate(p.TargetID)
		}
	case "Page.bringToFront":
		m.activate(target)
	case "Target.setRemoteLocations":
		return nil, refuse("Target.setRemoteLocations is not available: the browser contacts no DevTools hosts")
	case "Target.createBrowserContext":
		var p struct {
			ProxyServer     string `json:"proxyServer"`
			ProxyBypassList string `json:"proxyBypassList"`
		}
		json.Unmarshal(paramsOf(msg), &p)
		if p.ProxyServer != "" || p.ProxyBypassList != "" {
			return nil, refuse("proxyServer and proxyBypassList are not available: every request of Trawler's browsers goes through its egress proxy")
		}
	case "Page.navigate", "Target.createTarget", "Network.loadNetworkResource":
		var p struct {
			URL string `json:"url"`
		}
		json.Unmarshal(paramsOf(msg), &p)
		if why := localURL(p.URL); why != "" {
			return nil, refuse(why)
		}
	case "DOM.setFileInputFiles":
		var p struct {
			Files []string `json:"files"`
		}
		json.Unmarshal(paramsOf(msg), &p)
		for _, f := range p.Files {
			if !m.inDownloads(f) {
				return nil, refuse("DOM.setFileInputFiles: " + f + " is not a file the browser downloaded: the files of Trawler's host are not reachable")
			}
		}
	case "Input.dispatchDragEvent":
		var p struct {
			Data struct {
				Files []string `json:"files"`
			} `json:"data"`
		}
		json.Unmarshal(paramsOf(msg), &p)
		for _, f := range p.Data.Files {
			if !m.inDownloads(f) {
				return nil, refuse("Input.dispatchDragEvent: " + f + " is not a file the browser downloaded: the files of Trawler's host are not reachable")
			}
		}
	case "Browser.setDownloadBehavior", "Page.setDownloadBehavior":
		var p map[string]any
		if json.Unmarshal(paramsOf(msg), &p) != nil || p["downloadPath"] == nil {
			return msg, nil
		}
		if m.opts.DownloadDir == "" {
			return nil, refuse(h.method + ": downloadPath is not available on this browser")
		}
		// The client's directory means nothing on Trawler's host: the
		// browser's own one replaces it.
		p["downloadPath"] = m.opts.DownloadDir
		return withParams(msg, p), nil
	}
	return msg, nil
}

func refuse(msg string) *Error { return &Error{Code: refusalCode, Message: "Trawler: " + msg} }

// localURL says why u must not be opened by a client, or "".
func localURL(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil {
		return ""
	}
	scheme := strings.ToLower(p.Scheme)
	if scheme == "view-source" {
		return localURL(p.Opaque)
	}
	switch scheme {
	case "file", "filesystem":
		return scheme + ": URLs are not available: the files of Trawler's host are not reachable"
	case "chrome", "chrome-untrusted", "devtools":
		return scheme + ": URLs are not available in Trawler's browsers"
	}
	return ""
}

// inDownloads reports whether path lies in the download directory.
func (m *Mux) inDownloads(path string) bool {
	if m.opts.DownloadDir == "" || !filepath.IsAbs(path) {
		return false
	}
	rel, err := filepath.Rel(m.opts.DownloadDir, filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// withParams rebuilds a command with new params.
func withParams(msg []byte, params map[string]any) []byte {
	var full map[string]json.RawMessage
	if json.Unmarshal(msg, &full) != nil {
		return msg
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return msg
	}
	full["params"] = raw
	out, err := json.Marshal(full)
	if err != nil {
		return msg
	}
	return out
}
