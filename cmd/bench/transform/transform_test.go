package transform

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMeasure(t *testing.T) {
	pages := [][]byte{
		[]byte(`<html><body><nav>Menu</nav><main><h1>Title</h1><p>Some text.</p></main></body></html>`),
		[]byte(`<p>A <a href="/x">link</a> and a table:</p><table><tr><td>a</td><td>b</td></tr></table>`),
	}
	mbps, ratio, err := Measure(pages)
	require.NoError(t, err)
	assert.Positive(t, mbps, "MiB/s")
	assert.Positive(t, ratio, "ratio")
}
