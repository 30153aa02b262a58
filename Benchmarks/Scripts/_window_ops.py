"""The changesets that window.py times: which cells each op touches, drawn from a seeded random.Random.
Kept apart so that window.py stays within the house's 450 lines."""


def off_screen_ops(rng, keys, window, top, serial, texts):
    """1,000 ops of which 990 are on cells outside `window`: 590 text updates, 200 moves, 100 removes,
    then 100 inserts (so the list never grows past its size), and 10 text updates in the window."""
    inside = set(window)
    outside = [k for k in keys if k not in inside]
    picked = rng.sample(outside, 890)
    removed = set(picked[790:890])
    anchors = [k for k in outside if k not in removed]
    ops = [{"op": "update", "cell": {"id": k, "text": f"Changed {serial} {k}"}} for k in picked[:590]]
    for k in picked[590:790]:  # a move only: the text it has, after another cell
        after = rng.choice(anchors)
        while after == k:
            after = rng.choice(anchors)
        ops.append({"op": "upsert", "cell": {"id": k, "text": texts[k]}, "section": "a", "position": {"after": after}})
    ops += [{"op": "remove", "cell": k} for k in picked[790:890]]
    ops += [{"op": "upsert", "cell": {"id": f"n{serial}-{i}", "text": f"New {i}"}, "section": "a", "position": {"after": rng.choice(anchors)}}
            for i in range(100)]
    ops += [{"op": "update", "cell": {"id": k, "text": f"Seen {serial} {k}"}} for k in rng.sample(window, min(10, len(window)))]
    return ops


def near_ops(rng, keys, window, top, serial, texts):
    """1,000 ops on the 1,000 cells from 250 before the viewport's top cell: 500 text updates, 250
    removes, then 250 inserts after surviving cells of that block."""
    i = max(0, min(keys.index(top) - 250, len(keys) - 1000))
    block = keys[i:i + 1000]
    order = block[:]
    rng.shuffle(order)
    removed = set(order[500:750])
    kept = [k for k in block if k not in removed]
    ops = [{"op": "update", "cell": {"id": k, "text": f"Near {serial} {k}"}} for k in order[:500]]
    ops += [{"op": "remove", "cell": k} for k in order[500:750]]
    ops += [{"op": "upsert", "cell": {"id": f"m{serial}-{j}", "text": f"Near new {j}"}, "section": "a", "position": {"after": rng.choice(kept)}}
            for j in range(250)]
    return ops


def one_op(rng, keys, window, top, serial, texts):
    """One text update of a cell outside `window`: what any changeset costs, however small."""
    inside = set(window)
    k = rng.choice([k for k in keys if k not in inside])
    return [{"op": "update", "cell": {"id": k, "text": f"One {serial} {k}"}}]
