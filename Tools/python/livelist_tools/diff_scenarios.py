"""Independent generator of the diff benchmark scenarios of docs/DIFF-SCENARIOS.md.

It rebuilds the inputs from the document's definitions alone (SplitMix64, Fisher-Yates, `mutate`,
families R, M, E and S) and prints the FNV-1a 64 fingerprint of each source and target, so that the
Swift generator in Benchmarks/Sources/DiffScenarios is cross-checked by a second implementation.

    python3 -m livelist_tools.diff_scenarios          # every scenario but the 1M ones (a few seconds)
    python3 -m livelist_tools.diff_scenarios --all    # the 1M ones too (about 20 s)
    python3 -m livelist_tools.diff_scenarios M-5k S-100x1000

Exit status: 0 when every fingerprint printed equals the document's table, 1 otherwise.
Standard library only.
"""

import argparse
import sys
import time

MASK = (1 << 64) - 1


class SplitMix64:
    """SplitMix64 as docs/DIFF-SCENARIOS.md defines it; all arithmetic wraps at 64 bits."""

    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n):
        """`next() % n`, plain modulo."""
        return self.next() % n


def fisher_yates(a, lo, hi, rng):
    """Shuffles a[lo:hi] in place: for local i from hi-lo-1 down to 1, j = below(i+1), swap."""
    for i in range(hi - lo - 1, 0, -1):
        j = rng.below(i + 1)
        a[lo + i], a[lo + j] = a[lo + j], a[lo + i]


# Elements. An item (and a section model) is a tuple (id, payload); a UUID is its 16 bytes; a section
# is a tuple (model, cells).


def make_uuid(rng):
    """Bytes 0..7: little-endian first draw; bytes 8..15: little-endian second draw."""
    a = rng.next()
    b = rng.next()
    return a.to_bytes(8, "little") + b.to_bytes(8, "little")


def mutate(source, d, u, m, fresh, update, rng):
    """The `mutate` procedure of docs/DIFF-SCENARIOS.md (delete d, update u, relocate m, insert `fresh`)."""
    n = len(source)
    perm = list(range(n))
    for t in range(d + u + m):
        j = t + rng.below(n - t)
        perm[t], perm[j] = perm[j], perm[t]
    deleted = set(perm[:d])
    updated = set(perm[d:d + u])
    moved = perm[d + u:d + u + m]
    moved_set = set(moved)

    stay = []
    for k, x in enumerate(source):
        if k in deleted or k in moved_set:
            continue
        stay.append(update(x) if k in updated else x)

    queue = [source[k] for k in moved] + list(fresh)
    by_gap = [[] for _ in range(len(stay) + 1)]
    for q in queue:  # gaps are drawn in queue order
        by_gap[rng.below(len(stay) + 1)].append(q)

    out = []
    for g in range(len(stay) + 1):
        out.extend(by_gap[g])
        if g < len(stay):
            out.append(stay[g])
    return out


def set_payload_1(x):
    return (x[0], 1)


# Fingerprints (FNV-1a 64; integers as 8 little-endian bytes).

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3


class FNV:
    def __init__(self):
        self.h = FNV_OFFSET

    def feed_bytes(self, data):
        h = self.h
        for byte in data:
            h = ((h ^ byte) * FNV_PRIME) & MASK
        self.h = h

    def feed_int(self, value):
        self.feed_bytes((value & MASK).to_bytes(8, "little"))


def fp_items(items):
    f = FNV()
    f.feed_int(len(items))
    for ident, payload in items:
        f.feed_int(ident)
        f.feed_int(payload)
    return f.h


def fp_uuids(uuids):
    f = FNV()
    f.feed_int(len(uuids))
    for u in uuids:
        f.feed_bytes(u)
    return f.h


def fp_sections(sections):
    f = FNV()
    f.feed_int(len(sections))
    for (model_id, model_payload), cells in sections:
        f.feed_int(model_id)
        f.feed_int(model_payload)
        f.feed_int(len(cells))
        for ident, payload in cells:
            f.feed_int(ident)
            f.feed_int(payload)
    return f.h


# Scenarios.

R_PARAMS = {
    "5k": (5000, (2000, 3000), (3000, 4000), (0, 200), 1),
    "100k": (100000, (20000, 30000), (30000, 40000), (0, 2000), 2),
    "1M": (1000000, (200000, 300000), (300000, 400000), (0, 20000), 3),
}


def build_r_uuid(size):
    count, (d0, d1), (i0, i1), (s0, s1), seed = R_PARAMS[size]
    rng = SplitMix64(seed)
    source = [make_uuid(rng) for _ in range(count)]
    target = source[:d0] + source[d1:]
    block = [make_uuid(rng) for _ in range(i1 - i0)]
    target[i0:i0] = block
    fisher_yates(target, s0, s1, rng)
    return fp_uuids(source), fp_uuids(target)


def build_r_int(size):
    count, (d0, d1), (i0, i1), (s0, s1), seed = R_PARAMS[size]
    source = [(k, 0) for k in range(count)]
    target = source[:d0] + source[d1:]
    target[i0:i0] = [(count + j, 0) for j in range(i1 - i0)]
    fisher_yates(target, s0, s1, SplitMix64(seed))
    return fp_items(source), fp_items(target)


