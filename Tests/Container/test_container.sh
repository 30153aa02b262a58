#!/usr/bin/env bash
# The Dockerfile built and run for real, with podman (no Docker engine runs on these machines):
#
#   base images   no image registry is reachable, so local stand-ins are made under the names the
#                 Dockerfile's FROM lines use: debian:bookworm-slim from `debootstrap --variant=minbase`
#                 trimmed as the official slim image is, and swift:MAJOR.MINOR-bookworm from that plus
#                 the packages the official Swift image installs. The stand-in Swift image carries no
#                 toolchain: the local one (and the local git mirror of the Swift packages, if git is set
#                 to read github.com from one) is mounted read-only into the build with
#                 `podman build --volume`, and the stand-in only puts it on PATH and tells git about the
#                 mirror. Stand-ins are kept in podman's storage and made again only when missing or
#                 when their recipe (this file's part that makes them) changed.
#   build         `podman build --format docker` of the unchanged Dockerfile (docker format keeps the
#                 HEALTHCHECK), tagged livelist:latest, under `flock $LIVELIST_BUILD_LOCK` when set.
#   one node      the image as an unprivileged user with a named volume: /healthz, a page, a PUT with
#                 the write token (201) and without (401); the data survives removing the container;
#                 `podman healthcheck run`; `podman stop` (SIGTERM) ends it with status 0, timed.
#   compose       docker-compose.yml with podman-compose: three nodes on PostgreSQL (a stand-in for the
#                 official image, made from Tests/Container/postgres/) behind nginx (an image made from
#                 Deploy/nginx/): a page, writes, and events arriving through the proxy from
#                 writes that nginx spreads over the nodes.
#
# Ends with a table of timings and sizes. Cleans up its containers, volumes and networks (the images
# stay, as a cache). Usage: Tests/Container/test_container.sh [build|node|compose|all] (default all).
# Needs podman, runc, debootstrap and podman-compose (Scripts/setup installs them; missing, it fails naming
# it); exits 0 with "SKIPPED" only when this machine cannot run containers at all.
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
cd "$(dirname "$0")/../.."
what=${1:-all}
case "$what" in build|node|compose|all) ;; *) echo "usage: $0 [build|node|compose|all]" >&2; exit 2 ;; esac

IMAGE=livelist:latest
BUILD_STAGE_IMAGE=livelist-build-stage:latest
TOKEN=container-check-token
PREFIX=livelist-check            # every container, volume and compose project this script makes
PODMAN_COMPOSE_VERSION=1.6.0
started=$(date +%s)

step() { printf '== check-container: %s\n' "$*"; }
fail() { printf 'check-container: FAILED: %s\n' "$*" >&2; exit 1; }
skip() { printf 'check-container: SKIPPED: %s\n' "$*"; exit 0; }
seconds_since() { python3 -c "import time,sys; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$1"; }
now() { python3 -c 'import time; print(time.time())'; }

# ---------------------------------------------------------------- tools

[ "$(uname -s)" = Linux ] || skip "containers need Linux; this is $(uname -s)"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null || skip "needs root (or password-less sudo) for rootful podman"
    sudo="sudo -n"
fi
for tool in podman runc debootstrap; do
    command -v "$tool" >/dev/null 2>&1 || fail "needs $tool: run Scripts/setup"
done
for tool in python3 curl git swift flock ip; do
    command -v "$tool" >/dev/null 2>&1 || fail "needs $tool on PATH"
done

# Podman's settings for this machine, in a containers.conf of our own (CONTAINERS_CONF replaces the
# machine's, so podman-compose's podman calls get them too): runc, since crun refuses a hybrid cgroup
# layout; cgroupfs, with no systemd to manage cgroups; default rlimits no higher than the machine's hard
# limits (podman's defaults exceed them and runc then fails); events in a file, as there is no journal.
work=$(mktemp -d /tmp/livelist-check-container.XXXXXX)
nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] || [ "$nofile" -gt 20000 ] && nofile=20000
nproc=$(ulimit -Hu); [ "$nproc" = unlimited ] || [ "$nproc" -gt 9000 ] && nproc=9000
cat > "$work/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
export CONTAINERS_CONF="$work/containers.conf"
# Without systemd podman cannot schedule the periodic HEALTHCHECK (it says so on every run and
# removal); `podman healthcheck run` still runs it on demand, which is what the checks use.
podman() {
    $sudo env CONTAINERS_CONF="$CONTAINERS_CONF" podman "$@" 2> >(grep -v 'unable to get systemd connection' >&2)
}

