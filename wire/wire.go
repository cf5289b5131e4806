// Package wire owns the HTTP wire format every surface of Trawler shares
// (the REST API, the CDP proxy, the live view, the service's own answers):
// the error body of every non-2xx answer, and the public base URL of a
// request, from which the absolute URLs handed to clients are built.
package wire

import (
	"encoding/json"
	"net/http"
)

// ErrorBody is the body of every non-2xx answer, on every path:
// {"success":false,"error":"<sentence>","code":"<CODE>","details":…}.
// The fields are in the order the keys have always been written in
// (sorted), so that every surface writes the same bytes.
type ErrorBody struct {
	// Code is the machine-readable code, such as NOT_FOUND.
	Code string `json:"code"`
	// Details, when set, says more: the problem of each field of a 400.
	Details any `json:"details,omitempty"`
	// Message is the user-facing sentence; internal causes stay in the log.
	Message string `json:"error"`
	// Success is always false.
	Success bool `json:"success"`
}

// Write answers with status and the body.
func (b ErrorBody) Write(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(b)
}

// WriteError answers with status and an error body without details.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	ErrorBody{Code: code, Message: message}.Write(w, status)
}
