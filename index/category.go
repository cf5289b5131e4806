package index

import (
	"net/url"
	"regexp"
	"strings"
)

// The categories a search may ask for (spec 4.6), decided for each page when
// it is indexed.
const (
	CategoryGitHub   = "github"
	CategoryResearch = "research"
	CategoryPDF      = "pdf"
)

// githubHosts are GitHub and its documentation hosts; subdomains count too
// (docs.github.com, user.github.io).
var githubHosts = []string{"github.com", "github.io", "githubusercontent.com", "githubassets.com", "github.blog",
	"gist.github.com"}

// ResearchHosts are the academic and research hosts of the research
// category; subdomains count too. Besides these, any URL that carries a DOI
// (doi.org/10.x, /doi/10.x) or an arXiv identifier is research.
var ResearchHosts = []string{
	"arxiv.org", "biorxiv.org", "medrxiv.org", "chemrxiv.org", "ssrn.com", "doi.org", "openreview.net",
	"aclanthology.org", "semanticscholar.org", "scholar.google.com", "researchgate.net", "academia.edu",
	"pubmed.ncbi.nlm.nih.gov", "ncbi.nlm.nih.gov", "europepmc.org", "ieeexplore.ieee.org", "dl.acm.org",
	"link.springer.com", "springer.com", "sciencedirect.com", "nature.com", "science.org", "cell.com",
	"jstor.org", "plos.org", "frontiersin.org", "mdpi.com", "onlinelibrary.wiley.com", "tandfonline.com",
	"sagepub.com", "iop.org", "aps.org", "pnas.org", "zenodo.org", "hal.science", "papers.nips.cc",
	"proceedings.neurips.cc", "proceedings.mlr.press", "jmlr.org", "dblp.org", "core.ac.uk", "osf.io",
	"paperswithcode.com", "inspirehep.net", "adsabs.harvard.edu",
}

var (
	doiPath   = regexp.MustCompile(`(^|/)(doi/)?10\.\d{4,9}/`)
	arxivPath = regexp.MustCompile(`(^|/)(abs|pdf)/\d{4}\.\d{4,5}(v\d+)?`)
)

// categories returns the categories a page belongs to.
func categories(u *url.URL, contentType string) []string {
	if u == nil {
		return nil
	}
	var out []string
	host := strings.ToLower(u.Hostname())
	if hostIn(host, githubHosts) {
		out = append(out, CategoryGitHub)
	}
	if hostIn(host, ResearchHosts) || doiPath.MatchString(u.Path) || arxivPath.MatchString(u.Path) {
		out = append(out, CategoryResearch)
	}
	for _, ext := range extensions(u, contentType) {
		if ext == "pdf" {
			out = append(out, CategoryPDF)
			break
		}
	}
	return out
}

// hostIn reports whether host is one of hosts or a subdomain of one.
func hostIn(host string, hosts []string) bool {
	for _, h := range hosts {
		if host == h || strings.HasSuffix(host, "."+h) {
			return true
		}
	}
	return false
}

// CategoryOf returns the first of wanted that the page at u is in, or "".
func CategoryOf(u, contentType string, wanted []string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return ""
	}
	have := categories(pu, contentType)
	for _, w := range wanted {
		for _, h := range have {
			if h == w {
				return w
			}
		}
	}
	return ""
}
