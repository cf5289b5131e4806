package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// apiError is one error answer in OpenAI's shape:
// {"error":{"message":...,"type":...,"param":...,"code":...}}, where param and
// code are null when empty.
type apiError struct {
	status  int
	message string
	typ     string
	param   string
	code    string
	// llama, when set, is the whole body instead: llama.cpp's server words
	// its errors {"error":{"code":400,"message":...,"type":...}}.
	llama bool
}

func (e *apiError) body() []byte {
	if e.llama {
		out, _ := json.Marshal(struct {
			Error llamaError `json:"error"`
		}{llamaError{Code: e.status, Message: e.message, Type: e.typ}})
		return out
	}
	out, _ := json.Marshal(struct {
		Error openAIError `json:"error"`
	}{openAIError{Message: e.message, Type: e.typ, Param: nullable(e.param), Code: nullable(e.code)}})
	return out
}

// openAIError and llamaError keep their members in their servers' order.
type openAIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

type llamaError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Type    string `json:"type"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// invalid is a 400 invalid_request_error.
func invalid(param, code, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error",
		param: param, code: code, message: fmt.Sprintf(format, args...)}
}

// The messages below are OpenAI's own wording wherever it is known (from
// answers its API gave): clients match on them, and users paste them into
// issues, so a fake that words them differently would let a client's error
// handling pass here and miss in production. The few OpenAI has no known
// wording for (a missing Content-Type, stream: true, a bare 502 or 504)
// are this server's own, in OpenAI's style.

// Messages that OpenAI gives in several places.
const (
	msgParse = "We could not parse the JSON body of your request. (HINT: This likely means " +
		"you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, " +
		"but what was sent was not valid JSON. If you have trouble figuring out how to fix this, " +
		"please contact us through our help center at help.openai.com.)"
	msgNoKey = "You didn't provide an API key. You need to provide your API key in an " +
		"Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the " +
		"password field (with blank username) if you're accessing the API from your browser and " +
		"are prompted for a username and password. You can obtain an API key from " +
		"https://platform.openai.com/account/api-keys."
	msgJSONWord = "'messages' must contain the word 'json' in some form, to use 'response_format' " +
		"of type 'json_object'."
	msgNoModel = "you must provide a model parameter"
)

func errMissing(param string) *apiError {
	return invalid(param, "missing_required_parameter", "Missing required parameter: '%s'.", param)
}

func errType(param, want string, got value) *apiError {
	return invalid(param, "invalid_type", "Invalid type for '%s': expected %s, but got %s instead.",
		param, want, kindOf(got))
}

// errValue is OpenAI's answer to a value outside an enumeration; supported
// is already quoted and joined ("'a', 'b', and 'c'").
func errValue(param, got, supported string) *apiError {
	return invalid(param, "invalid_value", "Invalid value: '%s'. Supported values are: %s.", got, supported)
}

func errIntegerBelow(param string, minimum int, got json.Number) *apiError {
	return invalid(param, "integer_below_min_value",
		"Invalid '%s': integer below minimum value. Expected a value >= %d, but got %s instead.",
		param, minimum, got)
}

func errNotFound(model string) *apiError {
	return &apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "model_not_found",
		message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model)}
}

// errWrongKey masks the key as OpenAI does, showing only its ends, so
// that a wrong key in a test log is recognisable without being spelled out.
func errWrongKey(key string) *apiError {
	masked := strings.Repeat("*", len(key))
	if len(key) > 8 {
		masked = key[:3] + strings.Repeat("*", len(key)-7) + key[len(key)-4:]
	}
	return &apiError{status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key",
		message: fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at "+
			"https://platform.openai.com/account/api-keys.", masked)}
}

// errForStatus is the error a Reply with this status and no Body answers:
// what OpenAI sends with that status, message replaced when the reply has
// one.
func errForStatus(status int, model, message, retryAfter string) *apiError {
	e := &apiError{status: status}
	switch {
	case status == http.StatusBadRequest:
		e.typ, e.message = "invalid_request_error", "Invalid request."
	case status == http.StatusUnauthorized:
		e = errWrongKey("sk-modeltest-revoked-key")
	case status == http.StatusForbidden:
		e.typ, e.code, e.message = "request_forbidden", "unsupported_country_region_territory",
			"Country, region, or territory not supported"
	case status == http.StatusNotFound:
		e = errNotFound(model)
	case status == http.StatusTooManyRequests:
		wait := "20s"
		if retryAfter != "" {
			wait = retryAfter + "s"
		}
		e.typ, e.code = "requests", "rate_limit_exceeded"
		e.message = fmt.Sprintf("Rate limit reached for %s in organization org-modeltest on requests "+
			"per min (RPM): Limit 3, Used 3, Requested 1. Please try again in %s. Visit "+
			"https://platform.openai.com/account/rate-limits to learn more.", model, wait)
	case status == http.StatusInternalServerError:
		e.typ, e.message = "server_error",
			"The server had an error while processing your request. Sorry about that!"
	case status == http.StatusBadGateway:
		e.typ, e.message = "server_error", "Bad gateway."
	case status == http.StatusServiceUnavailable:
		e.typ, e.message = "server_error", "The server is overloaded or not ready yet."
	case status == http.StatusGatewayTimeout:
		e.typ, e.message = "server_error", "Gateway timeout."
	case status >= 500:
		e.typ, e.message = "server_error", fmt.Sprintf("The server answered %d %s.", status, http.StatusText(status))
	default:
		e.typ, e.message = "invalid_request_error", fmt.Sprintf("The request failed: %d %s.", status, http.StatusText(status))
	}
	e.status = status
	if message != "" {
		e.message = message
	}
	return e
}
