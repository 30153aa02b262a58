#!/usr/bin/env bash
# Builds every example package (Examples/NAME, each depending on this repository by relative path) and
# runs it as an app author would, from a fresh empty directory outside the checkout, on a free loopback
# port: `/` and its list page answer 200 with the list root (the built-in Public/ and Templates/, so
# nothing is read from the working directory), and the list's event stream delivers the change that an
# action of the page's form makes. First it checks that docs/GUIDE.md shows Examples/Todo's main.swift as
# it is, with its line count (at most thirty). Scripts/test runs it after the end-to-end tests.
#
#   Scripts/check-examples.sh             builds under the machine-wide build lock (never two builds at once)
#   Scripts/check-examples.sh --no-lock   when the caller already holds that lock (Scripts/test under .ci/run)
#
# Each example has its own .build: the first build of one takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

lock=(flock /tmp/livelist-swift-build.lock)
if [ "${1:-}" = "--no-lock" ]; then lock=(); fi

# The list each example serves, and the form an action of its page posts (without the CSRF token).
declare -A action=(
    [todo]="action=add%3A&title=Written+by+check-examples"
    [chat]="action=send%3A&text=Written+by+check-examples"
)

# docs/GUIDE.md shows Examples/Todo's main.swift whole, and says how many lines it has (at most thirty).
python3 - <<'EOF'
import re, sys
guide = open("docs/GUIDE.md").read()
code = open("Examples/Todo/Sources/todo/main.swift").read()
shown = re.search(r"\(this is `Examples/Todo`, (\d+) lines\):\n\n```swift\n(.*?)```", guide, re.S)
if not shown:
    sys.exit("check-examples: docs/GUIDE.md does not show Examples/Todo's main.swift as \"(this is `Examples/Todo`, N lines):\"")
count = code.count("\n")
if shown.group(2) != code:
    sys.exit("check-examples: the code in docs/GUIDE.md differs from Examples/Todo/Sources/todo/main.swift")
if int(shown.group(1)) != count or count > 30:
    sys.exit(f"check-examples: Examples/Todo's main.swift has {count} lines; docs/GUIDE.md says {shown.group(1)}, and the most is 30")
print(f"ok docs/GUIDE.md shows Examples/Todo's main.swift, {count} lines")
EOF

for dir in Examples/*/; do
    dir=${dir%/}
    name=$(basename "$dir" | tr '[:upper:]' '[:lower:]')
    if [ -z "${action[$name]:-}" ]; then
        echo "check-examples: $dir has no entry in this script's table of actions" >&2
        exit 1
    fi
    echo "-- $dir: build"
    "${lock[@]}" swift build --package-path "$dir" --product "$name"
    binary="$(swift build --package-path "$dir" --show-bin-path)/$name"
    workdir=$(mktemp -d)
    echo "-- $dir: run from $workdir"
    # The example's own environment only: no folders of this checkout (the port is picked below).
    (cd "$workdir" && env -u LIVELIST_PUBLIC -u LIVELIST_TEMPLATES REPO="$repo" LIVELIST_HOST=127.0.0.1 \
        python3 - "$binary" "$name" "${action[$name]}" <<'EOF'
import http.client, os, re, signal, socket, subprocess, sys, threading, time

binary, name, form = sys.argv[1:4]
assert not os.getcwd().startswith(os.environ["REPO"]), "must run outside the checkout"
# A free port, handed over in LIVELIST_PORT (the app's own output may be buffered, so it is not read for one).
with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
server = subprocess.Popen([binary], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          env=dict(os.environ, LIVELIST_PORT=str(port)))
lines = []
def read():
    for line in server.stdout:
        lines.append(line)
threading.Thread(target=read, daemon=True).start()

def fail(message):
    server.terminate()
    sys.exit(f"check-examples {name}: {message}\n--- its output:\n{''.join(lines)}")

def healthy():
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except OSError:
        return False

deadline = time.time() + 30
while not healthy():
    if server.poll() is not None or time.time() > deadline:
        fail("it did not answer /healthz within 30 s")
    time.sleep(0.1)

def get(path, headers={}):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    return response, response.read().decode()

response, body = get("/")
if response.status != 200 or f"/lists/{name}" not in body:
    fail(f"GET /: {response.status}, not an index naming /lists/{name}")
response, page = get(f"/lists/{name}")
if response.status != 200 or f'data-list="{name}"' not in page:
    fail(f"GET /lists/{name}: {response.status}, no list root data-list=\"{name}\"")
cookie = (response.getheader("Set-Cookie") or "").split(";")[0]
token = re.search(r'<meta name="livelist-csrf" content="([^"]+)"', page)
if not cookie or not token:
    fail("the page set no session cookie or CSRF token")
script = re.search(r'src="(/livelist\.js\?v=[0-9a-f]+)"', page)
if not script or get(script.group(1))[0].status != 200:
    fail("the page's script is not served (the built-in Public/)")

stream = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
stream.request("GET", f"/lists/{name}/events", headers={"Accept": "text/event-stream", "Cookie": cookie})
events = stream.getresponse()
if events.status != 200 or not events.getheader("Content-Type", "").startswith("text/event-stream"):
    fail(f"GET /lists/{name}/events: {events.status}")

poster = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
poster.request("POST", f"/lists/{name}/actions", body=f"csrf={token.group(1)}&{form}",
               headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie})
posted = poster.getresponse()
posted.read()
if posted.status != 303:
    fail(f"POST /lists/{name}/actions: {posted.status}, not 303 back to the page")

deadline = time.time() + 10
seen = False
while not seen and time.time() < deadline:
    line = events.fp.readline().decode()
    if not line:
        break
    seen = line.startswith("data:") and "Written by check-examples" in line
if not seen:
    fail("the event stream did not deliver the action's change within 10 s")

server.send_signal(signal.SIGTERM)
try:
    server.wait(timeout=10)
except subprocess.TimeoutExpired:
    server.kill()
    fail("it did not stop within 10 s of SIGTERM")
left = sorted(os.listdir("."))
if left != ["data"]:
    fail(f"it left {left} in its working directory, expected only data/")
print(f"ok {name}: /, /lists/{name}, its script, an action seen on /lists/{name}/events, from {os.getcwd()}")
EOF
    ) || { rm -rf "$workdir"; exit 1; }
    rm -rf "$workdir"
done
