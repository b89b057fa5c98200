/*
 * Delta Funnel profile comparison viewer: a sortable, filterable treegrid
 * of matched semantic paths and native symbols of two profiles.  Rows are
 * [label, parent, is_function, countA, durationA, incompleteA, directA,
 * inclusiveA, countB, durationB, incompleteB, directB, inclusiveB].
 * DOM calls only, no network access.
 */
(function () {
  "use strict";
  var PAGE = 100, MAX_ROWS = 1000;
  var data = JSON.parse(document.getElementById("diff-data").textContent);
  var sides = data.sides;
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function fmtDuration(ns) {
    if (ns === null) return "-";
    var a = Math.abs(ns), s = ns < 0 ? "-" : "";
    if (a < 1e3) return s + a + " ns";
    if (a < 1e6) return s + (a / 1e3).toFixed(3) + " us";
    if (a < 1e9) return s + (a / 1e6).toFixed(3) + " ms";
    return s + (a / 1e9).toFixed(3) + " s";
  }

  var rows = data.rows.map(function (r, i) {
    return {
      i: i, label: r[0], parent: r[1], fn: r[2] === 1, kids: [],
      a: { count: r[3], dur: r[4], inc: r[5], direct: r[6], incl: r[7] },
      b: { count: r[8], dur: r[9], inc: r[10], direct: r[11], incl: r[12] }
    };
  });
  var roots = [];
  rows.forEach(function (r) { if (r.parent >= 0 && rows[r.parent]) rows[r.parent].kids.push(r); else roots.push(r); });

  function samples(r, s) { return r.fn ? s.direct : s.incl; }
  function share(r, s, side) { var d = sides[side].direct_sample_count; return d > 0 ? 100 * samples(r, s) / d : 0; }
  function present(s) { return s.count > 0 || s.direct > 0 || s.incl > 0; }
  function durOf(s) { return s.count > 0 ? s.dur : null; }
  function metric(r, key) {
    switch (key) {
      case "name": return r.label;
      case "durA": return r.fn ? null : durOf(r.a);
      case "durB": return r.fn ? null : durOf(r.b);
      case "durDelta": return r.fn ? null : (durOf(r.b) || 0) - (durOf(r.a) || 0);
      case "smpA": return samples(r, r.a);
      case "smpB": return samples(r, r.b);
      default: return share(r, r.b, 1) - share(r, r.a, 0);
    }
  }
  function changed(r) {
    if (present(r.a) !== present(r.b)) return true;
    var da = r.a.dur, db = r.b.dur;
    if (!r.fn && Math.max(da, db) > 0 && Math.abs(db - da) / Math.max(da, db) >= 0.1) return true;
    var sa = share(r, r.a, 0), sb = share(r, r.b, 1);
    return Math.max(sa, sb) > 0 && Math.abs(sb - sa) / Math.max(sa, sb) >= 0.1 && Math.abs(sb - sa) >= 0.5;
  }

  var state = { sortKey: "durDelta", sortDir: "desc", open: new Set(), shown: new Map(), query: "", changedOnly: false };
  function compare(x, y) {
    if (x.fn !== y.fn) return x.fn ? 1 : -1;
    var va = metric(x, state.sortKey), vb = metric(y, state.sortKey), asc = state.sortDir === "asc", r;
    if (va === null || vb === null) r = va === null && vb === null ? 0 : va === null ? 1 : -1;
    else if (typeof va === "string") r = (va < vb ? -1 : va > vb ? 1 : 0) * (asc ? 1 : -1);
    else r = asc ? va - vb : vb - va;
    return r || x.i - y.i;
  }

  // Rows kept by the filter / changed-only switch, with their ancestors.
  function keptSet() {
    if (!state.query && !state.changedOnly) return null;
    var keep = new Set();
    rows.forEach(function (r) {
      var ok = (!state.query || r.label.toLowerCase().indexOf(state.query) >= 0) && (!state.changedOnly || changed(r));
      if (!ok) return;
      for (var x = r; x && !keep.has(x.i); x = x.parent >= 0 ? rows[x.parent] : null) keep.add(x.i);
    });
    return keep;
  }

  var body = document.getElementById("diff-rows"), status = document.getElementById("diff-status");
  var limit = document.getElementById("diff-limit");
  function cellNum(text, detail) {
    var td = el("td", "num", text);
    if (detail) td.appendChild(el("span", "detail", detail));
    return td;
  }
  function rowEl(r, depth, keep) {
    var tr = el("tr", r.fn ? "fn" : "sem");
    tr.setAttribute("role", "row");
    tr.setAttribute("aria-level", String(depth + 1));
    var td = el("td"), wrap = el("div", "name-cell");
    wrap.style.paddingLeft = Math.min(depth, 6) * 1.25 + "rem";
    var hasKids = r.kids.some(function (k) { return !keep || keep.has(k.i); });
    if (hasKids) {
      var open = keep !== null || state.open.has(r.i);
      var b = el("button", "toggle", open ? "-" : "+");
      b.type = "button";
      b.disabled = keep !== null;
      b.setAttribute("aria-label", (open ? "Collapse " : "Expand ") + r.label);
      b.addEventListener("click", function () { if (state.open.has(r.i)) state.open.delete(r.i); else state.open.add(r.i); render(); });
      wrap.appendChild(b);
      tr.setAttribute("aria-expanded", open ? "true" : "false");
    } else {
      wrap.appendChild(el("span", "spacer"));
    }
    var text = el("span"), label = el("span", "label", r.label);
    label.title = r.label;
    text.appendChild(label);
    var detail = r.fn ? "Native function (self samples in detail)" :
      "Matched nodes: " + r.a.count + " in " + sides[0].label + ", " + r.b.count + " in " + sides[1].label;
    if (!present(r.a)) detail += "; only in " + sides[1].label;
    else if (!present(r.b)) detail += "; only in " + sides[0].label;
    text.appendChild(el("span", "detail", detail));
    wrap.appendChild(text);
    td.appendChild(wrap);
    tr.appendChild(td);
    var da = r.fn ? null : durOf(r.a), db = r.fn ? null : durOf(r.b);
    tr.appendChild(cellNum(r.fn ? "N/A" : fmtDuration(da), r.a.inc ? r.a.inc + " incomplete" : null));
    tr.appendChild(cellNum(r.fn ? "N/A" : fmtDuration(db), r.b.inc ? r.b.inc + " incomplete" : null));
    var delta = r.fn ? null : (db || 0) - (da || 0);
    tr.appendChild(cellNum(r.fn ? "N/A" : (delta > 0 ? "+" : "") + fmtDuration(delta),
      r.fn || !(da > 0) ? null : ((delta >= 0 ? "+" : "") + (100 * delta / da).toFixed(1) + "%")));
    tr.appendChild(cellNum(String(samples(r, r.a)), share(r, r.a, 0).toFixed(1) + "% of direct" + (r.fn ? "; self" : "")));
    tr.appendChild(cellNum(String(samples(r, r.b)), share(r, r.b, 1).toFixed(1) + "% of direct" + (r.fn ? "; self" : "")));
    var ds = share(r, r.b, 1) - share(r, r.a, 0);
    tr.appendChild(cellNum((ds >= 0 ? "+" : "") + ds.toFixed(1) + " pts", null));
    return tr;
  }

  function render() {
    while (body.firstChild) body.removeChild(body.firstChild);
    var keep = keptSet(), out = 0, truncated = false, frag = document.createDocumentFragment();
    function walk(list, depth) {
      var items = list.filter(function (r) { return !keep || keep.has(r.i); }).sort(compare);
      var key = depth === 0 ? -1 : items.length ? items[0].parent : -1, max = state.shown.get(key) || PAGE;
      for (var i = 0; i < items.length; i++) {
        if (out >= MAX_ROWS) { truncated = true; return; }
        if (i >= max) {
          var tr = el("tr", "pager"), td = el("td"), more = el("button", null, "Show 100 more");
          td.colSpan = 7;
          more.type = "button";
          more.addEventListener("click", function () { state.shown.set(key, max + PAGE); render(); });
          td.appendChild(more);
          td.appendChild(el("span", null, " Showing " + max + " of " + items.length + "."));
          tr.appendChild(td);
          frag.appendChild(tr);
          return;
        }
        frag.appendChild(rowEl(items[i], depth, keep));
        out++;
        if (keep !== null || state.open.has(items[i].i)) walk(items[i].kids, depth + 1);
        if (truncated) return;
      }
    }
    walk(roots, 0);
    body.appendChild(frag);
    limit.hidden = !truncated && !data.truncated;
    limit.textContent = (truncated ? "Showing the first 1000 visible rows. Collapse a branch or filter to continue. " : "") +
      (data.truncated ? "The comparison was capped at its row limit; compare narrower profiles for the rest." : "");
    status.textContent = keep ? keep.size + " rows kept by the filter." : "";
    document.querySelectorAll("#diff-tree th[data-sort]").forEach(function (th) {
      var btn = th.querySelector("button"), base = btn.dataset.base || btn.textContent;
      btn.dataset.base = base;
      if (th.dataset.sort === state.sortKey) {
        var dir = state.sortDir === "asc" ? "ascending" : "descending";
        th.setAttribute("aria-sort", dir);
        btn.textContent = base + " [" + dir + "]";
      } else {
        th.removeAttribute("aria-sort");
        btn.textContent = base;
      }
    });
  }

  var summary = document.getElementById("summary");
  sides.forEach(function (s, i) {
    var card = el("div", "card");
    card.appendChild(el("div", "card-label", (i === 0 ? "A: " : "B: ") + s.label));
    card.appendChild(el("div", "card-value", s.operations + " operations, " + fmtDuration(s.root_duration_ns)));
    card.appendChild(el("div", "detail", s.direct_sample_count + " direct of " + s.eligible_sample_count +
      " eligible samples at " + s.sample_frequency_hz + " Hz" + (s.capture_complete ? "" : "; capture incomplete")));
    summary.appendChild(card);
  });
  document.querySelectorAll("#diff-tree th[data-sort] button").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var key = btn.parentNode.dataset.sort;
      if (key === state.sortKey) state.sortDir = state.sortDir === "asc" ? "desc" : "asc";
      else { state.sortKey = key; state.sortDir = key === "name" ? "asc" : "desc"; }
      render();
    });
  });
  var timer = null, input = document.getElementById("diff-filter");
  input.addEventListener("input", function () {
    if (timer) clearTimeout(timer);
    timer = setTimeout(function () { state.query = input.value.trim().toLowerCase(); render(); }, 150);
  });
  document.getElementById("changed-only").addEventListener("change", function (ev) {
    state.changedOnly = ev.target.checked;
    render();
  });
  roots.forEach(function (r) { state.open.add(r.i); });
  render();
})();
