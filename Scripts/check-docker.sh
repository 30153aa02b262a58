#!/usr/bin/env bash
# The Dockerfile without Docker (no Docker engine runs in CI). Reads the Dockerfile and performs its
# steps here, failing when the two drift apart:
#
#   build stage   the build context honours .dockerignore; the build stage's COPY lines fill a mirror
#                 of its WORKDIR (.build-docker/context); its `RUN swift ...` lines run there as written,
#                 with only --scratch-path .build-docker/scratch added; its apt-get packages must be
#                 installed here; the Swift image's version must be the local toolchain's.
#   run stage     the libraries `ldd` names must be exactly what the stage installs (besides libc,
#                 libgcc and libstdc++ of the slim image); the COPY --from lines fill an empty directory
#                 laid out as the image; its RUN mkdir/chown lines and VOLUME, ENV, EXPOSE and USER must
#                 agree; then the ENTRYPOINT starts there as the Dockerfile's unprivileged USER (created
#                 when missing, removed afterwards), with the ENV (absolute paths inside the image
#                 directory; LIVELIST_HOST and LIVELIST_PORT overridden to 127.0.0.1 and a free port),
#                 plus a write token as `docker run -e` would pass it.
#   README        its Docker commands fit: the tag built is the image run, -p the exposed port, -v the
#                 VOLUME, -e LIVELIST_WRITE_TOKEN (which the check then passes as docker run -e would).
#   checks        /healthz, a list page and the client script through curl; a write without the token
#                 (401) and with it (201); the HEALTHCHECK command (0 against the server, 1 against a
#                 closed port); SIGTERM answered by exit status 0 within 10 s.
#
# Bounded (LIVELIST_DOCKER_CHECK_TIMEOUT seconds in all, default 1800, most of it for a cold build),
# cleans up after itself, exits non-zero on any failure. Set LIVELIST_BUILD_LOCK to a file to run the
# swift commands under `flock` on it. Usage: Scripts/check-docker.sh
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in python3 curl swift ldd dpkg-query; do
    command -v "$tool" >/dev/null 2>&1 || { echo "check-docker: needs $tool on PATH" >&2; exit 1; }
done
exec python3 - "$@" <<'PYTHON'
import glob, json, os, re, shlex, shutil, signal, socket, subprocess, sys, tempfile, time

ROOT = os.getcwd()
SCRATCH = os.path.join(ROOT, ".build-docker", "scratch")
CONTEXT = os.path.join(ROOT, ".build-docker", "context")
BUDGET = float(os.environ.get("LIVELIST_DOCKER_CHECK_TIMEOUT", "1800"))
DEADLINE = time.monotonic() + BUDGET
LOCK = os.environ.get("LIVELIST_BUILD_LOCK")
TOKEN = "docker-check-token"
# Libraries of debian:bookworm-slim itself: no apt-get needed for them.
BASE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6"}
KNOWN = {"FROM", "RUN", "WORKDIR", "COPY", "ENV", "USER", "EXPOSE", "VOLUME", "HEALTHCHECK", "ENTRYPOINT", "CMD", "LABEL"}


class Failure(Exception):
    pass


def step(text):
    print(f"== check-docker: {text}", flush=True)


def remaining(cap=None):
    left = DEADLINE - time.monotonic()
    if left <= 0:
        raise Failure(f"out of time (LIVELIST_DOCKER_CHECK_TIMEOUT={BUDGET:.0f} s)")
    return left if cap is None else min(cap, left)


def run(argv, cap=None, **options):
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=remaining(cap), **options)
    except subprocess.TimeoutExpired:
        raise Failure(f"timed out: {shlex.join(argv)}")


# ---------------------------------------------------------------- the Dockerfile