def build_m(n, changes, seed):
    source = [(k, 0) for k in range(n)]
    fresh = [(n + j, 0) for j in range(changes)]
    target = mutate(source, changes, changes, changes, fresh, set_payload_1, SplitMix64(seed))
    return fp_items(source), fp_items(target)


def build_e(n):
    items = [(k, 0) for k in range(n)]
    fp = fp_items(items)
    return fp, fp


def build_s():
    rng = SplitMix64(21)
    # 1. Source.
    source = [((s, 0), [(s * 1000 + c, 0) for c in range(1000)]) for s in range(100)]
    cells_of_model = {model[0]: cells for model, cells in source}
    # 2. Section list.
    models = [model for model, _ in source]
    target_models = mutate(models, 5, 5, 5, [(100 + j, 0) for j in range(5)], set_payload_1, rng)
    # 3. Cells, in target order.
    next_id = 1_000_000
    target = []
    from_source = []  # O
    for model in target_models:
        if model[0] in cells_of_model:
            fresh = [(next_id + j, 0) for j in range(10)]
            next_id += 10
            cells = mutate(cells_of_model[model[0]], 10, 10, 10, fresh, set_payload_1, rng)
            from_source.append(len(target))
        else:
            cells = [(next_id + j, 0) for j in range(1000)]
            next_id += 1000
        target.append((model, cells))
    # 4. Cross-section moves.
    for k in range(20):
        a = target[from_source[2 * k]][1]
        b = target[from_source[2 * k + 1]][1]
        p = rng.below(len(a))
        cell = a.pop(p)
        g = rng.below(len(b) + 1)
        b.insert(g, cell)
    return fp_sections(source), fp_sections(target)


# name -> (builder, expected source fp, expected target fp, million-scale)
SCENARIOS = {
    "R-UUID-5k": (lambda: build_r_uuid("5k"), 0xD60F077251FB3D22, 0x49AEF9A9BF2EB8E3, False),
    "R-UUID-100k": (lambda: build_r_uuid("100k"), 0x655BCA722FF941C4, 0xDE73CB4E1E64482A, False),
    "R-UUID-1M": (lambda: build_r_uuid("1M"), 0x204333DFB0EC2D04, 0x26E5CF9155946F24, True),
    "R-Int-5k": (lambda: build_r_int("5k"), 0x538BD1A36E58A2EC, 0x67D2737482FF032C, False),
    "R-Int-100k": (lambda: build_r_int("100k"), 0x6AD1B5C5899B620A, 0xA98420FA971D7FA6, False),
    "R-Int-1M": (lambda: build_r_int("1M"), 0x9738693B65993348, 0x22210EEE69539530, True),
    "M-1k": (lambda: build_m(1000, 10, 11), 0x09E3845FD7D9207C, 0x2F693E88E775D4F8, False),
    "M-5k": (lambda: build_m(5000, 200, 12), 0x538BD1A36E58A2EC, 0x7B8C369946A08F85, False),
    "M-100k": (lambda: build_m(100000, 4000, 13), 0x6AD1B5C5899B620A, 0xA0491FC64A7FF693, False),
    "M-1M": (lambda: build_m(1000000, 40000, 14), 0x9738693B65993348, 0xA3E1DF897A2350CC, True),
    "E-100k": (lambda: build_e(100000), 0x6AD1B5C5899B620A, 0x6AD1B5C5899B620A, False),
    "S-100x1000": (build_s, 0x8A0F393E1668E305, 0xB79F61FD5E86920E, False),
}


def main():
    parser = argparse.ArgumentParser(prog="python3 -m livelist_tools.diff_scenarios", description=__doc__.split("\n\n")[0])
    parser.add_argument("--all", action="store_true", help="include the 1M scenarios (slow in Python)")
    parser.add_argument("names", nargs="*", help="scenarios to build (default: all but the 1M ones)")
    args = parser.parse_args()

    unknown = [name for name in args.names if name not in SCENARIOS]
    if unknown:
        parser.error("unknown scenario(s) %s; known: %s" % (", ".join(unknown), ", ".join(SCENARIOS)))
    names = args.names or [name for name, spec in SCENARIOS.items() if args.all or not spec[3]]

    print("| scenario | source fp | target fp | matches docs/DIFF-SCENARIOS.md |")
    print("|---|---|---|---|")
    failures = 0
    for name in names:
        build, want_source, want_target, _ = SCENARIOS[name]
        started = time.monotonic()
        source_fp, target_fp = build()
        ok = source_fp == want_source and target_fp == want_target
        failures += 0 if ok else 1
        print("| %s | %016x | %016x | %s |" % (name, source_fp, target_fp, "ok" if ok else "**MISMATCH**"), flush=True)
        print("  %s built in %.1f s" % (name, time.monotonic() - started), file=sys.stderr)
    skipped = [name for name in SCENARIOS if name not in names]
    if skipped and not args.names:
        print("\n(skipped %s; pass --all to build them)" % ", ".join(skipped))
    print("\n%d of %d fingerprint pairs match docs/DIFF-SCENARIOS.md." % (len(names) - failures, len(names)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
