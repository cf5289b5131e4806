package service_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trawler-dev/trawler/model/modeltest"
	"github.com/trawler-dev/trawler/test/pgdb"
	"github.com/trawler-dev/trawler/test/polltest"
)

// A team's concurrency limit counts its browsers on every node sharing the
// database, at each request: with a limit of one, a session on node A holds
// node B's requests for the team back (429 after the queue wait) but not
// another team's, and a request waiting on node B gets its browser as soon
// as node A's session ends. make test-postgres runs it.
func TestTeamLimitHoldsAcrossNodes(t *testing.T) {
	if !pgdb.Enabled() {
		t.Skip(pgdb.Env + " is not set: make test-postgres runs this test on a throwaway PostgreSQL")
	}
	const wait = 3 * time.Second
	env := map[string]string{"TRAWLER_DATABASE_URL": pgdb.For(t, "shared"), "TRAWLER_NODE_LEASE": "3s",
		"TRAWLER_TEAM_CONCURRENCY": "1", "TRAWLER_QUEUE_WAIT": wait.String(), "TRAWLER_WARM_BROWSERS": "0"}
	a, b := start(t, env), start(t, env)
	held := a.create(keyAcme, nil)
	refused := b.do("POST", "/v2/browser", keyAcme, map[string]any{})
	require.Equal(t, 429, refused.Status, "POST /v2/browser on node B at once: %s", refused.Raw)
	assert.Contains(t, string(refused.Raw), "team concurrency limit of 1", "the refusal")
	other := b.do("POST", "/v2/browser", keyGlobex, map[string]any{})
	assert.Equal(t, 200, other.Status, "another team's session on node B: %s", other.Raw)

	got := make(chan response, 1)
	go func() { got <- b.do("POST", "/v2/browser", keyAcme, map[string]any{}) }()
	time.Sleep(wait / 3) // node B's request waits a while before the session ends
	ended := time.Now()
	require.Equal(t, 200, a.do("DELETE", "/v2/browser/"+held.str("id"), keyAcme, nil).Status)
	r := <-got
	require.Equal(t, 200, r.Status, "node B's waiting request, once node A's session ended: %s", r.Raw)
	after := time.Since(ended)
	t.Logf("node B's waiting request was answered %s after node A's session ended", after.Round(time.Millisecond))
	assert.Less(t, after, wait/2, "node B's request answered soon after node A's session ended")
	again := a.do("POST", "/v2/browser", keyAcme, map[string]any{})
	assert.Equal(t, 429, again.Status, "node A, while node B holds acme's browser: %s", again.Raw)
}

// An extract whose node stops while its pages are being scraped moves to
// another node sharing the database once the node's lease has run out,
// with its batch: the other node finishes the batch, asks the model and
// answers with the result. make test-postgres runs it.
func TestExtractMovesToAnotherNode(t *testing.T) {
	if !pgdb.Enabled() {
		t.Skip(pgdb.Env + " is not set: make test-postgres runs this test on a throwaway PostgreSQL")
	}
	shop := newShopSite(t)
	m := modeltest.Start(t)
	m.Respond(func(modeltest.Request) modeltest.Reply { return modeltest.Reply{Content: productsAnswer} })
	const lease = 3 * time.Second
	db := pgdb.For(t, "shared")
	a, stopA := startOwned(t, modelEnv(m, map[string]string{"TRAWLER_DATA_DIR": t.TempDir(), "TRAWLER_DATABASE_URL": db,
		"TRAWLER_NODE_LEASE": lease.String()}))
	b, _ := startOwned(t, modelEnv(m, map[string]string{"TRAWLER_DATA_DIR": t.TempDir(), "TRAWLER_DATABASE_URL": db,
		"TRAWLER_NODE_LEASE": lease.String()}))
	id, _ := a.startExtract(keyAcme, map[string]any{"urls": []string{shop.URL + "/products/alpha", shop.URL + "/slow"},
		"schema": productsSchema})
	polltest.Until(t, time.Minute, "the slow page to be asked for", func() bool { return shop.count("/slow") > 0 })
	stopA() // node A stops renewing its leases
	require.Empty(t, m.Requests(), "the model was not called before node A stopped")
	shop.letGo()

	st := b.waitExtract(keyAcme, id)
	require.Equal(t, "completed", st.str("status"), "%s", st.Raw)
	assert.Equal(t, decoded(t, productsAnswer), st.Body["data"])
	assert.Contains(t, lastRequest(t, m).User(), "The **Slow** widget costs 30 euros.", "%s", st.Raw)
	assert.Len(t, m.Requests(), 1, "model calls")
	assertOneBatch(t, b)
}
