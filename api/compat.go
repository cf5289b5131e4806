package api

import (
	"encoding/json"
	"slices"
)

// Firecrawl's API grows fields for services of its cloud that a
// self-hosted server has no counterpart for. Its clients send some of them
// on every call (firecrawl-mcp's search always sends domainTools and
// toolDetail), so such a field is accepted, checked, and named in the
// answer's warning when it asked for something this server cannot give;
// a key nobody defines is still refused.

// alexandriaOptions are the fields of Firecrawl's Alexandria catalogue (its
// data providers, matched to a page's domain) on a scrape or a search.
type alexandriaOptions struct {
	DomainTools *bool   `json:"domainTools"`
	ToolDetail  *string `json:"toolDetail"`
}

// toolDetails are the values toolDetail takes.
var toolDetails = []string{"compact", "summary", "full"}

// check records what is wrong with the fields; prefix names the object
// they live in.
func (o *alexandriaOptions) check(problems *[]FieldProblem, prefix string) {
	if o.ToolDetail != nil && !slices.Contains(toolDetails, *o.ToolDetail) {
		*problems = append(*problems, fieldError(prefix+"toolDetail", "%stoolDetail must be compact, summary or full, got %q",
			prefix, *o.ToolDetail))
	}
}

// warning says what the fields asked for that is not served, or "".
// toolDetail only shapes the tools that domainTools would list.
func (o *alexandriaOptions) warning() string {
	if o.DomainTools != nil && *o.DomainTools {
		return "domainTools: this server has no Alexandria catalogue, so no domain-matched tools are listed"
	}
	return ""
}

// threatProtection refuses a request that overrides Firecrawl's Threat
// Protection (URL scanning by Google Web Risk, an enterprise feature
// Firecrawl refuses for a team without it): this server has none to
// override, and its network guard applies to every request instead.
func threatProtection(problems *[]FieldProblem, prefix string, raw json.RawMessage) {
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	*problems = append(*problems, fieldError(prefix+"threatProtection", "%sthreatProtection is not available on this server: "+
		"it has no Threat Protection to override (its network guard applies to every request)", prefix))
}