def instructions(path):
    """(line number, KEYWORD, arguments) of every instruction, continuations joined, comments dropped."""
    result, pending, start = [], "", 0
    with open(path) as file:
        for number, raw in enumerate(file, 1):
            line = raw.rstrip("\n")
            if line.strip().startswith("#"):
                continue
            if not pending:
                start = number
                if not line.strip():
                    continue
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            pending += line
            keyword, _, rest = pending.strip().partition(" ")
            result.append((start, keyword.upper(), rest.strip()))
            pending = ""
    if pending:
        raise Failure("Dockerfile: the last instruction ends with a line continuation")
    return result


def stages(parsed):
    found = []
    for number, keyword, rest in parsed:
        if keyword not in KNOWN:
            raise Failure(f"Dockerfile:{number}: {keyword} is not an instruction this check performs; teach Scripts/check-docker.sh")
        if keyword == "FROM":
            words = rest.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            if len(words) not in (1, 3) or (len(words) == 3 and name is None):
                raise Failure(f"Dockerfile:{number}: FROM {rest}: expected IMAGE [AS NAME]")
            found.append({"image": words[0], "name": name, "lines": []})
        elif not found:
            raise Failure(f"Dockerfile:{number}: {keyword} before FROM")
        else:
            found[-1]["lines"].append((number, keyword, rest))
    if len(found) != 2:
        raise Failure(f"Dockerfile: expected two stages (build, run), found {len(found)}")
    return found


def shell_commands(number, text):
    """The commands of a RUN line in shell form, split at &&."""
    if text.startswith("["):
        raise Failure(f"Dockerfile:{number}: RUN in exec form is not understood by this check")
    if re.search(r"[;|`]|\|\||\$\(", text):
        raise Failure(f"Dockerfile:{number}: RUN {text}: only commands joined by && are understood by this check")
    return [shlex.split(part) for part in text.split("&&")]


def apt_packages(words):
    """Packages of `apt-get [options] install [options] PACKAGES`, or None for other apt-get commands."""
    plain = [word for word in words[1:] if not word.startswith("-")]
    if plain[:1] == ["install"]:
        return plain[1:]
    if plain[:1] == ["update"]:
        return None
    raise Failure(f"apt-get {' '.join(words[1:])}: not understood by this check")


def exec_form(number, text, what):
    try:
        argv = json.loads(text)
    except ValueError:
        argv = None
    if not isinstance(argv, list) or not argv or not all(isinstance(word, str) for word in argv):
        raise Failure(f"Dockerfile:{number}: {what} {text}: use the exec form [\"/path\", \"arg\", ...]")
    return argv


def env_pairs(number, text):
    words = shlex.split(text)
    if words and "=" not in words[0]:
        return {words[0]: " ".join(words[1:])}
    pairs = {}
    for word in words:
        name, equals, value = word.partition("=")
        if not equals:
            raise Failure(f"Dockerfile:{number}: ENV {text}: expected NAME=VALUE pairs")
        pairs[name] = value
    return pairs


# ---------------------------------------------------------------- .dockerignore

def ignore_rules():
    rules = []
    path = os.path.join(ROOT, ".dockerignore")
    if not os.path.exists(path):
        raise Failure(".dockerignore is missing")
    with open(path) as file:
        for line in file:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            negated = line.startswith("!")
            pattern = os.path.normpath(line.lstrip("!").strip("/"))
            regex = ""
            index = 0
            while index < len(pattern):
                char = pattern[index]
                if pattern.startswith("**", index):
                    regex += ".*"
                    index += 2
                    if pattern.startswith("/", index):
                        regex += "/?"
                        index += 1
                    continue
                regex += {"*": "[^/]*", "?": "[^/]"}.get(char, re.escape(char))
                index += 1
            rules.append((negated, re.compile(regex + r"\Z")))
    return rules


def ignored(relative, rules):
    """Whether .dockerignore keeps `relative` (or a directory above it) out of the context."""
    parts = relative.split("/")
    result = False
    for negated, regex in rules:
        for length in range(1, len(parts) + 1):
            if regex.match("/".join(parts[:length])):
                result = not negated
                break
    return result


# ---------------------------------------------------------------- copying

