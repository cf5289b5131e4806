package main

import (
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
)

// The local test site the scrape phases scrape: an httptest.Server on
// 127.0.0.1 serving a news-style article in two builds, both with the same
// text:
//
//   - /articles/N: server-rendered, about 4.5 KB of HTML with a header, a
//     navigation bar, the article in <main>, an aside and a footer, plus a
//     stylesheet and an image (which a browser that renders the page loads);
//   - /app/N: client-rendered, an app shell (<div id="root"></div>) whose
//     script fetches /api/articles/N.json and builds the same article in
//     the page.
//
// Every page's text carries its number, so a scrape's Markdown can be
// checked against the page it asked for.

type article struct {
	N        int      `json:"n"`
	Title    string   `json:"title"`
	Byline   string   `json:"byline"`
	Date     string   `json:"date"`
	Lead     string   `json:"lead"`
	Sections []sectn  `json:"sections"`
	Points   []string `json:"points"`
	Quote    string   `json:"quote"`
	Code     string   `json:"code"`
	Related  []string `json:"related"`
}

type sectn struct {
	Heading    string   `json:"heading"`
	Paragraphs []string `json:"paragraphs"`
}

func makeArticle(n int) article {
	p := func(i int) string {
		return fmt.Sprintf("Paragraph %d of article %d. The harbour authority said on Tuesday that the new "+
			"quay would open to fishing boats in the spring, after two years of works that cost the town "+
			"more than it had planned. Skippers welcomed the news but warned that berths would be scarce "+
			"in the first months, when the old pier closes for repairs and the fleet has to share the space.", i, n)
	}
	return article{
		N:      n,
		Title:  fmt.Sprintf("Harbour quay number %d opens to the fishing fleet next spring", n),
		Byline: "Maren Holt, harbour correspondent",
		Date:   "2024-03-12",
		Lead: fmt.Sprintf("Article %d: after two years of works, the town's new deep-water quay is almost "+
			"ready, and the fleet is already arguing about who gets the first berths.", n),
		Sections: []sectn{
			{"What changes for the fleet", []string{p(1), p(2)}},
			{"Costs and delays", []string{p(3), p(4)}},
			{"What comes next", []string{p(5)}},
		},
		Points: []string{"Twelve new berths for boats up to 24 m", "Shore power at every berth",
			"An ice plant and a fish auction hall", "The old pier closes in April for repairs"},
		Quote:   "We have waited for this quay for twenty years; now we need the berths to go to the boats that fish.",
		Code:    "berths: 12\nmax_length_m: 24\nshore_power: true",
		Related: []string{"Fish prices hold steady at the winter auctions", "Coastguard drill on the north mole", "New ferry timetable from May"},
	}
}

const headHTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} | The Harbour Gazette</title>
<meta name="description" content="{{.Lead}}">
<meta property="og:title" content="{{.Title}}">
<meta property="og:type" content="article">
<link rel="stylesheet" href="/static/site.css">
</head>
<body>
<header class="masthead">
  <a class="logo" href="/">The Harbour Gazette</a>
  <form class="search" action="/search"><input name="q" placeholder="Search"><button>Go</button></form>
</header>
<nav class="sections">
  <ul>
    <li><a href="/news">News</a></li><li><a href="/harbour">Harbour</a></li><li><a href="/business">Business</a></li>
    <li><a href="/sport">Sport</a></li><li><a href="/weather">Weather</a></li><li><a href="/opinion">Opinion</a></li>
  </ul>
</nav>
`

const footHTML = `<footer class="site-footer">
  <p>&copy; 2024 The Harbour Gazette. All rights reserved.</p>
  <ul><li><a href="/about">About us</a></li><li><a href="/contact">Contact</a></li><li><a href="/privacy">Privacy</a></li><li><a href="/terms">Terms</a></li></ul>
</footer>
`

var staticPage = template.Must(template.New("static").Parse(headHTML + `<main>
<article>
  <h1>{{.Title}}</h1>
  <p class="byline">By {{.Byline}} &middot; <time datetime="{{.Date}}">{{.Date}}</time></p>
  <figure><img src="/static/quay.png" alt="The new quay at dawn" width="640" height="360"><figcaption>The new quay at dawn.</figcaption></figure>
  <p class="lead"><strong>{{.Lead}}</strong></p>
  {{range .Sections}}<h2>{{.Heading}}</h2>
  {{range .Paragraphs}}<p>{{.}}</p>
  {{end}}{{end}}
  <ul>{{range .Points}}<li>{{.}}</li>{{end}}</ul>
  <blockquote><p>{{.Quote}}</p></blockquote>
  <pre><code>{{.Code}}</code></pre>
