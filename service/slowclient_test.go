package service_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// slowAnswer is what a client that sends its body slowly got: the answer,
// and how long after its headers were sent the answer came and the server
// closed the connection.
type slowAnswer struct {
	resp     *http.Response
	body     []byte
	answered time.Duration
	closed   time.Duration
	err      error
}

// sendSlowly sends head at once, then body a piece at a time, one every
// interval, until the server answers or closes; it reads the answer and
// waits for the server to close the connection.
func sendSlowly(addr, head string, body []string, interval time.Duration) slowAnswer {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return slowAnswer{err: err}
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	began := time.Now()
	if _, err := io.WriteString(conn, head); err != nil {
		return slowAnswer{err: err}
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for _, piece := range body {
			select {
			case <-stop:
				return
			case <-time.After(interval):
			}
			if _, err := io.WriteString(conn, piece); err != nil {
				return
			}
		}
	}()
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return slowAnswer{err: fmt.Errorf("reading the answer: %w", err)}
	}
	out := slowAnswer{resp: resp, answered: time.Since(began)}
	if out.body, err = io.ReadAll(resp.Body); err != nil {
		return slowAnswer{err: fmt.Errorf("reading the answer's body: %w", err)}
	}
	// The server closing is EOF, or a reset when the client's last bytes
	// were still unread; a deadline is the connection held open.
	_, err = io.Copy(io.Discard, br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return slowAnswer{err: errors.New("the server never closed the connection")}
	}
	out.closed = time.Since(began)
	return out
}

// code is the API error code of an answer.
func (a slowAnswer) code() string {
	var e struct{ Code string }
	json.Unmarshal(a.body, &e)
	return e.Code
}

// trickle is n one-byte pieces of a body.
func trickle(n int) []string {
	return strings.Split(strings.Repeat("a", n), "")
}

// openFiles is how many descriptors the process has open.
func openFiles() int {
	entries, _ := os.ReadDir("/proc/self/fd")
	return len(entries)
}