def sync_tree(source, target, rules, relative):
    """Makes `target` a copy of `source` without the ignored paths, rewriting only changed files, so
    that the incremental build sees unchanged files as unchanged."""
    os.makedirs(target, exist_ok=True)
    wanted = set()
    for name in sorted(os.listdir(source)):
        path = f"{relative}/{name}" if relative else name
        if ignored(path, rules):
            continue
        wanted.add(name)
        from_path, to_path = os.path.join(source, name), os.path.join(target, name)
        if os.path.isdir(from_path):
            if os.path.exists(to_path) and not os.path.isdir(to_path):
                os.remove(to_path)
            sync_tree(from_path, to_path, rules, path)
        else:
            if os.path.isdir(to_path):
                shutil.rmtree(to_path)
            info = os.stat(from_path)
            if not os.path.exists(to_path) or os.stat(to_path).st_size != info.st_size or int(os.stat(to_path).st_mtime) != int(info.st_mtime):
                shutil.copy2(from_path, to_path)
    for name in os.listdir(target):
        if name not in wanted:
            doomed = os.path.join(target, name)
            shutil.rmtree(doomed) if os.path.isdir(doomed) and not os.path.islink(doomed) else os.remove(doomed)


def destination(workdir, dest, name, several):
    """Where COPY puts `name`: into the directory `dest/` (always so for several sources), or at `dest`."""
    target = dest if dest.startswith("/") else os.path.normpath(os.path.join(workdir, dest))
    if dest.endswith("/") or dest in (".", "./") or several:
        return os.path.join(target, os.path.basename(name))
    return target


# ---------------------------------------------------------------- the check