</article>
<aside class="related">
  <h3>Related</h3>
  <ul>{{range $i, $r := .Related}}<li><a href="/articles/{{$i}}">{{$r}}</a></li>{{end}}</ul>
</aside>
</main>
` + footHTML + `</body>
</html>
`))

var appPage = template.Must(template.New("app").Parse(headHTML + `<div id="root"></div>
<noscript>You need to enable JavaScript to run this app.</noscript>
` + footHTML + `<script src="/static/app.js" data-article="{{.N}}"></script>
</body>
</html>
`))

// appJS builds the article in the page from the API's JSON.
const appJS = `(async () => {
  const n = document.currentScript.dataset.article;
  const a = await (await fetch('/api/articles/' + n + '.json')).json();
  const el = (tag, text, attrs) => { const e = document.createElement(tag); if (text) e.textContent = text; Object.assign(e, attrs || {}); return e; };
  const main = el('main'), art = el('article');
  art.append(el('h1', a.title), el('p', 'By ' + a.byline + ' · ' + a.date, {className: 'byline'}));
  const lead = el('p', '', {className: 'lead'}); lead.append(el('strong', a.lead)); art.append(lead);
  for (const s of a.sections) { art.append(el('h2', s.heading)); for (const p of s.paragraphs) art.append(el('p', p)); }
  const ul = el('ul'); for (const p of a.points) ul.append(el('li', p)); art.append(ul);
  const bq = el('blockquote'); bq.append(el('p', a.quote)); art.append(bq);
  const pre = el('pre'); pre.append(el('code', a.code)); art.append(pre);
  main.append(art);
  document.getElementById('root').append(main);
})();
`

const siteCSS = `body{font-family:Georgia,serif;margin:0;color:#222}
.masthead{display:flex;justify-content:space-between;padding:1rem 2rem;background:#0b3d5c;color:#fff}
.masthead a{color:#fff;font-size:1.6rem;text-decoration:none}
nav.sections ul{display:flex;gap:1.5rem;list-style:none;margin:0;padding:.5rem 2rem;background:#e8eef2}
main{display:grid;grid-template-columns:1fr 16rem;gap:2rem;max-width:70rem;margin:2rem auto;padding:0 2rem}
article h1{font-size:2.2rem;line-height:1.2}.byline{color:#666}.lead{font-size:1.2rem}
figure img{max-width:100%;height:auto;background:#9bb}
blockquote{border-left:4px solid #0b3d5c;margin-left:0;padding-left:1rem;font-style:italic}
.site-footer{padding:2rem;background:#222;color:#ccc}.site-footer a{color:#ccc}
`

// A 1x1 PNG.
var quayPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89" +
	"\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND\xaeB`\x82")

// startSite serves the test site on 127.0.0.1.
func startSite() *httptest.Server {
	mux := http.NewServeMux()
	num := func(w http.ResponseWriter, r *http.Request) (int, bool) {
		n, err := strconv.Atoi(strings.TrimSuffix(r.PathValue("n"), ".json"))
		if err != nil || n < 0 {
			http.NotFound(w, r)
			return 0, false
		}
		return n, true
	}
	mux.HandleFunc("GET /articles/{n}", func(w http.ResponseWriter, r *http.Request) {
		if n, ok := num(w, r); ok {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			staticPage.Execute(w, makeArticle(n))
		}
	})
	mux.HandleFunc("GET /app/{n}", func(w http.ResponseWriter, r *http.Request) {
		if n, ok := num(w, r); ok {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			appPage.Execute(w, makeArticle(n))
		}
	})
	mux.HandleFunc("GET /api/articles/{n}", func(w http.ResponseWriter, r *http.Request) {
		if n, ok := num(w, r); ok {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(makeArticle(n))
		}
	})
	static := func(ct, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			w.Header().Set("Cache-Control", "max-age=3600")
			w.Write([]byte(body))
		}
	}
	mux.HandleFunc("GET /static/site.css", static("text/css; charset=utf-8", siteCSS))
	mux.HandleFunc("GET /static/app.js", static("text/javascript; charset=utf-8", appJS))
	mux.HandleFunc("GET /static/quay.png", static("image/png", string(quayPNG)))
	return httptest.NewServer(mux) // listens on 127.0.0.1
}

// articleMarker is text only article n's body holds (its lead), which a
// scrape's Markdown must contain.
func articleMarker(n int) string {
	return fmt.Sprintf("Paragraph 5 of article %d.", n)
}
