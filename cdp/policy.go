package cdp

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// refusalCode is the CDP error code of a command Trawler refuses: the one
// the browser itself uses for a command it does not allow.
const refusalCode = -32000

// A session's client owns its browser, but not the machine the browser
// runs on, nor Trawler's place on the network. The policy is an allowlist:
// a command goes to the browser only when its domain and method are named
// below, and then only once the parameters that could reach beyond the
// browser have been checked. Everything else (a method Chromium adds
// tomorrow included) is refused with a CDP error that starts "Trawler:".
//
// The list is what Playwright, Puppeteer and chromedp send, and the
// inspection domains their users reach for through a raw CDP session.

// check judges one command's parameters (which it may rewrite, as the
// download directory is) and returns why it is refused, or "".
type check func(m *Mux, ch *Channel, c *Command) string

// anyMethod marks a domain whose every method is allowed; its entries then
// name only the methods whose parameters are checked or that are refused.
const anyMethod = "*"

// policy maps each allowed domain to its methods, each with its check (nil
// when the method needs none).
var policy = map[string]map[string]check{
	// The page's own document, scripts and rendering: nothing in them
	// reaches beyond the page.
	"Accessibility": {anyMethod: nil}, "Animation": {anyMethod: nil}, "Audits": {anyMethod: nil},
	"CSS": {anyMethod: nil}, "Console": {anyMethod: nil}, "Debugger": {anyMethod: nil},
	"DOMDebugger": {anyMethod: nil}, "DOMSnapshot": {anyMethod: nil}, "DOMStorage": {anyMethod: nil},
	"Emulation": {anyMethod: nil}, "EventBreakpoints": {anyMethod: nil}, "HeapProfiler": {anyMethod: nil},
	"IndexedDB": {anyMethod: nil}, "CacheStorage": {anyMethod: nil}, "Inspector": {anyMethod: nil},
	"LayerTree": {anyMethod: nil}, "Log": {anyMethod: nil}, "Media": {anyMethod: nil}, "Memory": {anyMethod: nil},
	"Overlay": {anyMethod: nil}, "Performance": {anyMethod: nil}, "PerformanceTimeline": {anyMethod: nil},
	"Preload": {anyMethod: nil}, "Profiler": {anyMethod: nil}, "Runtime": {anyMethod: nil},
	"Schema": {anyMethod: nil}, "Security": {anyMethod: nil}, "ServiceWorker": {anyMethod: nil},
	"Storage": {anyMethod: nil}, "WebAudio": {anyMethod: nil}, "WebAuthn": {anyMethod: nil},
	"HeadlessExperimental": {anyMethod: nil}, "DeviceOrientation": {anyMethod: nil},
	"BackgroundService": {anyMethod: nil}, "FedCm": {anyMethod: nil}, "Autofill": {anyMethod: nil},
	// Puppeteer's waitForDevicePrompt; a headless browser has no devices.
	"DeviceAccess": {anyMethod: nil},
	"IO":           {anyMethod: nil},
	"Input": {anyMethod: nil,
		"dispatchDragEvent": func(m *Mux, _ *Channel, c *Command) string {
			data, _ := c.Params["data"].(map[string]any)
			return m.downloadedFiles(c.Method, data["files"])
		}},
	"DOM": {anyMethod: nil,
		"setFileInputFiles": func(m *Mux, _ *Channel, c *Command) string {
			return m.downloadedFiles(c.Method, c.Params["files"])
		}},
	"Network": {anyMethod: nil,
		"loadNetworkResource": webURL("url", false),
		// The deprecated interception's redirect, like Fetch's.
		"continueInterceptedRequest": optionalURL("url"),
	},
	"Fetch": {anyMethod: nil,
		// An intercepted request may be sent on to another URL.
		"continueRequest": optionalURL("url"),
	},
	"Page": {
		"enable": nil, "disable": nil, "navigate": webURL("url", false), "reload": nil, "stopLoading": nil,
		"getFrameTree": nil, "getResourceTree": nil, "getResourceContent": nil, "searchInResource": nil,
		"getNavigationHistory": nil, "navigateToHistoryEntry": nil, "resetNavigationHistory": nil,
		"addScriptToEvaluateOnNewDocument": nil, "removeScriptToEvaluateOnNewDocument": nil,
		"createIsolatedWorld": nil, "setLifecycleEventsEnabled": nil, "setDocumentContent": nil,
		"handleJavaScriptDialog": nil, "setInterceptFileChooserDialog": nil, "setBypassCSP": nil,
		"captureScreenshot": nil, "captureSnapshot": nil, "printToPDF": nil, "getLayoutMetrics": nil,
		"startScreencast": nil, "stopScreencast": nil, "screencastFrameAck": nil,
		"bringToFront": func(m *Mux, _ *Channel, c *Command) string { m.activate(c.target); return "" },
		"close":        nil, "crash": nil, "setWebLifecycleState": nil, "setFontFamilies": nil, "setFontSizes": nil,
		"getAppManifest": nil, "getInstallabilityErrors": nil, "getAppId": nil, "getOriginTrials": nil,
		"getPermissionsPolicyState": nil, "setAdBlockingEnabled": nil, "generateTestReport": nil,
		"waitForDebugger": nil, "produceCompilationCache": nil, "addCompilationCache": nil,
		"clearCompilationCache": nil, "setSPCTransactionMode": nil, "setRPHRegistrationMode": nil,
		"setPrerenderingAllowed": nil, "getAdScriptAncestry": nil, "getAnnotatedPageContent": nil,
		"setDownloadBehavior": downloadBehavior,
	},
	"Target": {
		"getTargets": nil, "getTargetInfo": nil, "setDiscoverTargets": nil, "getBrowserContexts": nil,
		"closeTarget": nil, "disposeBrowserContext": nil, "autoAttachRelated": nil,
		"activateTarget": func(m *Mux, _ *Channel, c *Command) string {
			id, _ := c.Params["targetId"].(string)
			m.activate(id)
			return ""
		},
		"createTarget": webURL("url", true),
		"createBrowserContext": func(_ *Mux, _ *Channel, c *Command) string {
			for _, k := range []string{"proxyServer", "proxyBypassList", "originsWithUniversalNetworkAccess"} {
				if _, set := c.Params[k]; set {
					return k + " is not available: every request of Trawler's browsers goes through its egress proxy, under its network guard"
				}
			}
			return ""
		},
		// Only flat sessions: in the other mode a client's messages to a
		// target travel inside Target.sendMessageToTarget strings, which
		// no policy reads.
		"attachToTarget": flat(true), "attachToBrowserTarget": nil,
		"setAutoAttach": flat(false),
		"detachFromTarget": func(m *Mux, ch *Channel, c *Command) string {
			sid, _ := c.Params["sessionId"].(string)
			if _, hasTarget := c.Params["targetId"]; hasTarget || sid == "" {
				return "Target.detachFromTarget needs the sessionId of a session this client attached"
			}
			if owner, _ := m.owner(sid); owner != ch {
				return "Target.detachFromTarget: no session " + sid + " of this client"
			}
			return ""
		},
	},
	"Browser": {
		"getVersion": nil, "getWindowForTarget": nil, "getWindowBounds": nil, "setWindowBounds": nil,
		"setContentsSize": nil, "setPermission": nil, "grantPermissions": nil, "resetPermissions": nil,
		"cancelDownload": nil, "setDownloadBehavior": downloadBehavior,
		// The session's owner ends the session instead (see
		// ErrBrowserClose).
		"close": nil,
	},
	"Tracing": {
		"getCategories": nil, "end": nil, "recordClockSyncMarker": nil, "requestMemoryDump": nil,
		"start": func(_ *Mux, _ *Channel, c *Command) string {
			if b, _ := c.Params["tracingBackend"].(string); b == "system" {
				return "Tracing.start: the system tracing backend is not available: Trawler's browsers reach no service of the host"
			}
			return ""
		},
	},
}

