package cdp

import (
	"context"
	"strings"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
)

// Intercept pauses the session's requests that match patterns (the Fetch
// domain): each arrives as a fetch.RequestPaused event, and waits for one
// of Paused's answers.
func Intercept(ctx context.Context, s Session, patterns ...*fetch.RequestPattern) error {
	return Run(ctx, s, fetch.Enable, fetch.EnableParams{Patterns: patterns})
}

// RequestsAndDocuments pauses every request, and the response of every
// document (whose body a tab may take, or refuse, before it renders).
var RequestsAndDocuments = []*fetch.RequestPattern{{URLPattern: "*", RequestStage: fetch.RequestStageRequest},
	{URLPattern: "*", ResourceType: network.ResourceTypeDocument, RequestStage: fetch.RequestStageResponse}}

// EnableNetwork turns the Network domain on for its events, keeping no
// copies of response bodies for Network.getResponseBody: nothing here
// calls it (the Fetch domain hands over the bodies that are taken), and
// the copies cost the browser memory for every response.
func EnableNetwork(ctx context.Context, s Session) error {
	var none int64
	return Run(ctx, s, network.Enable, network.EnableParams{MaxTotalBufferSize: &none, MaxResourceBufferSize: &none})
}

// Paused is one request paused by a session's interception, at its
// request stage or at its response's.
type Paused struct {
	Session Session
	ID      fetch.RequestID
}

// PausedOf is the paused request of the event e, on s.
func PausedOf(s Session, e *fetch.EventRequestPaused) Paused {
	return Paused{Session: s, ID: e.RequestID}
}

// Continue lets the request (or its response) go on unchanged.
func (p Paused) Continue(ctx context.Context) error {
	return Run(ctx, p.Session, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: p.ID})
}

// Fail fails the request, as the page sees a network error of reason.
func (p Paused) Fail(ctx context.Context, reason network.ErrorReason) error {
	return Run(ctx, p.Session, fetch.FailRequest, fetch.FailRequestParams{RequestID: p.ID, ErrorReason: reason})
}

// Fulfil answers the request with status, a Content-Type and body.
func (p Paused) Fulfil(ctx context.Context, status int, contentType string, body []byte) error {
	return Run(ctx, p.Session, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: p.ID, ResponseCode: int64(status),
		ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: contentType}}, Body: body})
}

// Body is the body of the paused response, decoded.
func (p Paused) Body(ctx context.Context) ([]byte, error) {
	res, err := Do(ctx, p.Session, fetch.GetResponseBody, fetch.GetResponseBodyParams{RequestID: p.ID})
	return res.Body, err
}

// ResponseHeader is the value of the paused response's header name, or "".
func ResponseHeader(e *fetch.EventRequestPaused, name string) string {
	for _, h := range e.ResponseHeaders {
		if h != nil && strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}
