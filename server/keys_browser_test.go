package server_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/tests/testserver"
)

var keyPath = regexp.MustCompile(`^/v1/kv/.+$`)

// keyRow is the row of key, or null; keyValue the text of its value.
func keyRow(key string) string {
	return fmt.Sprintf(`document.querySelector('[data-testid="key-row"][data-key=%q]')`, key)
}

func keyValue(key string) string { return rowCell(keyRow(key), "key-value") }

// folderRow is the row of the folder name under the path shown, or null.
func folderRow(name string) string {
	return fmt.Sprintf(`(document.querySelector('[data-testid="key-folder"][data-folder=%q]') || {closest: () => null}).closest("tr")`, name)
}

// putKey puts value (JSON) under key, or fails.
func putKey(t *testing.T, s *testserver.Server, key, body string) api.Key {
	t.Helper()
	r := s.Do("PUT", "/v1/kv/"+key, body)
	if r.Status != http.StatusCreated && r.Status != http.StatusOK {
		t.Fatalf("put %s: %d %s", key, r.Status, r.Body)
	}
	return testserver.WantJSON[api.Key](t, r, r.Status)
}

// TestKeys_BrowsesTheTreeAndShowsChangesLiveInChromium: with no key the
// panel says how to write one; keys written over HTTP show as folders
// with their counts, and, opened, with their values; a put elsewhere
// changes a value in place and a new member shows with its session; the
// member goes when its session is deleted; odd values show as text;
// the path leads back up. None of it reloads the page.
func TestKeys_BrowsesTheTreeAndShowsChangesLiveInChromium(t *testing.T) {
	s := testserver.Start(t)
	b := startPanelBrowser(t, s, 1280, 900, keyPath)
	openDashboard(b, `[data-testid="keys-empty"]`)
	curl := evalAs[string](b, `document.querySelector('[data-testid="keys-empty-curl"]').textContent`)
	if !strings.Contains(curl, "curl -s -X PUT "+s.TS.URL+"/v1/kv/config/my-first-key") {
		t.Errorf("the empty state's command %q does not write a key on this server (%s)", curl, s.TS.URL)
	}

	putKey(t, s, "config/db", `{"value":{"host":"db-1","port":5432}}`)
	putKey(t, s, "config/flags/dark", `{"value":true}`)
	putKey(t, s, "services/api/config", `{"value":{"port":80}}`)
	b.waitFor("the top level's folders", 10*time.Second, folderRow("config")+` && `+folderRow("services")+
		` && document.querySelector('[data-testid="keys-count"]').textContent === "3"`)
	if what := evalAs[string](b, folderRow("config")+`.textContent`); !strings.Contains(what, "2 keys") {
		t.Errorf("the config folder says %q, want 2 keys", what)
	}
	b.screenshot("keys-1-top.png")

	// Into config/: its key, and its folder flags/.
	b.eval(`document.querySelector('[data-testid="key-folder"][data-folder="config"]').click()`)
	b.waitFor("config/db's value", 10*time.Second, keyValue("config/db")+` === '{"host":"db-1","port":5432}' && `+folderRow("flags"))
	if path := evalAs[string](b, `document.querySelector('[data-testid="keys-path"]').textContent`); path != "all keys / config" {
		t.Errorf("the path says %q, want all keys / config", path)
	}
	put := putKey(t, s, "config/db", `{"value":{"host":"db-2","port":5432}}`)
	b.waitFor("config/db's new value, in place", 10*time.Second, keyValue("config/db")+` === '{"host":"db-2","port":5432}' && `+
		fmt.Sprintf(`%s.textContent.includes(%q)`, keyRow("config/db"), fmt.Sprint(put.Revision)))

	// A member under services/api/, live, and gone with its session.
	b.eval(`document.querySelector('[data-testid="keys-path"] button').click()`)
	b.waitFor("back at the top", 10*time.Second, folderRow("services"))
	b.eval(`document.querySelector('[data-testid="key-folder"][data-folder="services"]').click()`)
	b.waitFor("services/ with its folder api", 10*time.Second, folderRow("api"))
	b.eval(`document.querySelector('[data-testid="key-folder"][data-folder="api"]').click()`)
	b.waitFor("services/api/config", 10*time.Second, keyRow("services/api/config"))
	sess := testserver.WantJSON[api.Session](t, s.Do("POST", "/v1/sessions", `{"owner":"api-1","ttl":"60s"}`), http.StatusCreated)
	putKey(t, s, "services/api/m1", fmt.Sprintf(`{"value":"10.0.0.1:80","session":%q}`, sess.ID))
	b.waitFor("m1 as a member", 10*time.Second, rowCell(keyRow("services/api/m1"), "key-member")+fmt.Sprintf(` === "member · %s"`, sess.ID)+
		` && document.querySelector('[data-testid="keys-count"]').textContent === "2 · 1 member"`)
	b.screenshot("keys-2-member.png")
	testserver.WantStatus(t, s.Do("DELETE", "/v1/sessions/"+sess.ID, ""), http.StatusNoContent)
	b.waitFor("m1 gone with its session", 10*time.Second, `!`+keyRow("services/api/m1")+
		` && document.querySelector('[data-testid="keys-count"]').textContent === "1"`)

	// Values and names are text, never markup.
	putKey(t, s, "services/api/odd", `{"value":"<img src=x onerror=alert(1)>"}`)
	b.waitFor("the odd value as text", 10*time.Second, keyValue("services/api/odd")+` === '"<img src=x onerror=alert(1)>"'`)
	if n := evalAs[int](b, `document.querySelectorAll('#keys img').length`); n != 0 {
		t.Errorf("a value made %d img elements", n)
	}
	wantNoReload(t, b, "every change of a key must show live")
	b.check(false)
}