// refusedDomains say why a whole domain is out of reach; a domain in
// neither list gets the general answer.
var refusedDomains = map[string]string{
	"Tethering":  "Trawler's browsers open no ports on the host",
	"Extensions": "Trawler's browsers install nothing from the host",
	"PWA":        "Trawler's browsers install nothing from the host",
	"SystemInfo": "the host's processes and hardware are not the session's",
	"FileSystem": "the browser's files are not available",
}

// refusedMethods say why a method of an allowed domain is refused.
var refusedMethods = map[string]string{
	"Target.exposeDevToolsProtocol": "a page may not get a DevTools channel of its own",
	"Target.setRemoteLocations":     "the browser contacts no DevTools hosts",
	"Target.sendMessageToTarget":    "use flat sessions (attachToTarget with flatten: true)",
	"Target.openDevTools":           "Trawler's browsers open no DevTools windows",
	"Target.getDevToolsTarget":      "Trawler's browsers open no DevTools windows",
	"Browser.getBrowserCommandLine": "the browser's command line is Trawler's",
}

// vet judges a client's command before it reaches the browser: nil lets it
// go (its parameters possibly rewritten), an error is the answer the
// client gets instead.
func (m *Mux) vet(ch *Channel, c *Command) *Error {
	domain, method, ok := strings.Cut(c.Method, ".")
	if !ok || domain == "" || method == "" || strings.Contains(method, ".") {
		return refuse(fmt.Sprintf("%q is not a method: methods are named Domain.method", c.Method))
	}
	if why, ok := refusedMethods[c.Method]; ok {
		return refuse(c.Method + " is not available: " + why)
	}
	methods, ok := policy[domain]
	if !ok {
		if why, ok := refusedDomains[domain]; ok {
			return refuse(c.Method + " is not available: " + why)
		}
		return refuse("the " + domain + " domain is not available in Trawler's sessions")
	}
	chk, ok := methods[method]
	if !ok {
		if _, all := methods[anyMethod]; !all {
			return refuse(c.Method + " is not available in Trawler's sessions")
		}
	}
	if chk != nil {
		if why := chk(m, ch, c); why != "" {
			return refuse(why)
		}
	}
	return nil
}

