// Package testserver is the HTTP test harness shared by the api and server
// packages' tests: the real server (server.New) over a real lock.Engine over
// a real embedded etcd member (tests/testetcd), behind
// httptest.NewServer and reached through a real loopback connection.
//
// Every request goes through the OpenAPI contract check (contract.Wrap),
// and any 5xx the server writes, even to a client that already left, fails
// the test unless Server.Allow5xx is set. t.Cleanup stops the HTTP server,
// the engine and the member in reverse order. With -v the server's
// warnings go to the test log.
//
//	func TestAcquire(t *testing.T) {
//		s := testserver.Start(t)
//		r := s.Do("POST", "/v1/locks/build", `{"owner":"ci","ttl":"30s"}`)
//		l := testserver.WantJSON[api.Lock](t, r, http.StatusCreated)
//		testserver.WantKeys(t, "lock", testserver.RawObject(t, r.Body), []string{"name", "token"}, []string{testserver.AnyOther})
//		r = s.Do("DELETE", fmt.Sprintf("/v1/locks/build?token=%d", l.Token), "")
//		testserver.WantStatus(t, r, http.StatusNoContent)
//		testserver.WantStatus(t, s.Do("GET", "/v1/locks/build", ""), http.StatusNotFound)
//	}
//
// Options turn more on: WithAuth starts the server with authentication
// (requests then carry a token through SendAs and DoAs), WithLog hands the
// whole log to the test:
//
//	var logs testserver.LogBuffer
//	s := testserver.Start(t, testserver.WithAuth(t, "write "+writeToken+"\n"), testserver.WithLog(&logs))
//	r := s.DoAs(writeToken, "POST", "/v1/locks/build", `{"owner":"ci"}`)
//
// The package is for tests only; no non-test code may import it.
package testserver
