package scrape

import (
	"context"
	"mime"
	"net/url"
	"strings"

	"github.com/trawler-dev/trawler/content"
	"github.com/trawler-dev/trawler/index"
	"github.com/trawler-dev/trawler/parse"
	"github.com/trawler-dev/trawler/scrape/detect"
	"github.com/trawler-dev/trawler/store"
)

// IndexDoc turns a cached page into the search index's document, with the
// same readers a scrape uses: main-content Markdown of web pages, the parsed
// text of documents. Pages that answered an error, and bodies that are
// neither a web page, text nor a document, are not indexed.
func IndexDoc(ctx context.Context, c store.CachedPage) (index.Doc, bool, error) {
	d := index.Doc{Team: c.Team, URL: c.FinalURL, ContentType: c.ContentType, Fetched: c.CreatedAt,
		Private: c.Private}
	if d.URL == "" {
		d.URL = c.URL
	}
	if c.StatusCode < 200 || c.StatusCode > 299 || len(c.Body) == 0 {
		return d, false, nil
	}
	pg := &page{contentType: c.ContentType, finalURL: d.URL, body: c.Body}
	if kind := pageDocumentKind(pg); kind != "" {
		pd, err := parse.Parse(ctx, kind, c.Body)
		if err != nil {
			return d, false, err
		}
		d.Markdown, d.Title = pd.Markdown, pd.Title
		return d, d.Markdown != "" || d.Title != "", nil
	}
	mt, _, _ := mime.ParseMediaType(c.ContentType)
	switch {
	case detect.TextType(c.ContentType) != "":
		d.Markdown = string(c.Body)
		return d, true, nil
	case mt != "" && mt != "text/html" && mt != "application/xhtml+xml" && parse.Sniff(c.Body) != "html":
		return d, false, nil
	}
	res, err := content.Transform(c.Body, d.URL, indexOptions)
	if err != nil {
		return d, false, err
	}
	return d, fillIndexDoc(&d, res), nil
}

// indexOptions are the content options of the index's text: the main
// content, base64 images left out, with the image details and links it
// keeps.
var indexOptions = content.Options{OnlyMainContent: true, RemoveBase64Images: true,
	Want: content.Want{Markdown: true, Links: true, ImageDetails: true}}

// servesIndex reports whether a scrape with o transforms a web page as the
// index does, so that its transform can be the index's document.
func servesIndex(o *Options) bool {
	return o.OnlyMainContent && o.RemoveBase64Images && len(o.IncludeTags) == 0 && len(o.ExcludeTags) == 0 &&
		o.Has("markdown")
}

// fillIndexDoc takes a web page's text, metadata, images and link hosts
// from its transform, and reports whether the page has anything to find.
func fillIndexDoc(d *index.Doc, res *content.Result) bool {
	d.Markdown = res.Markdown
	d.Title, _ = res.Metadata["title"].(string)
	d.Description, _ = res.Metadata["description"].(string)
	d.Language, _ = res.Metadata["language"].(string)
	d.Published = res.Published
	for _, img := range res.ImageDetails {
		d.Images = append(d.Images, index.Image{URL: img.URL, Alt: img.Alt, Width: img.Width, Height: img.Height})
	}
	seen := map[string]bool{}
	for _, l := range res.Links {
		if u, err := url.Parse(l); err == nil && u.Hostname() != "" {
			h := strings.ToLower(u.Hostname())
			if !seen[h] {
				seen[h] = true
				d.LinkHosts = append(d.LinkHosts, h)
			}
		}
	}
	return strings.TrimSpace(d.Markdown) != "" || d.Title != ""
}
