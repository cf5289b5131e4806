package scrape

import (
	"context"
	"errors"
	"log/slog"
)

// Branding is the branding member of a document (spec 2.2).
type Branding struct{}

// branding reads the rendered page's brand (being built).
func (t *tab) branding(ctx context.Context, log *slog.Logger) (*Branding, error) {
	return nil, errors.New("being built")
}