// raiseOpenFiles makes room for n more descriptors, for the test only.
func raiseOpenFiles(t *testing.T, n uint64) {
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	need := uint64(openFiles()) + n
	if lim.Cur >= need {
		return
	}
	if lim.Max < need {
		t.Skipf("the open-file limit is %d; the test needs %d", lim.Max, need)
	}
	old := lim
	lim.Cur = need
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

// TestSlowBodies: a client that sends its request body slowly holds
// nothing for long. Without an API key it is answered 401 before its body
// is read, and its connection closed, however many there are, while a
// client with a key is served as usual; with a key, its body is cut off
// past 10 s at under 16 KB a second, with a 408, whether its body is JSON
// with a Content-Length, chunked, or a multipart parse upload.
func TestSlowBodies(t *testing.T) {
	ts := start(t, map[string]string{"TRAWLER_WARM_BROWSERS": "0", "TRAWLER_MAX_CONNS_PER_ADDRESS": "1000"})
	u, _ := url.Parse(ts.URL)
	addr := u.Host
	jsonHead := func(path, key string) string {
		auth := ""
		if key != "" {
			auth = "Authorization: Bearer " + key + "\r\n"
		}
		return "POST " + path + " HTTP/1.1\r\nHost: x\r\n" + auth + "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
	}

	t.Run("without a key", func(t *testing.T) {
		t.Parallel()
		const clients = 500
		raiseOpenFiles(t, 3*clients)
		before := openFiles()
		heads := []string{jsonHead("/v2/scrape", ""), jsonHead("/v2/scrape", "not-a-key-of-anyone"),
			"POST /v2/parse HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n--b\r\n"}
		answers := make([]slowAnswer, clients)
		// The descriptors of the process (both ends of every connection)
		// are sampled while the clients run.
		peak, sampled := 0, make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				peak = max(peak, openFiles())
				select {
				case <-done:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
		var wg sync.WaitGroup
		for i := range clients {
			wg.Go(func() { answers[i] = sendSlowly(addr, heads[i%len(heads)], trickle(60), time.Second) })
		}
		// A client with a key is served meanwhile: once the slow clients
		// are under way (no count of the server's says when all are).
		time.Sleep(200 * time.Millisecond)
		began := time.Now()
		r := ts.do("GET", "/v2/team/credit-usage", keyAcme, nil)
		require.Equal(t, 200, r.Status, "%s", r.Raw)
		r = ts.do("POST", "/v2/support/docs-search", keyAcme, map[string]any{"question": "how do I set scrape options?"})
		require.Equal(t, 200, r.Status, "%s", r.Raw)
		served := time.Since(began)
		wg.Wait()
		close(done)
		<-sampled
		var slowest time.Duration
		for i, a := range answers {
			require.NoError(t, a.err, "client %d", i)
			require.Equal(t, 401, a.resp.StatusCode, "client %d: %s", i, a.body)
			require.Equal(t, "UNAUTHORIZED", a.code(), "client %d: %s", i, a.body)
			require.True(t, a.resp.Close, "client %d: Connection: close", i)
			require.Less(t, a.answered, 3*time.Second, "client %d answered late", i)
			slowest = max(slowest, a.closed)
		}
		require.Less(t, slowest, 5*time.Second, "a connection was held open")
		t.Logf("%d slow bodies without a key: all answered 401, the last connection closed %s after its headers; "+
			"descriptors %d before, %d at the peak (both ends), %d after; a client with a key served in %s",
			clients, slowest.Round(time.Millisecond), before, peak, openFiles(), served.Round(time.Millisecond))
	})

	cutOff := func(t *testing.T, head string, body []string) {
		t.Helper()
		a := sendSlowly(addr, head, body, time.Second)
		require.NoError(t, a.err)
		require.Equal(t, 408, a.resp.StatusCode, "%s", a.body)
		require.Equal(t, "REQUEST_TIMEOUT", a.code(), "%s", a.body)
		require.Contains(t, string(a.body), "slower than 16 KB a second")
		require.True(t, a.resp.Close, "Connection: close")
		// 10 s of grace, and a quarter of a second for the bytes sent.
		require.GreaterOrEqual(t, a.answered, 10*time.Second, "cut off before the grace was spent")
		require.Less(t, a.answered, 13*time.Second, "not cut off at its deadline")
		require.Less(t, a.closed-a.answered, 2*time.Second, "the connection was held open after the answer")
	}
	t.Run("JSON with a key", func(t *testing.T) {
		t.Parallel()
		cutOff(t, jsonHead("/v2/scrape", keyAcme), trickle(60))
	})
	t.Run("chunked JSON with a key", func(t *testing.T) {
		t.Parallel()
		head := "POST /v2/scrape HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + keyAcme +
			"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n"
		body := make([]string, 60)
		for i := range body {
			body[i] = "1\r\na\r\n"
		}
		cutOff(t, head, body)
	})
	t.Run("parse upload with a key", func(t *testing.T) {
		t.Parallel()
		head := "POST /v2/parse HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + keyAcme +
			"\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n" +
			"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.html\"\r\nContent-Type: text/html\r\n\r\n<html><body>"
		cutOff(t, head, trickle(60))
	})
	t.Run("fast bodies on a kept-alive connection", func(t *testing.T) {
		t.Parallel()
		// A body read to its end leaves the connection as it was: the next
		// request reuses it.
		client := &http.Client{Transport: &http.Transport{}}
		defer client.CloseIdleConnections()
		for i := range 2 {
			var reused bool
			trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }}
			req, _ := http.NewRequest("POST", ts.URL+"/v2/support/docs-search", strings.NewReader(`{"question": "how do I set scrape options?"}`))
			req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
			req.Header.Set("Authorization", "Bearer "+keyAcme)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, 200, resp.StatusCode, "%s", body)
			require.False(t, resp.Close, "request %d: Connection: close", i+1)
			require.Equal(t, i == 1, reused, "request %d: connection reused", i+1)
		}
	})
}