cleanup() {
    local status=$?
    if [ -n "${compose_up:-}" ]; then
        compose down -v >/dev/null 2>&1 || true
    fi
    for container in $(podman ps -a --format '{{.Names}}' 2>/dev/null | grep "^$PREFIX" || true); do
        podman rm -f -t 0 "$container" >/dev/null 2>&1 || true
    done
    for volume in $(podman volume ls --format '{{.Name}}' 2>/dev/null | grep "^$PREFIX" || true); do
        podman volume rm -f "$volume" >/dev/null 2>&1 || true
    done
    [ -n "${rootfs:-}" ] && $sudo rm -rf "$rootfs"
    rm -rf "$work"
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

podman info >/dev/null 2>&1 || fail "podman cannot run here: $(podman info 2>&1 | tail -n 3)"

# ---------------------------------------------------------------- stand-in base images

# The images the Dockerfile starts from: the build stage's (swift:…) and the run stage's (debian:…).
mapfile -t froms < <(sed -nE 's/^FROM[[:space:]]+([^[:space:]]+).*/\1/p' Dockerfile)
[ ${#froms[@]} -eq 2 ] || fail "Dockerfile: expected two stages (build, run), found ${#froms[@]} FROM lines"
swift_image=${froms[0]}
slim_image=${froms[1]}
case "$swift_image" in swift:*-bookworm) ;; *) fail "Dockerfile: the build stage is $swift_image; this script makes stand-ins for swift:X.Y-bookworm only" ;; esac
[ "$slim_image" = debian:bookworm-slim ] || fail "Dockerfile: the run stage is $slim_image; this script makes a stand-in for debian:bookworm-slim only"
local_swift=$(swift --version 2>&1 | sed -nE 's/.*Swift version ([0-9]+\.[0-9]+).*/\1/p' | head -n 1)
[ "${swift_image#swift:}" = "$local_swift-bookworm" ] \
    || fail "Dockerfile: the build stage is $swift_image but the local toolchain (mounted in its stand-in) is Swift $local_swift"
toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")
[ -x "$toolchain/usr/bin/swift" ] || fail "cannot find the toolchain's root from $(command -v swift)"

# Local directories that git reads github.com (or any URL) from: mounted at the same path in the build,
# with the same insteadOf lines in the stand-in's /etc/gitconfig.
mirror_config=$(git config --get-regexp '^url\..*\.insteadof$' || true)
mirrors=()
while read -r key value; do
    [ -n "${key:-}" ] || continue
    base=${key#url.}; base=${base%.insteadof}
    if [ -d "$base" ]; then
        printf '[url "%s"]\n\tinsteadOf = %s\n' "$base" "$value" >> "$work/gitconfig"
        [[ " ${mirrors[*]} " == *" $base "* ]] || mirrors+=("$base")
    fi
done <<< "$mirror_config"
touch "$work/gitconfig"

# The Debian mirror apt uses here (debootstrap and the stand-ins' sources take it).
apt_mirror=$(grep -rhoE '^(URIs:|deb)[[:space:]]+[^[:space:]]+' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
    | awk '{print $2}' | grep -vE 'security|^\[' | grep -E 'debian/?$' | head -n 1 || true)
apt_mirror=${apt_mirror:-http://deb.debian.org/debian}
apt_mirror=${apt_mirror%/}
security_mirror=$(grep -rhoE '^(URIs:|deb)[[:space:]]+[^[:space:]]+debian-security/?' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null \
    | awk '{print $2}' | head -n 1 || true)
security_mirror=${security_mirror:-${apt_mirror}-security}
security_mirror=${security_mirror%/}

# What debian:bookworm-slim is beyond minbase: dpkg leaves out documentation, manuals and translations,
# and apt keeps no downloaded packages, caches or translated indexes.
slim_recipe() {
    cat <<'EOF'
# /etc/dpkg/dpkg.cfg.d/slim
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
# /etc/apt/apt.conf.d/slim
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::Languages "none";
Acquire::GzipIndexes "true";
Acquire::CompressionTypes::Order:: "gz";
APT::AutoRemove::SuggestsImportant "false";
EOF
}

# The official swift:X.Y-bookworm image: these packages, then the toolchain unpacked into /usr.
swift_containerfile() {
    cat <<EOF
FROM $slim_image
RUN export DEBIAN_FRONTEND=noninteractive \\
    && apt-get -q update \\
    && apt-get -q install -y binutils git gnupg2 libc6-dev libcurl4-openssl-dev libedit2 libgcc-12-dev \\
       libpython3-dev libsqlite3-0 libstdc++-12-dev libxml2-dev libncurses-dev libz3-dev pkg-config tzdata \\
       zlib1g-dev \\
    && rm -rf /var/lib/apt/lists/*
COPY gitconfig /etc/gitconfig
ENV PATH=/opt/swift/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CMD ["bash"]
EOF
}

recipe_hash() { { slim_recipe; swift_containerfile; cat "$work/gitconfig"; echo "$apt_mirror $security_mirror"; } | sha256sum | cut -c1-16; }
recipe=$(recipe_hash)
label_of() { podman image inspect --format '{{index .Labels "livelist.stand-in"}}' "$1" 2>/dev/null || true; }

make_slim() {
    if [ "$(label_of "$slim_image")" = "$recipe" ]; then
        echo "   $slim_image: kept from an earlier run"
        return
    fi
    local began; began=$(now)
    rootfs=$(mktemp -d /var/tmp/livelist-rootfs.XXXXXX)
    step "stand-in $slim_image: debootstrap --variant=minbase bookworm from $apt_mirror"
    $sudo debootstrap --variant=minbase bookworm "$rootfs" "$apt_mirror" > "$work/debootstrap.log" 2>&1 \
        || { tail -n 20 "$work/debootstrap.log" >&2; fail "debootstrap"; }
    slim_recipe | sed -n '/^# \/etc\/dpkg/,/^# \/etc\/apt/p' | grep -v '^#' | $sudo tee "$rootfs/etc/dpkg/dpkg.cfg.d/slim" >/dev/null
    slim_recipe | sed -n '/^# \/etc\/apt/,$p' | grep -v '^#' | $sudo tee "$rootfs/etc/apt/apt.conf.d/slim" >/dev/null
    $sudo rm -f "$rootfs/etc/apt/sources.list"
    $sudo tee "$rootfs/etc/apt/sources.list.d/debian.sources" >/dev/null <<EOF
Types: deb
URIs: $apt_mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security_mirror
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    # What the exclusions would have kept out, had they been in place during debootstrap.
    $sudo find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
    $sudo find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
    $sudo rm -rf "$rootfs"/usr/share/{man,groff,info,lintian,linda,locale}/* "$rootfs"/var/cache/apt/* \
        "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/* "$rootfs"/tmp/*
    $sudo tar -C "$rootfs" -c . | podman import --quiet \
        --change 'CMD ["bash"]' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change "LABEL livelist.stand-in=$recipe" \
        - "docker.io/library/$slim_image" >/dev/null
    $sudo rm -rf "$rootfs"; rootfs=""
    echo "   $slim_image: made in $(seconds_since "$began") s"
}

make_swift() {
    # Made again when the slim stand-in under it was.
    local wanted; wanted="$recipe-$(podman image inspect --format '{{.Id}}' "$slim_image" | cut -c1-12)"
    if [ "$(label_of "$swift_image")" = "$wanted" ]; then
        echo "   $swift_image: kept from an earlier run"
        return
    fi
    local began; began=$(now)
    step "stand-in $swift_image: $slim_image with the official image's packages; the toolchain is mounted"
    mkdir -p "$work/swift"
    swift_containerfile > "$work/swift/Containerfile"
    cp "$work/gitconfig" "$work/swift/gitconfig"
    podman build --quiet --format docker --network host --pull=never --label "livelist.stand-in=$wanted" \
        -t "docker.io/library/$swift_image" -f "$work/swift/Containerfile" "$work/swift" > "$work/swift.log" 2>&1 \
        || { tail -n 30 "$work/swift.log" >&2; fail "building the stand-in $swift_image"; }
    echo "   $swift_image: made in $(seconds_since "$began") s"
}

# ---------------------------------------------------------------- the image

build_image() {
    step "stand-ins for the Dockerfile's base images ($swift_image, $slim_image)"
    make_slim
    make_swift
    local mounts=(--volume "$toolchain:/opt/swift:ro")
    for mirror in "${mirrors[@]}"; do mounts+=(--volume "$mirror:$mirror:ro"); done
    step "podman build --format docker -t $IMAGE . (toolchain and mirror mounted: ${mounts[*]})"
    local lock=()
    [ -n "${LIVELIST_BUILD_LOCK:-}" ] && lock=(flock "$LIVELIST_BUILD_LOCK")
    # The build's own lines go to a log; its steps are shown as they start. Timed from when it holds the
    # lock (the time spent waiting for another build is not the build's).
    { ${lock[@]+"${lock[@]}"} $sudo env CONTAINERS_CONF="$CONTAINERS_CONF" sh -c 'date +%s.%N > "$0"; exec podman "$@"' \
            "$work/build.started" build --format docker --network host --pull=never "${mounts[@]}" -t "$IMAGE" . 2>&1
      echo "status $?"; } \
        | tee "$work/build.log" | grep --line-buffered -E '^(\[[0-9]+/[0-9]+\] )?(STEP|COMMIT)|^--> Using cache' || true
    grep -qx 'status 0' "$work/build.log" || { tail -n 40 "$work/build.log" >&2; fail "podman build"; }
    build_seconds=$(seconds_since "$(cat "$work/build.started")")
    echo "   built in $build_seconds s"
    # The build stage's image is the next build's cache: tagged (all cached, so at once), so that pruning
    # the untagged images removes only earlier builds' stages, which would otherwise pile up on the disk.
    ${lock[@]+"${lock[@]}"} $sudo env CONTAINERS_CONF="$CONTAINERS_CONF" podman build --format docker --network host \
        --pull=never "${mounts[@]}" --target build -t "$BUILD_STAGE_IMAGE" . > "$work/stage.log" 2>&1 || { tail -n 20 "$work/stage.log" >&2; fail "tagging the build stage"; }
    # --external: a build cut off earlier (a killed run, a restarted machine) leaves its working
    # container in podman's storage, and a plain prune then fails on the image it holds. Under the build
    # lock, so no build of ours is running whose containers these could be. Pruning only saves disk: a
    # failure is reported and the check goes on.
    if ! ${lock[@]+"${lock[@]}"} $sudo env CONTAINERS_CONF="$CONTAINERS_CONF" podman image prune -f --external \
            > "$work/prune.log" 2>&1; then
        echo "   warning: podman image prune failed (earlier builds' images stay on disk):"
        tail -n 5 "$work/prune.log" | sed 's/^/     /'
    fi
}

size_mb() { python3 -c "import sys; print(f'{int(sys.argv[1]) / 1e6:.1f}')" "$1"; }

report_sizes() {
    image_bytes=$(podman image inspect --format '{{.Size}}' "$IMAGE")
    base_bytes=$(podman image inspect --format '{{.Size}}' "$slim_image")
    binary_bytes=$(podman run --rm --no-healthcheck --entrypoint stat "$IMAGE" -c %s /app/livelist)
    step "sizes"
    echo "   image $IMAGE: $(size_mb "$image_bytes") MB; base $slim_image: $(size_mb "$base_bytes") MB;" \
         "above the base: $(size_mb $((image_bytes - base_bytes))) MB, of which /app/livelist $(size_mb "$binary_bytes") MB"
    echo "   libraries the binary links:"
    podman run --rm --no-healthcheck --entrypoint ldd "$IMAGE" /app/livelist | sed 's/^/     /'
}

# ---------------------------------------------------------------- one node

free_port() { python3 -m livelist_tools free-port; }
smoke() { python3 Tests/Container/smoke.py "$@"; }

start_node() {  # NAME PORT: the image on a named volume, published on loopback only
    podman run -d --name "$1" -p "127.0.0.1:$2:8080" -v "$PREFIX-data:/data" \
        -e LIVELIST_WRITE_TOKEN="$TOKEN" "$IMAGE" >/dev/null
    smoke wait "http://127.0.0.1:$2" || { podman logs "$1" 2>&1 | tail -n 20 >&2; fail "$1 did not answer /healthz"; }
}

stop_node() {  # NAME: podman stop (SIGTERM, then SIGKILL after the grace period), timed; status must be 0
    local grace=10 began
    began=$(now)
    podman stop -t "$grace" "$1" >/dev/null
    local took; took=$(seconds_since "$began")
    local code; code=$(podman inspect --format '{{.State.ExitCode}}' "$1")
    [ "$code" = 0 ] || { podman logs "$1" 2>&1 | tail -n 20 >&2; fail "$1 exited with status $code after SIGTERM"; }
    python3 -c "import sys; sys.exit(float(sys.argv[1]) >= float(sys.argv[2]))" "$took" "$grace" \
        || fail "$1 took $took s to stop: killed at the end of the $grace s grace period"
    echo "   podman stop $1: exit status 0 after $took s (grace period $grace s)"
    stop_seconds="${stop_seconds:+$stop_seconds, }$took"
}

check_node() {
    podman image exists "$IMAGE" || fail "no image $IMAGE: build it first ($0 build)"
    step "one node: podman run as the image's user, volume $PREFIX-data"
    podman volume create "$PREFIX-data" >/dev/null
    local port; port=$(free_port)
    start_node "$PREFIX-node" "$port"
    local uid; uid=$(podman exec "$PREFIX-node" id -u)
    [ "$uid" = 10001 ] || fail "the server runs as uid $uid, not the image's user 10001"
    [ "$(podman top "$PREFIX-node" user | tail -n +2 | sort -u)" = livelist ] || fail "a process in the container runs as another user than livelist"
    echo "   running as livelist (uid $uid)"
    smoke node "http://127.0.0.1:$port" "$TOKEN"
    podman healthcheck run "$PREFIX-node" || fail "podman healthcheck run: unhealthy"
    echo "   podman healthcheck run: exit status 0, health status $(podman inspect --format "{{.State.Health.Status}}" "$PREFIX-node")"
    stop_node "$PREFIX-node"
    podman rm "$PREFIX-node" >/dev/null
    step "one node: a new container on the same volume"
    port=$(free_port)
    start_node "$PREFIX-node2" "$port"
    smoke persisted "http://127.0.0.1:$port"
    stop_node "$PREFIX-node2"
    podman rm "$PREFIX-node2" >/dev/null
    podman volume rm "$PREFIX-data" >/dev/null
}

# ---------------------------------------------------------------- compose

# Images of the compose file that are made here rather than pulled: Deploy/NAME/ is the build
# context of livelist-NAME:latest. A service added to docker-compose.yml with such a directory (a database,
# say) is built by adding its name here.
LOCAL_IMAGES=(nginx)

# The images the compose file pulls elsewhere, made here as stand-ins (no registry is reachable):
# Tests/Container/NAME/ is the build context of the stand-in for IMAGE (NAME=IMAGE).
STAND_INS=(postgres=postgres:15-bookworm)

compose() {  # the project's secrets folder and published address go to every call (down reads the file too)
    LIVELIST_SECRETS=$work/secrets LIVELIST_HTTPS=$compose_http podman-compose --podman-path "$work/podman" -p "$PREFIX" -f docker-compose.yml "$@"
}

# Builds the folder $1 as the image $2 ($3 names it in the output), timed.
build_context() {
    step "$3 from $1/"
    local began log; began=$(now); log="$work/$(basename "$1").log"
    podman build --quiet --format docker --network host --pull=never -t "$2" \
        "$1" > "$log" 2>&1 || { tail -n 30 "$log" >&2; fail "building $3"; }
    echo "   built in $(seconds_since "$began") s"
}

# Sets the MAC address of network $1's bridge to the one it has, which fixes it (see check_compose).
pin_bridge_address() {
    local bridge mac
    bridge=$(podman network inspect "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["network_interface"])') \
        || fail "no bridge for the network $1"
    mac=$(cat "/sys/class/net/$bridge/address") || fail "no bridge $bridge for the network $1"
    $sudo ip link set dev "$bridge" address "$mac" || fail "cannot pin the MAC address of $bridge"
    echo "   the bridge $bridge of $1 keeps the MAC address $mac"
}

check_compose() {
    podman image exists "$IMAGE" || fail "no image $IMAGE: build it first ($0 build)"
    command -v podman-compose >/dev/null 2>&1 || fail "needs podman-compose ($PODMAN_COMPOSE_VERSION): run Scripts/setup"
    # podman-compose runs podman by path: one that passes our configuration (and sudo) along.
    printf '#!/bin/sh\nexec %s env CONTAINERS_CONF=%q podman "$@"\n' "$sudo" "$CONTAINERS_CONF" > "$work/podman"
    chmod +x "$work/podman"
    for name in "${LOCAL_IMAGES[@]}"; do
        build_context "Deploy/$name" "livelist-$name:latest" "image livelist-$name:latest"
    done
    for pair in "${STAND_INS[@]}"; do
        build_context "Tests/Container/${pair%%=*}" "docker.io/library/${pair#*=}" "stand-in ${pair#*=}"
    done
    step "secrets: Deploy/make-secrets.sh $work/secrets"
    Deploy/make-secrets.sh "$work/secrets" >/dev/null
    local port; port=$(free_port)
    step "podman-compose up: docker-compose.yml on https://127.0.0.1:$port (TLS to the database too, verify-full)"
    compose_up=1
    compose_http="127.0.0.1:$port"
    # The database first, which makes the project's network and its bridge; then the bridge's MAC address
    # is pinned, then the rest starts. Without a pinned address the kernel gives a bridge the lowest MAC
    # of its ports, so it changes as containers join, and netavark 1.4 (Debian 12) leaves it so: a
    # container that looked up the gateway's address before the change sends to the old one, and its DNS
    # queries (aardvark-dns answers on the gateway) go unanswered until its ARP entry expires, 15 to 45 s.
    # Nodes then could not resolve "postgres" at start-up. Docker and later netavark pin the address.
    compose up -d postgres > "$work/compose.log" 2>&1 \
        || { tail -n 30 "$work/compose.log" >&2; fail "podman-compose up postgres"; }
    pin_bridge_address "${PREFIX}_default"
    compose up -d >> "$work/compose.log" 2>&1 \
        || { tail -n 30 "$work/compose.log" >&2; fail "podman-compose up"; }
    export LIVELIST_SMOKE_CA="$work/secrets/nginx.crt"
    if ! smoke wait "https://127.0.0.1:$port" || ! smoke proxy "https://127.0.0.1:$port" "$(cat "$work/secrets/write-token")"; then
        compose logs 2>&1 | tail -n 40 >&2
        fail "the smoke test through nginx"
    fi
    # nginx answers while one node does: each node must serve too, which it does once it has the database.
    local nodes; nodes=$(podman ps --format '{{.Names}}' | grep "^${PREFIX}_livelist-" | sort)
    [ "$(echo "$nodes" | wc -l)" -eq 3 ] || fail "expected three nodes running, found: $nodes"
    local node began; began=$(now)
    for node in $nodes; do
        local tries=0
        until podman exec "$node" /app/livelist healthcheck --quiet --timeout 2 >/dev/null 2>&1; do
            tries=$((tries + 1))
            [ "$tries" -lt 30 ] || { podman logs "$node" 2>&1 | tail -n 20 >&2; fail "$node does not serve"; }
            sleep 1
        done
    done
    echo "   each of the three nodes serves on the shared database (checked in $(seconds_since "$began") s)"
    # The database takes TLS only: a clear-text connection with the nodes' own role and password is refused.
    local first; first=$(echo "$nodes" | head -n 1)
    local clear; clear=$(podman exec -e LIVELIST_DATABASE_PASSWORD_FILE=/run/secrets/livelist/db-password "$first" \
        /app/livelist migrate --database-url "postgres://livelist@postgres:5432/livelist?sslmode=disable" 2>&1 || true)
    echo "$clear" | grep -q "no encryption" || fail "a clear-text connection to the database was not refused as such: $clear"
    echo "   the database refuses a clear-text connection (sslmode=disable: no pg_hba.conf entry, no encryption)"
    compose down -v > "$work/compose-down.log" 2>&1 || { tail -n 30 "$work/compose-down.log" >&2; fail "podman-compose down"; }
    compose_up=""
    echo "   podman-compose down: containers, network and volume removed"
}

# ---------------------------------------------------------------- run

summary=()
case "$what" in
    build) build_image; report_sizes ;;
    node) check_node ;;
    compose) check_compose ;;
    all) build_image; report_sizes; check_node; check_compose ;;
esac
[ -n "${build_seconds:-}" ] && summary+=("build $build_seconds s")
[ -n "${image_bytes:-}" ] && summary+=("image $(size_mb "$image_bytes") MB, $(size_mb $((image_bytes - base_bytes))) MB above the base")
[ -n "${stop_seconds:-}" ] && summary+=("podman stop $stop_seconds s")
step "passed in $(seconds_since "$started") s${summary[*]+: }$(IFS=';'; echo "${summary[*]+${summary[*]}}" | sed 's/;/; /g')"