def main():
    started = time.monotonic()
    parsed = instructions(os.path.join(ROOT, "Dockerfile"))
    build, runtime = stages(parsed)
    if not build["name"]:
        raise Failure("Dockerfile: the build stage needs a name (FROM IMAGE AS build)")
    rules = ignore_rules()
    for needed in (".build", ".build-docker", ".git", "data", ".swiftpm"):
        if not ignored(needed, rules):
            raise Failure(f".dockerignore does not keep {needed} out of the build context")

    # The toolchain: the image's Swift is the one building here.
    match = re.match(r"swift:(\d+)\.(\d+)(?:\.\d+)?-(\w+)$", build["image"])
    if not match:
        raise Failure(f"Dockerfile: build stage FROM {build['image']}: expected swift:X.Y[.Z]-CODENAME")
    version = run(["swift", "--version"], 60)
    local = re.search(r"Swift version (\d+)\.(\d+)", version.stdout + version.stderr)
    if not local or local.groups() != match.groups()[:2]:
        found = ".".join(local.groups()) if local else "unknown"
        raise Failure(f"Dockerfile builds with Swift {match[1]}.{match[2]} but this toolchain is Swift {found}: keep them the same")
    codename = ""
    if os.path.exists("/etc/os-release"):
        codename = re.search(r"^VERSION_CODENAME=(\w*)", open("/etc/os-release").read(), re.M)
        codename = codename[1] if codename else ""
    for image in (build["image"], runtime["image"]):
        if codename and codename not in image:
            print(f"check-docker: warning: {image} is not {codename}, the system here; its libraries may differ", flush=True)

    # ---- the build stage
    step(f"build stage {build['image']}: context from .dockerignore, WORKDIR mirrored in .build-docker/context")
    workdir = "/"
    copied = {}
    swift_commands = []
    for number, keyword, rest in build["lines"]:
        if keyword == "WORKDIR":
            if copied:
                raise Failure(f"Dockerfile:{number}: WORKDIR after COPY is not understood by this check")
            workdir = rest
        elif keyword == "COPY":
            words = shlex.split(rest)
            if any(word.startswith("--") for word in words):
                raise Failure(f"Dockerfile:{number}: COPY options in the build stage are not understood by this check")
            *sources, dest = words
            for pattern in sources:
                several = len(sources) > 1 or any(char in pattern for char in "*?[")
                names = sorted(os.path.relpath(path, ROOT) for path in glob.glob(os.path.join(ROOT, pattern)))
                names = [name for name in names if not ignored(name, rules)]
                if not names:
                    raise Failure(f"Dockerfile:{number}: COPY {pattern}: nothing in the build context matches (missing, or kept out by .dockerignore)")
                for name in names:
                    copied[destination(workdir, dest, name, several)] = name
        elif keyword == "RUN":
            commands = shell_commands(number, rest)
            if commands[0][:1] == ["swift"]:
                if len(commands) != 1:
                    raise Failure(f"Dockerfile:{number}: keep a `RUN swift ...` line to one command")
                swift_commands.append((number, commands[0]))
                continue
            for words in commands:
                if words[:1] == ["export"] or words[:2] == ["rm", "-rf"]:
                    continue
                if words[:1] == ["apt-get"]:
                    for package in apt_packages(words) or []:
                        status = run(["dpkg-query", "-W", "-f=${Status}", package], 30).stdout
                        if "install ok installed" not in status:
                            raise Failure(f"Dockerfile:{number}: the build stage installs {package}, which is not installed here (apt-get install {package})")
                    continue
                raise Failure(f"Dockerfile:{number}: RUN {shlex.join(words)}: not understood by this check")
        else:
            raise Failure(f"Dockerfile:{number}: {keyword} in the build stage is not understood by this check")
    if workdir == "/" or not workdir.startswith("/"):
        raise Failure("Dockerfile: the build stage needs an absolute WORKDIR")
    builds = [words for _, words in swift_commands if words[1:2] == ["build"]]
    if len(builds) != 1:
        raise Failure("Dockerfile: expected exactly one `RUN swift build ...` line in the build stage")
    for required in ("-c release", "--static-swift-stdlib", "--product livelist"):
        if required not in " ".join(builds[0]):
            raise Failure(f"Dockerfile: the swift build line lacks {required}")

    # The mirror of WORKDIR: exactly what the COPY lines put there.
    os.makedirs(CONTEXT, exist_ok=True)
    top_level = {}
    for target, name in copied.items():
        if not (target + "/").startswith(workdir.rstrip("/") + "/"):
            raise Failure(f"Dockerfile: COPY {name} to {target}, outside the build WORKDIR {workdir}")
        inside = os.path.relpath(target, workdir)
        top_level[inside.split("/")[0]] = (name, inside)
    for entry in os.listdir(CONTEXT):
        if entry not in top_level:
            path = os.path.join(CONTEXT, entry)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
    for target, name in copied.items():
        inside = os.path.relpath(target, workdir)
        source = os.path.join(ROOT, name)
        if os.path.isdir(source):
            sync_tree(source, os.path.join(CONTEXT, inside), rules, name)
        else:
            to_path = os.path.join(CONTEXT, inside)
            os.makedirs(os.path.dirname(to_path), exist_ok=True)
            if not os.path.exists(to_path) or open(to_path, "rb").read() != open(source, "rb").read():
                shutil.copy2(source, to_path)

    for number, words in swift_commands:
        argv = words[:2] + ["--scratch-path", SCRATCH] + words[2:]
        if LOCK:
            argv = ["flock", LOCK] + argv
        step(f"Dockerfile:{number}: {shlex.join(words)}")
        began = time.monotonic()
        result = run(argv, cwd=CONTEXT)
        output = result.stdout + result.stderr
        if result.returncode != 0:
            print(output[-6000:], file=sys.stderr)
            raise Failure(f"Dockerfile:{number}: {shlex.join(words)} failed (status {result.returncode})")
        warnings = [line for line in output.splitlines() if re.match(r"^(\S*/)?(Sources|Tests)/[^:]+:\d+:\d+: warning:", line.replace(CONTEXT + "/", ""))]
        if warnings:
            print("\n".join(warnings), file=sys.stderr)
            raise Failure(f"Dockerfile:{number}: the release build has warnings in this project's code")
        print(f"   done in {time.monotonic() - began:.0f} s", flush=True)

    # ---- the run stage
    step(f"run stage {runtime['image']}: the image laid out in an empty directory")
    image = tempfile.mkdtemp(prefix="livelist-image-")
    os.chmod(image, 0o755)
    state = {"image": image, "server": None, "created_user": None}
    try:
        run_stage(runtime, build, workdir, state)
    finally:
        server = state["server"]
        if server is not None and server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        shutil.rmtree(image, ignore_errors=True)
        if state["created_user"]:
            subprocess.run(["userdel", state["created_user"]], stdin=subprocess.DEVNULL, capture_output=True)
    print(f"check-docker: passed in {time.monotonic() - started:.0f} s", flush=True)


