/*! LiveList windowed lists: docs/PROTOCOL.md; source: livelist-window.src.js */
/* livelist.js loads this file for a page with a windowed list (a root with data-window) and hands it
 * every changeset of such a list (window.LLW). It keeps the list's model: every key in order (a linked
 * list per section, so an op costs the same anywhere in a list of any length), the HTML it knows and
 * the heights it measured. It renders only the cells near the viewport, between two placeholders whose
 * heights keep the scrollbar true; a change off screen changes the model and nothing else. Cells that
 * scroll into view come from GET /lists/NAME/cells at the client's version. API: LLW.jump(root, key or
 * index) brings a cell into view (#KEY in the URL does so on load); LLW.keys(root) is every key, in order
 * (null while they load). At most 300 cells are in the DOM at once. */
(() => {
  const D = document, W = window, T = D.createElement('template'),
    M = new Map(), // root element -> model
    E = new WeakMap(), // cell element -> the HTML it was made from
    enc = encodeURIComponent,
    meta = n => (D.querySelector(`meta[name="${n}"]`) || {}).content,
    url = p => (meta('livelist-base') || '') + p,
    fail = () => { throw Error('livelist: out of sync') },
    parse = h => (T.innerHTML = h, T.content.firstElementChild || fail()),
    rect = e => e.getBoundingClientRect(),
    ver = (m, v) => { m.r.dataset.version = m.v = v },
    // A cell is held (not replaced) while the user is in one of its text fields.
    busy = (e, a = D.activeElement) => e.contains(a) && a.matches('input,textarea,select'),
    // Scrolls by d unless it is less than a pixel (rounding would make the redraws move it back and forth).
    nudge = (sc, d) => (d > 1 || d < -1) && (sc.scrollTop += d),
    mv = (p, e, ref) => { try { return p.moveBefore(e, ref) } catch (_) { p.insertBefore(e, ref) } },
    att = (e, a, v) => e.getAttribute(a) != v && e.setAttribute(a, v),
    hash = () => { try { return decodeURIComponent(location.hash.slice(1)) } catch (_) {} };

  // The model. Sections (q): an array of {k, html, hd, ft, b}; each section's keys in order in blocks of at
  // most 512 (b: [{x: its section, k: [keys], y: their heights' sum, once computed}]), so that an op
  // costs a block's length, and a frame the number of blocks, on a list of any length. L: the block
  // of each key; H: the HTML known by key; h: measured heights by key.
  function sec(m, k, html, hd, ft, i) {
    const x = { k, html, hd, ft, h0: hd != null, b: [] }; // h0: whether html holds a header
    m.sx.set(k, x); m.q.splice(i, 0, x);
  }
  const at = (m, a) => a == null ? 0 : m.q.indexOf(m.sx.get(a) || fail()) + 1,
    blk = (m, k) => m.L.get(k) || fail();
  // Puts key k into section s after key a (null: first); a full block splits in two.
  function put(m, k, s, a) {
    const x = m.sx.get(s) || fail(), b = a == null ? x.b[0] || (x.b[0] = { x, k: [] }) : blk(m, a);
    b.x != x && fail();
    b.k.splice(a == null ? 0 : b.k.indexOf(a) + 1, 0, k); b.y = null; m.L.set(k, b);
    if (b.k.length > 512) {
      const n = { x, k: b.k.splice(256) };
      for (const c of n.k) m.L.set(c, n);
      x.b.splice(x.b.indexOf(b) + 1, 0, n);
    }
  }
  function take(m, k) {
    const b = blk(m, k);
    b.k.splice(b.k.indexOf(k), 1); b.y = null; m.L.delete(k);
    b.k.length || b.x.b.splice(b.x.b.indexOf(b), 1);
  }
  const gone = (m, k) => { for (const t of [m.L, m.H, m.h]) t.delete(k) },
    count = x => x.b.reduce((n, b) => n + b.k.length, 0);
  // A new model from sections in snapshot form (cells) or the range route's (keys); none with `part`
  // (a windowed reset: the keys come with the next load).
  function build(m, ss, part) {
    Object.assign(m, { q: [], sx: new Map(), L: new Map(), load: part });
    for (const s of ss) {
      sec(m, s.key, s.html, s.header, s.footer, m.q.length);
      const x = m.sx.get(s.key), ks = part ? [] : s.keys || s.cells.map(c => c.key);
      for (let i = 0; i < ks.length; i += 256) {
        const b = { x, k: ks.slice(i, i + 256) };
        x.b.push(b);
        for (const c of b.k) m.L.set(c, b);
      }
    }
  }

  const OPS = {
    deleteSection(m, o) {
      const x = m.sx.get(o.section) || fail();
      for (const b of x.b) for (const k of b.k) gone(m, k);
      m.sx.delete(o.section); m.q.splice(m.q.indexOf(x), 1);
    },
    insertSection: (m, o) => (m.sx.has(o.section) && fail(), sec(m, o.section, o.html, o.header, o.footer, at(m, o.after))),
    moveSection(m, o) {
      const x = m.sx.get(o.section) || fail();
      m.q.splice(m.q.indexOf(x), 1); m.q.splice(at(m, o.after), 0, x);
    },
    reloadSection(m, o) { const x = m.sx.get(o.section) || fail(); x.hd = o.header; x.ft = o.footer },
    delete: (m, o) => (take(m, o.cell), gone(m, o.cell)),
    insert: (m, o) => (m.L.has(o.cell) && fail(), put(m, o.cell, o.section, o.after), m.H.set(o.cell, o.html)),
    move: (m, o) => (o.after == o.cell && fail(), take(m, o.cell), put(m, o.cell, o.section, o.after)),
    reload: (m, o) => (blk(m, o.cell), m.H.set(o.cell, o.html)),
    // A reset with `total` is windowed: its cells are a window, the keys come from the range route.
    reset(m, o) {
      m.H = new Map();
      for (const s of o.sections) for (const c of s.cells) m.H.set(c.key, c.html);
      build(m, o.sections, o.total != null);
    }
  };

  // Protocol rules (docs/PROTOCOL.md, "Applying changesets"), on the model; the DOM follows at the next
  // frame. While the keys load, changesets are left to the load (it brings the version forward).
  function apply(r, cs, force) {
    const m = mod(r), ops = cs.ops || [], reset = ops.length == 1 && ops[0].op == 'reset';
    if (!force) {
      if (cs.version <= m.v) return false;
      if (m.load || cs.from != m.v && !reset) return m.load || LiveList.resync(r), false;
    }
    try { for (const o of ops) (OPS.hasOwnProperty(o.op) ? OPS[o.op] : fail)(m, o) } catch (_) {
      // Not what the server thinks: the model again from the server, and every cell's HTML with it.
      m.H = new Map(); load(m); return false;
    }
    ver(m, cs.version);
    m.load ? load(m) : redo(m);
    r.dispatchEvent(new CustomEvent('livelist:patch', { bubbles: true, detail: cs }));
    return true;
  }

  // GET /lists/NAME/cells: with keys, the whole model (at the current version; what changed since
  // ours updates the HTML we know); else the cells from..from+n, merged when at our version.
  function load(m) { m.load = 1; get(m, m.a || +m.r.dataset.first || 0, 100, 1) }
  function get(m, a, n, keys) {
    if (!keys && m.pend) return;
    m.pend = 1;
    fetch(url(`/lists/${enc(m.name)}/cells?from=${a}&count=${n}&version=${m.v}` + (keys ? '&keys=1' : '')))
      .then(x => x.ok ? x.json() : Promise.reject())
      .then(j => {
        m.pend = 0;
        if (keys) {
          const c = j.changes;
          for (const o of c ? c.ops : []) o.op == 'reset' ? m.H = new Map() : o.cell != null && o.html != null && m.H.set(o.cell, o.html);
          build(m, j.sections, 0); ver(m, j.version);
          LiveList.resync(m.r); // what came while the keys loaded
        } else if (m.load) return; else j.changes && apply(m.r, j.changes);
        if (j.version == m.v) for (const c of j.cells) m.H.set(c.key, c.html);
        else return setTimeout(() => redo(m), 500);
        // After the keys: the cell that a jump during the load, or the URL's #KEY, asked for.
        const t = keys ? m.jt || hash() : 0;
        m.jt = 0;
        t && jump(m.r, t) || redo(m);
      }, () => { m.pend = 0; m.off || setTimeout(() => keys ? load(m) : redo(m), 2000) });
  }

  // Heights: a cell not measured yet counts the average of the first cells measured (or the root's
  // data-cell-height), fixed from then on: a moving average would move every row below the window at
  // each frame. What a section has above its cells (its header) counts before them (measured, else the
  // first measured).
  function est(m) {
    const d = m.r.dataset, avg = t => { let s = 0; for (const v of t.values()) s += v; return t.size && s / t.size };
    if (!m.e0 && (m.e0 = d.fixedHeight == 'true' ? +d.cellHeight : avg(m.h))) for (const x of m.q) for (const b of x.b) b.y = null;
    m.c0 = m.c0 || avg(m.c);
    return m.est = m.e0 || +d.cellHeight;
  }
  const bh = (m, b) => b.y ?? (b.y = b.k.reduce((s, k) => s + (m.h.get(k) ?? m.est), 0)),
    ch = (m, x) => m.c.get(x.k) ?? m.c0,
    nth = (m, t) => { for (const x of m.q) for (const b of x.b) { if (t < b.k.length) return b.k[t]; t -= b.k.length } };
  // Where cell k starts, from the root's top (-1: no such cell).
  function off(m, k) {
    let y = 0;
    for (const x of m.q) {
      y += ch(m, x);
      for (const b of x.b) {
        if (b != m.L.get(k)) { y += bh(m, b); continue }
        for (const c of b.k) { if (c == k) return y; y += m.h.get(c) ?? m.est }
      }
    }
    return -1;
  }
  // The cells from the first that ends below `from` on, until one starts below `to` (at most 300), by
  // section: [[section, [[key, position in its section, in the list], …]], …], and where the first
  // section's element starts (its header above its first cell shown; -1: no cell there).
  function walk(m, from, to) {
    const show = [];
    let y = 0, g = 0, top = -1, n = 0;
    for (const x of m.q) {
      const c = ch(m, x), cs = [];
      let j = 0;
      y += c;
      if (top >= 0 && (y > to || n >= 300)) break;
      for (const b of x.b) {
        if (top < 0 && y + bh(m, b) <= from) { y += b.y; j += b.k.length; g += b.k.length; continue }
        for (const k of b.k) {
          const h = m.h.get(k) ?? m.est;
          if (top < 0) { if (y + h <= from) { y += h; j++; g++; continue } top = y - c; m.a = g }
          if (y > to || n++ >= 300) break;
          cs.push([k, j++, g++]); y += h;
        }
        if (top >= 0 && (y > to || n >= 300)) break;
      }
      top >= 0 && show.push([x, cs]);
    }
    return [show, top];
  }
  function scroller(e) {
    for (e = e.parentElement; e; e = e.parentElement) if (/auto|scroll/.test(getComputedStyle(e).overflowY) && e.scrollHeight > e.clientHeight) return e;
    return D.scrollingElement;
  }
  // A frame draws the window; a scroll's frame only when the window no longer reaches half a screen
  // beyond the viewport, a change's (redo) always.
  const frame = m => m.raf || (m.raf = requestAnimationFrame(() => { m.raf = 0; draw(m) })),
    redo = m => frame(m, m.d = 1);

  // The window: the cells within a viewport's height of the viewport, reconciled by key (an element
  // whose HTML is unchanged stays, with its focus and state); cells without HTML yet are placeholders
  // until the range route answers. Then the heights are measured and the placeholders sized.
  function draw(m) {
    const r = m.r, g0 = m.g0, g1 = m.g1;
    if (m.load || m.off || !r.isConnected) return;
    est(m);
    // The window: the viewport and mg above and below it (a screen, at most 2,000 px).
    const sc = scroller(r), doc = sc == D.scrollingElement, vt = doc ? 0 : rect(sc).top, vh = doc ? innerHeight : sc.clientHeight,
      mg = Math.min(vh, 2e3), T = m.q.reduce((t, x) => t + ch(m, x) + x.b.reduce((s, b) => s + bh(m, b), 0), 0);
    // The cell kept in place: a jump's (at the viewport's top), else the first on screen, where it is.
    // The page scrolls to where the model has it now (heights measured and cells changed above it
    // move it), and again once it is drawn. The root opts out of the browser's scroll anchoring, whose
    // corrections and the redraws chased each other. The window is drawn around where the model puts
    // the cell, not where the page could scroll: until the placeholders take the model's heights, the
    // page may be too short to get there (the first measured heights move a cell near the end of a
    // long list down by more than what lies below it).
    if (!m.d && !m.jk && (+g0.getAttribute('height') ? rect(g0).bottom <= vt - mg / 2 : 1) &&
      (+g1.getAttribute('height') ? rect(g1).top >= vt + vh + mg / 2 : 1)) return;
    m.d = 0;
    let a = m.jk && [m.jk, 0];
    if (!a) for (const [k, e] of m.ce) if (rect(e).bottom > vt) { a = [k, rect(e).top - vt]; break }
    const o = a ? off(m, a[0]) : -1;
    o >= 0 && nudge(sc, o + rect(r).top - vt - a[1]);
    const y = o >= 0 ? o - a[1] : vt - rect(r).top, now = new Map(), need = [], ss = new Set();
    let [show, top] = walk(m, y - mg, y + vh + mg);
    // Past the end (the list shrank): its last cells.
    top < 0 && ([show, top] = walk(m, T - vh - mg, T));
    let prev = g0;
    for (const [x, cs] of show) {
      let s = m.se.get(x.k);
      if (!s || s.html != x.html || s.hd != x.hd || s.ft != x.ft) {
        const e = parse(x.html), c = e.children, bx = c[x.h0 ? 1 : 0] || fail();
        for (const z of [...c]) z != bx && z.remove();
        x.hd != null && bx.before(parse(x.hd)); x.ft != null && bx.after(parse(x.ft));
        s && s.e.remove(); m.se.set(x.k, s = { e, b: bx, html: x.html, hd: x.hd, ft: x.ft });
      }
      ss.add(x.k);
      prev.nextSibling != s.e && mv(r, s.e, prev.nextSibling); prev = s.e;
      const bx = s.b, li = /^[OU]L$/.test(bx.tagName) ? 'li' : 'div', n = count(x);
      let i = 0;
      for (const [k, j, g] of cs) {
        const h = m.H.get(k);
        let e = m.ce.get(k);
        if (h == null) {
          need.push(g); e = D.createElement(li); e.className = 'livelist-pending'; e.style.height = m.est + 'px';
        } else if (!e || E.get(e) != h && !busy(e)) {
          const c = parse(h);
          E.set(c, h); e && e.isConnected && e.replaceWith(c); e && hide(m, k, e); e = c;
          watch(c);
        }
        h != null && now.set(k, e);
        att(e, 'aria-setsize', n); att(e, 'aria-posinset', j + 1);
        bx.children[i] != e && mv(bx, e, bx.children[i] || null);
        i++;
      }
      for (let z; (z = bx.children[i]);) z.remove();
    }
    for (const [k, e] of m.ce) now.get(k) != e && (e.remove(), hide(m, k, e));
    for (const [k, s] of m.se) ss.has(k) || (s.e.remove(), m.se.delete(k));
    for (const e of [...r.children]) e != g0 && e != g1 && !ss.has(e.dataset.section) && e.remove();
    m.ce = now;
    prev.nextSibling != g1 && r.append(g1);
    // Sizes: the placeholder before puts the first cell shown where the model has it (its section's
    // header above it); the one after takes the rest of the list's height.
    att(g0, 'height', Math.max(0, top));
    let moved = 0;
    // A cell measured for the first time redraws; one measured again (its height can depend on its
    // neighbours, as a :first-child rule makes it) only updates the model, else the two would alternate.
    if (m.r.dataset.fixedHeight != 'true') for (const [k, e] of now) {
      const h = rect(e).height, g = m.h.get(k);
      Math.abs((g ?? m.est) - h) > .5 && (m.L.get(k).y = null, moved |= g == null);
      m.h.set(k, h);
    }
    for (const [x] of show) {
      const s = m.se.get(x.k), c = rect(s.b).top - rect(s.e).top; // what is above the cells
      Math.abs(ch(m, x) - c) > .5 && (moved = 1, m.c.set(x.k, c));
    }
    att(g1, 'height', Math.max(0, T - top - (rect(g1).top - rect(g0).bottom)));
    const e = o >= 0 && now.get(a[0]);
    e && nudge(sc, rect(e).top - vt - a[1]);
    moved && redo(m);
    need.length && get(m, need[0], need[need.length - 1] - need[0] + 1);
    (e || o < 0) && (m.jk = 0);
  }

  // Brings a key or an index into view; the cell shows once its HTML is in.
  function jump(r, t) {
    const m = mod(r);
    if (m.load) return void (m.jt = t);
    const k = typeof t == 'number' ? nth(m, t) : t;
    return m.L.has(k) && !draw(m, m.jk = k);
  }

  // Visibility reports for the cells of the window (docs/PROTOCOL.md, "The DOM"); a cell that leaves
  // the window while seen is reported hidden.
  const io = W.IntersectionObserver && new IntersectionObserver(l => {
    for (const x of l) {
      const e = x.target, m = M.get(e.closest('[data-list]')), k = e.dataset.cell;
      m && m.ce.get(k) == e && x.isIntersecting != m.seen.has(k) && see(m, k, x.isIntersecting);
    }
  });
  const watch = e => io && e.dataset.visibility == 'true' && io.observe(e);
  function hide(m, k, e) { io && io.unobserve(e); m.seen.has(k) && see(m, k, false) }
  // Reports go in livelist.js's batches.
  function see(m, k, v) { v ? m.seen.add(k) : m.seen.delete(k); LiveList.seen(m.r, k, v) }

  // A root's model: the page's cells and sections kept, the keys loaded; a page that starts at a cell
  // (?at=KEY) shows that cell.
  function mod(r) {
    let m = M.get(r);
    if (m) return m;
    const gap = s => r.querySelector(`[data-gap="${s}"]`); // the server's placeholders
    M.set(r, m = { r, name: r.dataset.list, v: +r.dataset.version || 0, H: new Map(), h: new Map(), c: new Map(), se: new Map(), ce: new Map(),
      seen: new Set(), g0: gap('before'), g1: gap('after') });
    build(m, [], 1);
    for (const e of r.children) e.dataset.section != null && m.se.set(e.dataset.section, { e });
    for (const e of r.querySelectorAll('[data-cell]')) {
      const h = e.outerHTML;
      m.H.set(e.dataset.cell, h); E.set(e, h); m.ce.set(e.dataset.cell, e);
      watch(e);
    }
    const f = +r.dataset.first && r.querySelector('[data-cell]');
    f && !location.hash && (f.scrollIntoView(), m.jt = f.dataset.cell); // ?at=KEY: shown once the keys are in
    load(m);
    return m;
  }

  const all = () => M.forEach(frame), again = () => M.forEach(redo);
  D.addEventListener('scroll', all, { capture: true, passive: true });
  W.addEventListener('resize', again);
  D.addEventListener('focusout', () => setTimeout(again));
  // A list its viewer may no longer see (livelist.js emptied it): never drawn again.
  D.addEventListener('livelist:denied', e => (M.get(e.target) || {}).off = 1);
  W.addEventListener('hashchange', () => { const k = hash(); M.forEach(m => m.L.has(k) && jump(m.r, k)) });
  W.LLW = Object.assign(apply, {
    jump,
    keys: r => { const m = mod(r); return m.load ? null : m.q.flatMap(x => x.b.flatMap(b => b.k)) }
  });
  for (const r of D.querySelectorAll('[data-window]')) mod(r);
})();
