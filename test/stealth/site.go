// Package stealth is the test site of Trawler's stealth and settle checks
// (docs/stealth.md): a page running two open-source bot detectors from npm,
// BotD and fpscanner, as test/node's package.json pins them; a page that
// opens a dialog of each kind; and a page for each way a real page keeps
// working after its load event (a worker, an iframe, a long poll, an event
// stream, a WebSocket, an analytics beacon, a polling timer), each showing
// its content at once. The service's tests and the bench serve it on
// loopback.
package stealth

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// Patterns are the paths of the settle-pattern pages.
var Patterns = []string{"/settle/worker", "/settle/iframe", "/settle/longpoll", "/settle/events",
	"/settle/websocket", "/settle/beacon", "/settle/polling"}

// Content is the sentence every settle-pattern page shows once its script
// has run, so that a scrape taken too early is told apart.
const Content = "The content of this page is in place."

// dir is this package's directory, where detect.html is, whatever the
// working directory of the test or bench that serves it.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Handler serves the site. It fails when test/node's packages are not
// installed (scripts/install-deps.sh test installs them).
func Handler() (http.Handler, error) {
	root := dir()
	modules := filepath.Join(root, "..", "node", "node_modules")
	files := map[string]string{
		"/detect.html":     filepath.Join(root, "detect.html"),
		"/botd.esm.js":     filepath.Join(modules, "@fingerprintjs", "botd", "dist", "botd.esm.js"),
		"/fpScanner.es.js": filepath.Join(modules, "fpscanner", "dist", "fpScanner.es.js"),
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("%s is missing: scripts/install-deps.sh test installs test/node's packages (%w)", filepath.Base(f), err)
		}
	}
	mux := http.NewServeMux()
	for path, f := range files {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(f, ".js") {
				w.Header().Set("Content-Type", "text/javascript")
			}
			http.ServeFile(w, r, f)
		})
	}
	mux.HandleFunc("/dialogs", page(`<h1>Dialogs</h1><p id="p">before</p><script>
alert("hello");
const ok = confirm("sure?");
const name = prompt("name?", "Ada");
window.addEventListener("beforeunload", e => { e.preventDefault(); e.returnValue = ""; });
document.getElementById("p").textContent = "answered: " + ok + " " + name + ". " + "The page went on after its dialogs. ".repeat(8);
</script>`))
	settle(mux)
	return mux, nil
}

// page serves an HTML page of body.
func page(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><html><head><meta charset=\"utf-8\"><title>%s</title></head><body>%s</body></html>", r.URL.Path, body)
	}
}

// shown is the script that writes the page's content, as an app would.
var shown = `<main id="main"></main><script>
document.getElementById("main").innerHTML = "<h1>A page that keeps working</h1><p>` + Content + ` " +
  "It goes on talking to its server after its load event, as real pages do. ".repeat(4) + "</p>";
</script>`

// settle adds the settle-pattern pages. Each keeps something open or
// recurring for as long as it is open; none changes its content after it
// is shown.
func settle(mux *http.ServeMux) {
	// plain is their baseline: the same content, nothing kept open.
	mux.HandleFunc("/settle/plain", page(shown))
	mux.HandleFunc("/settle/worker", page(shown+`<script>
const w = new Worker("/settle/worker.js");
w.onmessage = () => {};
</script>`))
	mux.HandleFunc("/settle/worker.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `setInterval(() => { fetch("/settle/status").then(r => r.text()).then(t => postMessage(t)); }, 200);`)
	})
	mux.HandleFunc("/settle/iframe", page(shown+`<iframe src="/settle/polling" width="400" height="300"></iframe>`))
	mux.HandleFunc("/settle/longpoll", page(shown+`<script>
const poll = () => fetch("/settle/hold").then(r => r.text()).then(poll, () => setTimeout(poll, 1000));
poll();
</script>`))
	mux.HandleFunc("/settle/hold", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	})
	mux.HandleFunc("/settle/events", page(shown+`<script>
new EventSource("/settle/stream").onmessage = () => {};
</script>`))
	mux.HandleFunc("/settle/stream", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		flusher, _ := w.(http.Flusher)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := fmt.Fprintf(w, "data: %d\n\n", time.Now().UnixMilli()); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	})
	mux.HandleFunc("/settle/websocket", page(shown+`<script>
const ws = new WebSocket("ws://" + location.host + "/settle/ws");
ws.onmessage = () => {};
</script>`))
	upgrader := websocket.Upgrader{}
	mux.HandleFunc("/settle/ws", func(w http.ResponseWriter, r *http.Request) {
		c, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			if c.WriteMessage(websocket.TextMessage, []byte(time.Now().Format(time.RFC3339Nano))) != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	mux.HandleFunc("/settle/beacon", page(shown+`<script>
const ping = () => navigator.sendBeacon("/settle/collect", JSON.stringify({t: Date.now()}));
ping();
setInterval(ping, 250);
</script>`))
	mux.HandleFunc("/settle/collect", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/settle/polling", page(shown+`<script>
setInterval(() => fetch("/settle/status").then(r => r.text()), 300);
</script>`))
	mux.HandleFunc("/settle/status", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
}
