// Package contenttest generates the pages that test how Trawler converts
// HTML past the parser's limits, for the tests of content and of the
// service alike.
package contenttest

import (
	"bytes"
	"fmt"
	"strings"
)

// NestedDivs is a page of n nested divs, each with its own line of text
// ("level I text") before the next div opens.
func NestedDivs(n int) []byte {
	var b bytes.Buffer
	b.WriteString("<!doctype html><html><head><title>Deep</title></head><body><main>\n")
	for i := range n {
		fmt.Fprintf(&b, "<div class=\"level\">level %d text\n", i)
	}
	b.WriteString(strings.Repeat("</div>", n))
	b.WriteString("\n<p>after the divs</p></main></body></html>\n")
	return b.Bytes()
}

// WideTable is a page holding one table of rows × cols cells, "rRcC" each.
func WideTable(rows, cols int) []byte {
	var b bytes.Buffer
	b.WriteString("<!doctype html><html><head><title>Wide</title></head><body><main><table>\n")
	for r := range rows {
		b.WriteString("<tr>")
		for c := range cols {
			fmt.Fprintf(&b, "<td>r%dc%d</td>", r, c)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table></main></body></html>\n")
	return b.Bytes()
}
