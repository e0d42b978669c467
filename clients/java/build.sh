#!/usr/bin/env bash
# Builds the Java client with javac and jar (Maven's central repository
# cannot be reached here; pom.xml builds the same for users who have it),
# then runs its JUnit 5 tests with Debian's console launcher against a
# baton node started from $BATON_BIN, on free loopback ports, in a
# temporary directory that goes when the script ends (its log stays in
# build/baton.log). The last lines are the console launcher's summary;
# the exit status is non-zero on any failure (set -e: the launcher's).
#
#   BATON_BIN=/tmp/baton clients/java/build.sh
#
# Needs a JDK (17 or later: default-jdk-headless) and junit5.
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)
repo=$(cd ../.. && pwd)

: "${BATON_BIN:?set BATON_BIN to a baton binary, as: go build -o /tmp/baton . (in the repository root)}"
BATON_BIN=$(cd "$(dirname "$BATON_BIN")" && pwd)/$(basename "$BATON_BIN")
export BATON_BIN
junit=${JUNIT_CONSOLE:-/usr/share/java/junit-platform-console-standalone.jar}
[ -f "$junit" ] || { echo "no $junit: apt-get install junit5" >&2; exit 1; }
version=$(sed -n 's:^  <version>\(.*\)</version>$:\1:p' pom.xml | head -1)

build=$here/build
rm -rf "$build"
mkdir -p "$build/classes" "$build/test-classes" "$build/examples"

echo "== javac: the library (-Werror, doclint on), and its jar"
mapfile -t main < <(find src/main/java -name '*.java' | sort)
javac --release 17 -encoding UTF-8 -Xlint:all -Xdoclint:all,-missing -Werror -d "$build/classes" "${main[@]}"
jar --create --file "$build/baton-client-$version.jar" -C "$build/classes" .
echo "$build/baton-client-$version.jar"

echo "== javac: the tests and examples/"
mapfile -t tests < <(find src/test/java -name '*.java' | sort)
javac --release 17 -encoding UTF-8 -Xlint:all -Werror -cp "$build/classes:$junit" -d "$build/test-classes" "${tests[@]}"
javac --release 17 -encoding UTF-8 -Xlint:all -Werror -cp "$build/baton-client-$version.jar" -d "$build/examples" examples/*.java

echo "== javac: the Java examples of this README and the repository's"
# A block that starts with an import is a program of its own; any other
# is a method body, given what is declared below (an example that names
# something new must add it here).
snippets=$build/readme
mkdir -p "$snippets"
awk -v dir="$snippets" '/^```java$/ { n++; f = 1; next } /^```$/ { f = 0; next } f { print > (dir "/block" n ".txt") }' README.md "$repo/README.md"
for block in "$snippets"/block*.txt; do
	if head -1 "$block" | grep -q '^import '; then
		class=$(sed -n 's/^public class \([A-Za-z0-9_]*\).*/\1/p' "$block" | head -1)
		cp "$block" "$snippets/$class.java"
	else
		class=Readme$(basename "$block" .txt)
		{
			printf 'import dev.baton.client.*;\nimport java.time.Duration;\nimport java.util.List;\nimport java.util.Map;\n'
			printf 'class %s {\n  Client c;\n  Object state;\n  void runJob(long token) {}\n  void rebuild(long token) {}\n  void transfer(long token) {}\n' "$class"
			printf '  void run() throws Exception {\n'
			cat "$block"
			printf '  }\n}\n'
		} >"$snippets/$class.java"
	fi
done
javac --release 17 -encoding UTF-8 -Xlint:all -Werror -cp "$build/baton-client-$version.jar" -d "$snippets/classes" "$snippets"/*.java

tmp=$(mktemp -d)
node=
# shellcheck disable=SC2317 # run by the trap below, which shellcheck does not follow
cleanup() {
	if [ -n "$node" ]; then
		kill "$node" 2>/dev/null || true
		wait "$node" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# Free ports, as the kernel hands them out (the test helper binds port 0).
read -r http_port peer_port < <(java -cp "$build/test-classes" dev.baton.client.Live ports 2)
addr="http://127.0.0.1:$http_port"
echo "== baton: a node on $addr ($BATON_BIN)"
"$BATON_BIN" serve --data-dir "$tmp/data" --http-addr "127.0.0.1:$http_port" \
	--peer-url "http://127.0.0.1:$peer_port" --client-url "" --log-level warn >"$build/baton.log" 2>&1 &
node=$!

# Ready when /readyz answers 200 (bash's /dev/tcp: no curl needed), within 30 s.
ready() {
	local status
	exec 3<>"/dev/tcp/127.0.0.1/$http_port" || return 1
	printf 'GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
	read -r -t 2 _ status _ <&3 || status=
	exec 3<&-
	[ "$status" = 200 ]
}
deadline=$((SECONDS + 30))
until ready 2>/dev/null; do
	if ! kill -0 "$node" 2>/dev/null; then
		echo "baton exited:" >&2; cat "$build/baton.log" >&2; exit 1
	fi
	if [ "$SECONDS" -ge "$deadline" ]; then
		echo "baton not ready within 30 s:" >&2; cat "$build/baton.log" >&2; exit 1
	fi
	sleep 0.1
done

# JUnit's summary ends the output: the node's log stays in build/.
echo "== junit: the tests, against $addr (the node's log: $build/baton.log)"
BATON_ADDR=$addr java -Dbaton.repo="$repo" -Dbaton.examples="$build/examples:$build/baton-client-$version.jar" \
	-jar "$junit" --disable-banner --details=tree --fail-if-no-tests \
	--class-path "$build/classes:$build/test-classes" --scan-class-path "$build/test-classes"