def run_stage(runtime, build, build_workdir, state):
    image = state["image"]
    inside = lambda path: os.path.join(image, path.lstrip("/"))
    packages, useradd, made, owned = [], None, [], {}
    env, user, ports, volumes, health, entrypoint, command = {}, None, [], [], None, None, []
    workdir = "/"
    for number, keyword, rest in runtime["lines"]:
        if keyword == "RUN":
            for words in shell_commands(number, rest):
                if words[:1] == ["export"] or words[:3] == ["rm", "-rf", "/var/lib/apt/lists/*"]:
                    continue
                if words[:1] == ["apt-get"]:
                    packages += apt_packages(words) or []
                elif words[:1] == ["useradd"]:
                    useradd = (number, words)
                elif words[:2] == ["mkdir", "-p"]:
                    made += words[2:]
                elif words[:1] == ["chown"] and len(words) >= 3:
                    for path in words[2:]:
                        owned[path] = words[1]
                else:
                    raise Failure(f"Dockerfile:{number}: RUN {shlex.join(words)}: not understood by this check")
        elif keyword == "WORKDIR":
            workdir = rest
        elif keyword == "COPY":
            words = shlex.split(rest)
            if len(words) != 3 or words[0] != f"--from={build['name']}":
                raise Failure(f"Dockerfile:{number}: COPY {rest}: the run stage copies single paths from the build stage (COPY --from={build['name']} SOURCE DEST)")
            source, dest = words[1], words[2]
            prefix = build_workdir.rstrip("/") + "/"
            if source.startswith(prefix + ".build/"):
                local = os.path.join(SCRATCH, source[len(prefix + ".build/"):])
            elif source.startswith(prefix):
                local = os.path.join(CONTEXT, source[len(prefix):])
            else:
                raise Failure(f"Dockerfile:{number}: COPY --from={build['name']} {source}: not inside the build WORKDIR {build_workdir}")
            if not os.path.exists(local):
                raise Failure(f"Dockerfile:{number}: {source} does not exist after the build (here: {local})")
            target = inside(dest if dest.startswith("/") else os.path.join(workdir, dest))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.isdir(local):
                shutil.copytree(local, target, symlinks=False)
            else:
                shutil.copy2(local, target)
            print(f"   {source} -> {dest}", flush=True)
        elif keyword == "ENV":
            env.update(env_pairs(number, rest))
        elif keyword == "USER":
            user = rest.split(":")[0]
        elif keyword == "EXPOSE":
            ports += [int(word.split("/")[0]) for word in rest.split()]
        elif keyword == "VOLUME":
            volumes += json.loads(rest) if rest.startswith("[") else rest.split()
        elif keyword == "HEALTHCHECK":
            words = rest.split()
            position = [word.upper() for word in words].index("CMD") if "CMD" in [word.upper() for word in words] else -1
            if position < 0:
                raise Failure(f"Dockerfile:{number}: HEALTHCHECK without CMD")
            options = dict(word[2:].split("=", 1) for word in words[:position])
            health = (number, exec_form(number, " ".join(words[position + 1:]), "HEALTHCHECK CMD"), options)
        elif keyword == "ENTRYPOINT":
            entrypoint = exec_form(number, rest, "ENTRYPOINT")
        elif keyword == "CMD":
            command = exec_form(number, rest, "CMD")
        else:
            raise Failure(f"Dockerfile:{number}: {keyword} in the run stage is not understood by this check")

    # Agreement between the lines.
    if not user or user in ("root", "0"):
        raise Failure("Dockerfile: the run stage needs a USER that is not root")
    if not useradd or useradd[1][-1] != user:
        raise Failure(f"Dockerfile: the run stage must create its USER {user} with `useradd ... {user}`")
    port = int(env.get("LIVELIST_PORT", "8080"))
    if ports != [port]:
        raise Failure(f"Dockerfile: EXPOSE {ports} is not the port the server listens on ({port}, LIVELIST_PORT)")
    if env.get("LIVELIST_HOST") not in ("0.0.0.0", "::"):
        raise Failure("Dockerfile: ENV LIVELIST_HOST must be 0.0.0.0 so that the server is reachable from outside the container")
    data = env.get("LIVELIST_DATA")
    if not data or volumes != [data]:
        raise Failure(f"Dockerfile: VOLUME {volumes} is not the data directory (LIVELIST_DATA={data})")
    for volume in volumes:
        if volume not in made or owned.get(volume, "").split(":")[0] != user:
            raise Failure(f"Dockerfile: the run stage must create {volume} owned by {user} (mkdir -p, chown), or the server cannot write to the volume")
    if "LIVELIST_WRITE_TOKEN" in env:
        raise Failure("Dockerfile: never bake LIVELIST_WRITE_TOKEN into the image; pass it with docker run -e")
    if not health or not entrypoint:
        raise Failure("Dockerfile: the run stage needs a HEALTHCHECK and an ENTRYPOINT")
    check_readme(port, data)

    # Runtime libraries: exactly those the binary links that the slim image lacks.
    binary = inside(entrypoint[0])
    if not os.access(binary, os.X_OK):
        raise Failure(f"Dockerfile: ENTRYPOINT {entrypoint[0]} is not an executable the COPY lines put in the image")
    needed = set()
    for line in run(["ldd", binary], 30).stdout.splitlines():
        if "not found" in line:
            raise Failure(f"ldd {entrypoint[0]}: {line.strip()}")
        found = re.search(r"=> (/\S+)", line) or re.match(r"\s*(/\S+)", line)
        if not found:
            continue
        path = os.path.realpath(found[1])
        owners = set()
        for candidate in {found[1], path, re.sub(r"^/usr/", "/", path), "/usr" + path if not path.startswith("/usr/") else path}:
            result = run(["dpkg-query", "-S", candidate], 30)
            if result.returncode == 0:
                owners |= {entry.split(":")[0].strip() for entry in result.stdout.splitlines()[0].split(": ")[0].split(",")}
        if not owners:
            raise Failure(f"ldd {entrypoint[0]}: {found[1]} comes from no Debian package (is the standard library linked statically?)")
        needed |= owners
    needed -= BASE_PACKAGES
    installed = set(packages)
    if needed - installed:
        raise Failure(f"Dockerfile: the binary links {sorted(needed - installed)} but the run stage does not install it")
    extra = {package for package in installed - needed if package.startswith(("lib", "zlib"))}
    if extra:
        raise Failure(f"Dockerfile: the run stage installs {sorted(extra)}, which the binary does not link")
    print(f"   ldd: {sorted(needed)} installed by the run stage; nothing else beyond {sorted(BASE_PACKAGES)}", flush=True)

    # The unprivileged user.
    uid = gid = None
    if os.getuid() == 0:
        import pwd
        try:
            record = pwd.getpwnam(user)
        except KeyError:
            result = run(["useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", user], 30)
            if result.returncode != 0:
                raise Failure(f"useradd {user}: {result.stderr.strip()}")
            state["created_user"] = user
            record = pwd.getpwnam(user)
        uid, gid = record.pw_uid, record.pw_gid
    else:
        print(f"check-docker: warning: not root, so the server runs as {os.getuid()} instead of {user}", flush=True)
    for path in made:
        os.makedirs(inside(path), exist_ok=True)
        if path in owned and uid is not None:
            os.chown(inside(path), uid, gid)
    os.makedirs(inside(workdir), exist_ok=True)
    for directory, _, _ in os.walk(image):
        os.chmod(directory, os.stat(directory).st_mode | 0o555)

    # The environment of the container: PATH, HOME and the ENV lines, image paths made local.
    test_port = free_port()
    base = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": inside(workdir)}
    for name, value in env.items():
        base[name] = inside(value) if value.startswith("/") else value
    server_env = dict(base, LIVELIST_HOST="127.0.0.1", LIVELIST_PORT=str(test_port), LIVELIST_WRITE_TOKEN=TOKEN)
    argv = [inside(entrypoint[0])] + entrypoint[1:] + command
    step(f"ENTRYPOINT {shlex.join(entrypoint + command)} as {user} on 127.0.0.1:{test_port}")
    log = tempfile.TemporaryFile(mode="w+")
    identity = {"user": uid, "group": gid, "extra_groups": []} if uid is not None else {}
    server = subprocess.Popen(argv, cwd=inside(workdir), env=server_env, stdin=subprocess.DEVNULL, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True, **identity)
    state["server"] = server

    def server_log():
        log.seek(0)
        return log.read()[-4000:]

    try:
        base_url = f"http://127.0.0.1:{test_port}"
        waited = time.monotonic() + remaining(20)
        while True:
            if server.poll() is not None:
                raise Failure(f"the server exited with status {server.returncode}:\n{server_log()}")
            status, body = curl(base_url + "/healthz")
            if status == 200:
                break
            if time.monotonic() > waited:
                raise Failure(f"/healthz did not answer 200 within 20 s:\n{server_log()}")
            time.sleep(0.2)
        if body.strip() != "ok":
            raise Failure(f"/healthz answered {body!r}")
        print("   GET /healthz: 200 ok", flush=True)
        status, body = curl(base_url + "/lists/todo")
        if status != 200 or 'data-list="todo"' not in body:
            raise Failure(f"GET /lists/todo: {status}, not the todo page (are Templates/ in place?)")
        script = re.search(r'/livelist\.js\?v=[0-9a-f]+', body)
        if not script or curl(base_url + script[0])[0] != 200:
            raise Failure("the page's client script is not served (is Public/ in place?)")
        print(f"   GET /lists/todo: 200 with the list; GET {script[0]}: 200", flush=True)
        state_body = '{"sections":[{"id":"a","cells":[{"id":"x","text":"from the container"}]}]}'
        status, _ = curl(base_url + "/lists/docker-check", "-X", "PUT", "-H", "Content-Type: application/json", "--data", state_body)
        if status != 401:
            raise Failure(f"PUT without the write token: {status}, expected 401")
        status, _ = curl(base_url + "/lists/docker-check", "-X", "PUT", "-H", "Content-Type: application/json",
                         "-H", f"Authorization: Bearer {TOKEN}", "--data", state_body)
        if status != 201:
            raise Failure(f"PUT with the write token from the environment: {status}, expected 201")
        if not os.listdir(inside(env["LIVELIST_DATA"])):
            raise Failure(f"nothing was written to the volume {env['LIVELIST_DATA']}")
        print(f"   PUT without the token: 401; with LIVELIST_WRITE_TOKEN: 201, stored in {env['LIVELIST_DATA']}", flush=True)

        number, health_argv, options = health
        limit = parse_duration(options.get("timeout", "30s"))
        health_env = dict(base, LIVELIST_PORT=str(test_port))
        probe = [inside(health_argv[0])] + health_argv[1:]
        result = run(probe, limit + 2, env=health_env, cwd=inside(workdir), **identity)
        if result.returncode != 0:
            raise Failure(f"Dockerfile:{number}: HEALTHCHECK {shlex.join(health_argv)} exited {result.returncode}: {result.stdout}{result.stderr}")
        closed = dict(health_env, LIVELIST_PORT=str(free_port()))
        result = run(probe, limit + 2, env=closed, cwd=inside(workdir), **identity)
        if result.returncode != 1:
            raise Failure(f"HEALTHCHECK against a closed port exited {result.returncode}, expected 1")
        print(f"   HEALTHCHECK {shlex.join(health_argv)}: 0 against the server, 1 against a closed port", flush=True)

        os.kill(server.pid, signal.SIGTERM)
        try:
            code = server.wait(timeout=remaining(10))
        except subprocess.TimeoutExpired:
            raise Failure(f"SIGTERM: the server did not exit within 10 s:\n{server_log()}")
        if code != 0:
            raise Failure(f"SIGTERM: the server exited with status {code}, expected 0:\n{server_log()}")
        print("   SIGTERM: exit status 0", flush=True)
    finally:
        log.close()


