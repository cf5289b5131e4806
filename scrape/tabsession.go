package scrape

import (
	"github.com/chromedp/cdproto/target"

	"github.com/trawler-dev/trawler/cdp"
)

// session is the tab's CDP session, for the packages that drive a tab
// through the typed layer (branding, media).
func (t *tab) session() cdp.Session {
	return cdp.Session{Conn: t.conn, ID: t.sid, TargetID: target.ID(t.targetID)}
}
