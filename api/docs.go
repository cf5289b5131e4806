package api

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/trawler-dev/trawler/docsearch"
	"github.com/trawler-dev/trawler/model"
)

// docsSearchRequest is spec 4.10 as it arrives.
type docsSearchRequest struct {
	Question *string `json:"question"`
	clientTags
}

// maxDocsQuestion bounds a docs question, in characters after trimming.
const maxDocsQuestion = 2000

// Sections of the documentation an answer is made from: a model reads the
// best docsPromptSections; without one the answer quotes the best section
// and cites docsEvidence.
const (
	docsPromptSections = 4
	docsEvidence       = 3
)

// docsModelTimeout bounds the model's answer to a docs question.
const docsModelTimeout = 2 * time.Minute

// docsEvidenceEntry is one entry of a docs answer's evidence.
type docsEvidenceEntry struct {
	PathOrURL string `json:"pathOrUrl"`
	Reason    string `json:"reason"`
}

// docsSearch is POST /v2/support/docs-search: a question answered from
// Trawler's own documentation. With a language model, the model writes the
// answer from the best sections only and says which support it; without
// one, the answer is the best section's sentences that hold the question's
// words. The search is not a job: it writes no activity entry (the
// model's tokens are recorded under the requestId, as every call's are).
func (a *API) docsSearch(c *fiber.Ctx) error {
	start := time.Now()
	var req docsSearchRequest
	if err := decodeBody(c, &req); err != nil {
		return err
	}
	question, err := checkDocsQuestion(req.Question)
	if err != nil {
		return err
	}
	if a.Docs == nil {
		return &Error{Status: fiber.StatusServiceUnavailable, Code: "UNAVAILABLE", Message: "the documentation index is not available on this server"}
	}
	id := uuid.NewString()
	k := docsEvidence
	if a.Model != nil {
		k = docsPromptSections
	}
	hits, err := a.Docs.Search(question, k)
	if err != nil {
		return err
	}
	answer := "The documentation has nothing on this question."
	var usage model.Usage
	used := hits
	switch {
	case len(hits) == 0:
		// Nothing to ground an answer on: no model call either.
	case a.Model != nil:
		ctx, cancel := context.WithTimeout(requestContext(c), docsModelTimeout)
		defer cancel()
		// Four pieces of about 1,500 characters fit any context; a small
		// one loses the last sections rather than failing.
		prompt, _ := model.Fit(docsearch.Prompt(question, hits), a.Model.InputBudget(model.EstimateTokens(docsearch.System)))
		ans, err := a.Model.Complete(ctx, model.Call{Team: teamOf(c).ID, Request: id, Purpose: "docs",
			System: docsearch.System, User: prompt})
		if err != nil {
			return modelFailure("question", err)
		}
		answer, usage = strings.TrimSpace(ans.Text), ans.Usage
		used = docsearch.Cited(answer, hits)
	default:
		answer = a.Docs.Excerpt(question, hits[0])
	}
	evidence := make([]docsEvidenceEntry, len(used))
	for i, h := range used {
		evidence[i] = docsEvidenceEntry{PathOrURL: h.Ref(), Reason: h.Reason()}
	}
	return c.JSON(fiber.Map{"success": true, "requestId": id, "answer": answer, "evidence": evidence,
		"usage": fiber.Map{"inputTokens": usage.InputTokens, "outputTokens": usage.OutputTokens,
			"totalTokens": usage.InputTokens + usage.OutputTokens},
		"durationMs": time.Since(start).Milliseconds()})
}

// checkDocsQuestion returns the question trimmed: required, 1 to 2000
// characters.
func checkDocsQuestion(q *string) (string, error) {
	if q == nil {
		return "", badRequest(fieldError("question", "question is required: the question to answer from the documentation"))
	}
	s := strings.TrimSpace(*q)
	switch n := utf8.RuneCountInString(s); {
	case n == 0:
		return "", badRequest(fieldError("question", "question must not be empty"))
	case n > maxDocsQuestion:
		return "", badRequest(fieldError("question", "question must be at most %d characters, got %d", maxDocsQuestion, n))
	}
	return s, nil
}