def check_readme(port, volume):
    """The README's Docker commands must fit the Dockerfile: the tag built is the image run, the
    published port is the one exposed, the volume is mounted at the data directory, and -e passes
    only variables the server reads."""
    text = open(os.path.join(ROOT, "README.md")).read()
    section = re.search(r"^## Docker\n(.*?)(?=^## )", text, re.M | re.S)
    block = section and re.search(r"```sh\n(.*?)```", section[1], re.S)
    if not block:
        raise Failure("README.md: no ```sh block in its Docker section")
    commands = [shlex.split(line) for line in block[1].splitlines() if line.strip()]
    builds = [words for words in commands if words[:2] == ["docker", "build"]]
    runs = [words for words in commands if words[:2] == ["docker", "run"]]
    if len(builds) != 1 or len(runs) != 1:
        raise Failure("README.md: the Docker section should show one docker build and one docker run")
    build, run_words = builds[0], runs[0]
    if build[-1] != "." or "-t" not in build:
        raise Failure("README.md: docker build should tag (-t) the image built from this directory (.)")
    tag = build[build.index("-t") + 1]
    options = {}
    index = 2
    while index < len(run_words) and run_words[index].startswith("-"):
        options.setdefault(run_words[index], []).append(run_words[index + 1])
        index += 2
    if run_words[index:] != [tag]:
        raise Failure(f"README.md: docker run should run the image {tag} that docker build tags")
    if [value.split(":")[-1] for value in options.get("-p", [])] != [str(port)]:
        raise Failure(f"README.md: docker run -p {options.get('-p')} does not publish the port the image exposes ({port})")
    if [value.split(":", 1)[-1] for value in options.get("-v", [])] != [volume]:
        raise Failure(f"README.md: docker run -v {options.get('-v')} does not mount the volume {volume}")
    for value in options.get("-e", []):
        name = value.split("=", 1)[0]
        if not re.fullmatch(r"LIVELIST_(HOST|PORT|PUBLIC|TEMPLATES|DATA|WRITE_TOKEN|LOG_LEVEL)", name):
            raise Failure(f"README.md: docker run -e {name}: not a variable the server reads")
    if "LIVELIST_WRITE_TOKEN" not in [value.split("=", 1)[0] for value in options.get("-e", [])]:
        raise Failure("README.md: docker run should pass LIVELIST_WRITE_TOKEN (-e), or the container takes no writes")
    print(f"   README: docker build -t {tag} . and docker run {' '.join(run_words[2:])} fit the Dockerfile", flush=True)


def curl(url, *extra):
    result = run(["curl", "-sS", "--max-time", "5", "-o", "-", "-w", "\n%{http_code}", *extra, url], 10)
    body, _, status = result.stdout.rpartition("\n")
    return (int(status) if status.isdigit() else 0), body


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def parse_duration(text):
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)", text)
    if not match:
        raise Failure(f"HEALTHCHECK --timeout={text}: expected a duration like 5s")
    return float(match[1]) * {"ms": 0.001, "s": 1, "m": 60}[match[2]]


def terminated(signum, frame):
    raise Failure(f"stopped by signal {signum}")


signal.signal(signal.SIGTERM, terminated)
signal.signal(signal.SIGHUP, terminated)
try:
    main()
except Failure as failure:
    print(f"check-docker: FAILED: {failure}", file=sys.stderr)
    sys.exit(1)
except KeyboardInterrupt:
    sys.exit(130)
PYTHON
