package scrape

import (
	"context"

	"github.com/trawler-dev/trawler/parse"
	"github.com/trawler-dev/trawler/scrape/detect"
)

// Upload is a document sent to be parsed rather than fetched.
type Upload struct {
	// Name is the file name, which the document's sourceURL reports.
	Name string
	// Format is the format the caller checked the bytes to be (as
	// parse.Sniff names it, or "html").
	Format string
	// Data may be a memory mapping of the upload's temp file (api's
	// parseUpload), which ends when Parse returns: nothing may keep it,
	// or a slice of it, past Parse. Uploads are never cached for that
	// reason as well as their own.
	Data []byte
}

// Parse turns an uploaded document into the same Document a scrape of it
// would give, through the same transform, and keeps it retrievable by id
// unless the options ask for zero data retention. Uploads are never cached.
func (s *Service) Parse(ctx context.Context, team string, up Upload, o Options) (*Document, error) {
	o.MaxAge, o.MinAge, o.StoreInCache, o.Lockdown = 0, nil, false, false
	req := Request{Team: team, URL: up.Name, Options: o}
	ct := parse.MediaTypeOf(up.Format)
	body := up.Data
	if detect.IsHTML(ct) {
		// Read as a fetched page is; with no browser to decode what Go
		// cannot tell, the parser's reading of it as UTF-8 stands.
		if b, ok := detect.Decode(body, ct); ok {
			body = b
		}
	}
	return s.run(ctx, req, nil, func(context.Context, Request) (*page, error) {
		return &page{status: 200, finalURL: up.Name, contentType: ct, body: body, engine: "parse"}, nil
	})
}
