package content

import (
	"net/url"
	"regexp"
	"strings"
)

// mdLinkRe matches a Markdown link or image as Transform writes them:
// [text](target) or [text](target "title").
var mdLinkRe = regexp.MustCompile(`(!?)\[([^\]]*)\]\(([^()\s]+)(?:\s+"(?:[^"\\]|\\.)*")?\)`)

// ForModel returns a page's Markdown as a language model is given it: the
// same text with what costs tokens and tells the model nothing taken out.
// Link titles go (they repeat the link's text), links to the page itself
// (#anchors, such as a heading's permalink) become their text, and links
// and images on the page's own origin are written from the root
// (/docs/x.html), so the model is told the origin once. Code blocks are
// left as they are. On python3.11-doc this is 0.23 of the raw HTML, where
// the Markdown itself is 0.29.
func ForModel(markdown, pageURL string) string {
	page, err := url.Parse(pageURL)
	if err != nil || page.Host == "" {
		return markdown
	}
	origin := page.Scheme + "://" + page.Host
	self := *page
	self.Fragment, self.RawFragment = "", ""
	selfURL := self.String()
	// Fenced code blocks are the odd parts between ``` fences.
	parts := strings.Split(markdown, "```")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = mdLinkRe.ReplaceAllStringFunc(parts[i], func(m string) string {
			s := mdLinkRe.FindStringSubmatch(m)
			bang, text, target := s[1], s[2], s[3]
			if bang == "" && (strings.HasPrefix(target, "#") || strings.HasPrefix(target, selfURL+"#")) {
				return text
			}
			if rest, ok := strings.CutPrefix(target, origin); ok && strings.HasPrefix(rest, "/") {
				target = rest
			}
			return bang + "[" + text + "](" + target + ")"
		})
	}
	return strings.Join(parts, "```")
}

// Origin is the scheme and host that ForModel wrote links from the root
// of, for the model's instructions; "" when pageURL has none.
func Origin(pageURL string) string {
	u, err := url.Parse(pageURL)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