// TestHeaderLimit: a request's line and headers may take 1 MB together,
// not a byte more.
func TestHeaderLimit(t *testing.T) {
	ts := start(t, map[string]string{"TRAWLER_WARM_BROWSERS": "0"})
	u, _ := url.Parse(ts.URL)
	request := func(size int) string {
		const frame = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: \r\n\r\n"
		return strings.Replace(frame, "X-Pad: ", "X-Pad: "+strings.Repeat("p", size-len(frame)), 1)
	}
	resp, body, err := rawRequest(u.Host, request(1<<20))
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, "1 MB exactly: %s", body)
	resp, body, err = rawRequest(u.Host, request(1<<20+1))
	require.NoError(t, err)
	require.NoError(t, checkErrorAnswer(resp.StatusCode, resp.Header, body, 431, "HEADERS_TOO_LARGE"), "1 MB and a byte")
}

// TestConnectionsPerAddress: past TRAWLER_MAX_CONNS_PER_ADDRESS open
// connections from one address, the next is answered 429 in the API's
// shape and closed; once one closes, a new one is served.
func TestConnectionsPerAddress(t *testing.T) {
	const most = 3
	ts := start(t, map[string]string{"TRAWLER_WARM_BROWSERS": "0", "TRAWLER_MAX_CONNS_PER_ADDRESS": fmt.Sprint(most)})
	u, _ := url.Parse(ts.URL)
	const health = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
	// ask sends a health check on conn and reads the answer.
	ask := func(conn net.Conn, br *bufio.Reader) (*http.Response, []byte, error) {
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(conn, health); err != nil {
			return nil, nil, err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return nil, nil, err
		}
		body, err := io.ReadAll(resp.Body)
		return resp, body, err
	}
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for i := range most {
		conn, err := net.Dial("tcp", u.Host)
		require.NoError(t, err)
		open = append(open, conn)
		resp, body, err := ask(conn, bufio.NewReader(conn))
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode, "connection %d: %s", i+1, body)
	}

	extra, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer extra.Close()
	br := bufio.NewReader(extra)
	resp, body, err := ask(extra, br)
	require.NoError(t, err)
	require.NoError(t, checkErrorAnswer(resp.StatusCode, resp.Header, body, 429, "RATE_LIMITED"))
	require.Contains(t, string(body), fmt.Sprintf("at most %d", most))
	require.Equal(t, "5", resp.Header.Get("Retry-After"))
	require.True(t, resp.Close, "Connection: close")
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the refused connection is closed")

	// The open connections are still served.
	resp, _, err = ask(open[1], bufio.NewReader(open[1]))
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)

	// One closes: its place is given back, once.
	open[0].Close()
	open = open[1:]
	require.Eventually(t, func() bool {
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			return false
		}
		resp, _, err := ask(conn, bufio.NewReader(conn))
		if err != nil || resp.StatusCode != 200 {
			conn.Close()
			return false
		}
		open = append(open, conn)
		return true
	}, 5*time.Second, 50*time.Millisecond, "no connection served after one closed")
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	resp, _, err = ask(conn, bufio.NewReader(conn))
	require.NoError(t, err)
	require.Equal(t, 429, resp.StatusCode, "a closed connection was given back twice")
}

// TestLocalModeBodiesWithoutKey: in local mode a request with a body needs
// no key, as every other does: refusing bodies without one early applies
// only where keys are configured.
func TestLocalModeBodiesWithoutKey(t *testing.T) {
	t.Parallel()
	ts := start(t, map[string]string{"TRAWLER_API_KEYS": "", "TRAWLER_WARM_BROWSERS": "0"})
	for _, key := range []string{"", "anything"} {
		r := ts.do("POST", "/v2/support/docs-search", key, map[string]any{"question": "how do I set scrape options?"})
		require.Equal(t, 200, r.Status, "local mode with key %q: %s", key, r.Raw)
	}
}
