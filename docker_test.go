package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocker_TheImageAndComposeAreSafeAsShipped checks what a new user
// of the container runs as pasted: the build context holds no built
// binary or node_modules, etcd's data dir is 0700, the README's docker run
// publishes the API on loopback only, and the compose file's curl sends
// JSON as JSON and its nodes answer only their published names. (CI
// builds the image only where a Docker engine runs.)
func TestDocker_TheImageAndComposeAreSafeAsShipped(t *testing.T) {
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ignore := strings.Fields(read(".dockerignore"))
	for _, want := range []string{"/baton", "**/node_modules", ".git"} {
		if !slices.Contains(ignore, want) {
			t.Errorf(".dockerignore does not leave out %s", want)
		}
	}
	if !strings.Contains(read("Dockerfile"), "mkdir -p -m 0700 /out/data") {
		t.Error("the Dockerfile does not make /data 0700, which etcd wants")
	}
	for _, f := range []string{"README.md", "Dockerfile"} {
		for _, run := range regexp.MustCompile(`docker run[^\n]*`).FindAllString(read(f), -1) {
			if regexp.MustCompile(`-p (\d+:)`).MatchString(run) {
				t.Errorf("%s: %q publishes the port on every interface; bind it to 127.0.0.1", f, run)
			}
		}
	}
	compose := read("docker-compose.yml")
	for _, curl := range regexp.MustCompile(`curl [^\n]*-d [^\n]*`).FindAllString(compose, -1) {
		if !strings.Contains(curl, "Content-Type: application/json") {
			t.Errorf("docker-compose.yml: %q sends a body without Content-Type (415)", curl)
		}
	}
	if !strings.Contains(compose, "BATON_ALLOWED_HOSTS: localhost,127.0.0.1,[::1]") {
		t.Error("docker-compose.yml sets no BATON_ALLOWED_HOSTS: its nodes answer any Host (DNS rebinding)")
	}
}