func refuse(msg string) *Error { return &Error{Code: refusalCode, Message: "Trawler: " + msg} }

// flat requires flatten: true (always, or when autoAttach is on).
func flat(always bool) check {
	return func(_ *Mux, _ *Channel, c *Command) string {
		if on, _ := c.Params["autoAttach"].(bool); !always && !on {
			return ""
		}
		if f, _ := c.Params["flatten"].(bool); !f {
			return c.Method + " needs flatten: true: Trawler's sessions are flat"
		}
		return ""
	}
}

// webURL checks the URL in parameter key; emptyOK lets an empty or absent
// one pass (Target.createTarget opens about:blank for it).
func webURL(key string, emptyOK bool) check {
	return func(_ *Mux, _ *Channel, c *Command) string {
		v, set := c.Params[key]
		s, isString := v.(string)
		if (!set || s == "") && emptyOK {
			return ""
		}
		if !isString {
			return c.Method + ": " + key + " must be a string"
		}
		if why := webOnly(s); why != "" {
			return c.Method + ": " + why
		}
		return ""
	}
}

// optionalURL checks the URL in parameter key when there is one.
func optionalURL(key string) check {
	return func(m *Mux, ch *Channel, c *Command) string {
		if _, set := c.Params[key]; !set {
			return ""
		}
		return webURL(key, false)(m, ch, c)
	}
}

var schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*$`)

// webOnly says why u may not be opened by a client, or "": only http,
// https, data, blob (of a web or opaque origin) and about:blank URLs may,
// written plainly. A URL Trawler cannot read is refused, not passed on:
// Chromium drops tabs and newlines anywhere in a URL and control characters
// and spaces around it, and takes escapes Go refuses, so any of those could
// hide a scheme from a reader less lenient than it. (Spaces inside, common
// in data: URLs, hide nothing: a scheme holds none.)
func webOnly(u string) string {
	if strings.TrimFunc(u, func(r rune) bool { return r <= ' ' }) != u || strings.ContainsFunc(u, func(r rune) bool {
		return r < ' ' || r == 0x7f
	}) {
		return fmt.Sprintf("the URL %q has a control character, or spaces around it: write it plainly", clip(u))
	}
	scheme, rest, ok := strings.Cut(u, ":")
	if !ok || !schemeRE.MatchString(scheme) {
		return fmt.Sprintf("%q is not an absolute URL", clip(u))
	}
	switch strings.ToLower(scheme) {
	case "http", "https":
		p, err := url.Parse(u)
		if err != nil || p.Host == "" {
			return fmt.Sprintf("%q is not a URL Trawler can read", clip(u))
		}
		return ""
	case "data":
		return ""
	case "blob":
		// A blob belongs to the origin that made it: a web page's, or an
		// opaque one (blob:null/...).
		if strings.HasPrefix(rest, "null/") {
			return ""
		}
		if why := webOnly(rest); why != "" || strings.HasPrefix(strings.ToLower(rest), "blob:") ||
			strings.HasPrefix(strings.ToLower(rest), "data:") {
			return fmt.Sprintf("%q is not a blob of a web page", clip(u))
		}
		return ""
	case "about":
		if p := strings.ToLower(rest); p == "blank" || strings.HasPrefix(p, "blank#") || strings.HasPrefix(p, "blank?") {
			return ""
		}
	case "file", "filesystem":
		return strings.ToLower(scheme) + ": URLs are not available: the files of Trawler's host are not reachable"
	}
	return strings.ToLower(scheme) + ": URLs are not available in Trawler's browsers: only http, https, data, blob and about:blank"
}

func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

// downloadBehavior replaces a client's download directory, which means
// nothing on Trawler's host, by the browser's own.
func downloadBehavior(m *Mux, _ *Channel, c *Command) string {
	if _, set := c.Params["downloadPath"]; !set {
		return ""
	}
	if m.opts.DownloadDir == "" {
		return c.Method + ": downloadPath is not available on this browser"
	}
	c.Params["downloadPath"] = m.opts.DownloadDir
	return ""
}

// downloadedFiles refuses any of files (a JSON array of paths) that does
// not lie in the browser's download directory.
func (m *Mux) downloadedFiles(method string, files any) string {
	if files == nil {
		return ""
	}
	list, ok := files.([]any)
	if !ok {
		return method + ": files must be an array of paths"
	}
	for _, f := range list {
		p, _ := f.(string)
		if !m.inDownloads(p) {
			return fmt.Sprintf("%s: %q is not a file the browser downloaded: the files of Trawler's host are not reachable", method, clip(p))
		}
	}
	return ""
}

// inDownloads reports whether p lies in the download directory.
func (m *Mux) inDownloads(p string) bool {
	dir := m.opts.DownloadDir
	if dir == "" || !path.IsAbs(p) || strings.ContainsRune(p, 0) {
		return false
	}
	return strings.HasPrefix(path.Clean(p), path.Clean(dir)+"/")
}
