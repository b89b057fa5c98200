/*
 * Delta Funnel profile report viewer.  Reads the embedded profile data and
 * renders the ranked tree (treegrid with paging, sorting, filtering and
 * keyboard navigation), the flame graph of the selected node and the
 * timeline of its operation.  DOM calls only (no HTML parsing of data), no
 * network access.  Field positions of the data rows are documented in
 * docs/profile-report.md.
 */
(function () {
  "use strict";

  var PAGE = 100;          // sibling rows and filter matches per page
  var MAX_ROWS = 1000;     // rows rendered at once
  var MAX_INDENT = 6;      // indentation levels before the "Depth N" label
  var SUBTREE_LIMIT = 1000;
  var FLAME_MAX_BOXES = 6000;
  var TIMELINE_MAX_BARS = 6000;

  var data = JSON.parse(document.getElementById("profile-data").textContent);
  var S = data.strings;
  function str(i) { return i === null || i === undefined ? null : S[i]; }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  /* ---------------------------------------------------------------- model */

  var sems = [], semById = new Map(), fns = [], roots = [];
  data.semantics.forEach(function (r) {
    var n = {
      type: "s", id: r[0], parentId: r[1], op: r[2], name: str(r[3]), label: r[4], skind: str(r[5]),
      opkind: str(r[6]), stage: str(r[7]), category: str(r[8]), activity: str(r[9]), time: str(r[10]),
      result: str(r[11]), scope: str(r[12]), owner: str(r[13]), workerKind: str(r[14]), start: r[15], dur: r[16],
      direct: r[17], inclusive: r[18], resolved: r[19], unresolved: r[20], unwind: r[21], missing: r[22],
      query: r[23], lane: r[24], ownerId: r[25], key: "s:" + r[0], parent: null, root: null, depth: 0,
      kids: [], fnAll: [], fnCompact: []
    };
    sems.push(n);
    semById.set(n.id, n);
  });
  sems.forEach(function (n) {
    if (n.parentId !== null && semById.has(n.parentId)) {
      n.parent = semById.get(n.parentId);
      n.parent.kids.push(n);
    } else {
      roots.push(n);
    }
  });
  // Depth and owning root, parents first (iterative).
  (function () {
    var stack = roots.slice();
    roots.forEach(function (r) { r.root = r; r.depth = 0; });
    while (stack.length) {
      var n = stack.pop();
      n.kids.forEach(function (c) { c.root = n.root; c.depth = n.depth + 1; stack.push(c); });
    }
  })();
  var fnByKey = new Map();
  data.functions.forEach(function (r) {
    var owner = semById.get(r[0]);
    if (!owner) return;
    var f = {
      type: "f", sem: owner, id: r[1], parentId: r[2], full: str(r[3]), label: str(r[4]), module: str(r[5]),
      source: str(r[6]), line: r[7], self: r[8], inclusive: r[9], cparentId: r[10], hidden: r[11] === 1,
      key: "f:" + r[0] + ":" + r[1], parent: null, cparent: null, kidsAll: [], kidsCompact: []
    };
    fns.push(f);
    fnByKey.set(f.key, f);
  });
  fns.forEach(function (f) {
    var pre = "f:" + f.sem.id + ":";
    if (f.parentId !== null && fnByKey.has(pre + f.parentId)) {
      f.parent = fnByKey.get(pre + f.parentId);
      f.parent.kidsAll.push(f);
    } else {
      f.sem.fnAll.push(f);
    }
    if (f.hidden) return;
    if (f.cparentId !== null && fnByKey.has(pre + f.cparentId)) {
      f.cparent = fnByKey.get(pre + f.cparentId);
      f.cparent.kidsCompact.push(f);
    } else {
      f.sem.fnCompact.push(f);
    }
  });

  /* ---------------------------------------------------------------- state */

  var state = {
    sortKey: "duration", sortDir: "desc", expanded: new Set(), selected: null, pages: new Map(),
    showAll: false, query: "", matchPage: 0, tab: "tree", flameRoot: null
  };
  var rowsEl = document.getElementById("profile-rows");
  var filterInput = document.getElementById("profile-filter");
  var clearBtn = document.getElementById("clear-filter");
  var prevBtn = document.getElementById("prev-matches");
  var nextBtn = document.getElementById("next-matches");
  var allFrames = document.getElementById("show-all-frames");
  var filterStatus = document.getElementById("filter-status");
  var treeStatus = document.getElementById("tree-status");
  var expandBtn = document.getElementById("expand-subtree");
  var collapseBtn = document.getElementById("collapse-subtree");
  var emptyMsg = document.getElementById("empty-message");
  var limitMsg = document.getElementById("row-limit-message");

  /* ------------------------------------------------------------ formatting */

  function fmtDuration(ns) {
    if (ns === null || ns === undefined) return "Incomplete";
    if (ns < 1e3) return ns + " ns";
    if (ns < 1e6) return (ns / 1e3).toFixed(3) + " us";
    if (ns < 1e9) return (ns / 1e6).toFixed(3) + " ms";
    return (ns / 1e9).toFixed(3) + " s";
  }
  function pct(num, den) {
    if (den === null || den === undefined || num === null || num === undefined || !(den > 0)) return "N/A";
    return (100 * num / den).toFixed(1) + "%";
  }
  function sourceText(f) {
    if (!f.source) return null;
    return f.line !== null ? f.source + ":" + f.line : f.source;
  }

  /* --------------------------------------------------------------- sorting */

  function semValue(n, key) {
    if (key === "duration") return n.dur;
    if (key === "direct") return n.direct;
    if (key === "inclusive") return n.inclusive;
    return n.label;
  }
  function fnValue(f, key) {
    if (key === "direct") return f.self;
    if (key === "name") return f.label;
    return f.inclusive; // duration means inclusive samples for callsites
  }
  function cmpCodePoints(a, b) { return a < b ? -1 : a > b ? 1 : 0; }
  function compareNodes(a, b) {
    var key = state.sortKey, asc = state.sortDir === "asc";
    var va = a.type === "s" ? semValue(a, key) : fnValue(a, key);
    var vb = b.type === "s" ? semValue(b, key) : fnValue(b, key);
    var r;
    if (va === null || vb === null) {
      r = va === null && vb === null ? 0 : va === null ? 1 : -1; // unknown durations always last
      if (r !== 0) return r;
    } else if (typeof va === "string") {
      r = cmpCodePoints(va, vb);
      if (!asc) r = -r;
      if (r !== 0) return r;
    } else if (va !== vb) {
      return asc ? va - vb : vb - va;
    }
    if (a.type !== b.type) return a.type === "s" ? -1 : 1;
    return a.id - b.id;
  }
  function sorted(list) { return list.slice().sort(compareNodes); }

  /* ---------------------------------------------------------------- tree */

  function fnRoots(s) { return state.showAll ? s.fnAll : s.fnCompact; }
  function fnKids(f) { return state.showAll ? f.kidsAll : f.kidsCompact; }
  function childrenOf(n) {
    if (n.type === "s") return sorted(n.kids).concat(sorted(fnRoots(n)));
    return sorted(fnKids(n));
  }
  function hasChildren(n) {
    return n.type === "s" ? n.kids.length > 0 || fnRoots(n).length > 0 : fnKids(n).length > 0;
  }
  function parentOf(n) { return n.type === "s" ? n.parent : (state.showAll ? n.parent : n.cparent) || n.sem; }
  function nodeName(n) { return n.label; }

  /*
   * Sibling groups of a node: one group of all children, or (at least 100
   * semantic children and some callsites) two groups paged separately.
   */
  function groupsOf(n) {
    if (n === null) return [{ key: "roots", label: "Operation roots", items: sorted(roots) }];
    if (n.type === "s") {
      var sk = sorted(n.kids), fk = sorted(fnRoots(n));
      if (sk.length >= PAGE && fk.length > 0)
        return [{ key: n.key + "/s", label: n.label + " semantic children", items: sk },
                { key: n.key + "/f", label: n.label + " native callsites", items: fk }];
      return [{ key: n.key + "/c", label: n.label + " children", items: sk.concat(fk) }];
    }
    return [{ key: n.key + "/c", label: n.label + " children", items: sorted(fnKids(n)) }];
  }

  /* Visible rows of the unfiltered tree: [{node, depth}] plus pager rows, at most MAX_ROWS. */
  function visibleRows() {
    var out = [], truncated = false;
    function walk(parent, depth) {
      var groups = groupsOf(parent);
      for (var g = 0; g < groups.length; g++) {
        var grp = groups[g], off = state.pages.get(grp.key) || 0;
        if (off >= grp.items.length) off = 0;
        var end = Math.min(grp.items.length, off + PAGE);
        for (var i = off; i < end; i++) {
          if (out.length >= MAX_ROWS) { truncated = true; return; }
          var n = grp.items[i];
          out.push({ node: n, depth: depth });
          if (state.expanded.has(n.key) && hasChildren(n)) walk(n, depth + 1);
          if (truncated) return;
        }
        if (grp.items.length > PAGE) out.push({ pager: grp, depth: depth, off: off, end: end });
      }
    }
    walk(null, 0);
    return { rows: out, truncated: truncated };
  }

  /* --------------------------------------------------------------- filter */

  function isDigit(c) { return c >= "0" && c <= "9"; }
  function textMatches(text, q) {
    if (!text) return false;
    var t = text.toLowerCase(), from = 0, lead = isDigit(q[0]), tail = isDigit(q[q.length - 1]);
    for (;;) {
      var i = t.indexOf(q, from);
      if (i < 0) return false;
      var before = i > 0 ? t[i - 1] : "", after = i + q.length < t.length ? t[i + q.length] : "";
      if (!(lead && isDigit(before)) && !(tail && isDigit(after))) return true;
      from = i + 1;
    }
  }
  function nodeMatches(n, q) {
    if (n.type === "s") return textMatches(n.label, q) || textMatches(n.name, q);
    return textMatches(n.label, q) || textMatches(n.full, q) || textMatches(n.module, q) || textMatches(sourceText(n), q);
  }
  function allMatches(q) {
    var out = [], stack = sorted(roots).reverse();
    while (stack.length) {
      var n = stack.pop();
      if (nodeMatches(n, q)) out.push(n);
      var kids = childrenOf(n);
      for (var i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
    }
    return out;
  }
  function ancestors(n) {
    var chain = [];
    for (var p = parentOf(n); p; p = parentOf(p)) chain.push(p);
    return chain.reverse();
  }
  function depthOf(n) {
    var d = 0;
    for (var p = parentOf(n); p; p = parentOf(p)) d++;
    return d;
  }

  var matchCache = { q: null, showAll: null, sort: null, list: [] };
  function matchesFor(q) {
    var sk = state.sortKey + state.sortDir;
    if (matchCache.q !== q || matchCache.showAll !== state.showAll || matchCache.sort !== sk)
      matchCache = { q: q, showAll: state.showAll, sort: sk, list: allMatches(q) };
    return matchCache.list;
  }

  /* Rows of the current match page: matches with their ancestors, closed early at MAX_ROWS. */
  function filteredRows() {
    var q = state.query, list = matchesFor(q), total = list.length;
    var pageStarts = [0], seen = new Set(), rows = [], pageMatches = 0, flat = false, i;
    // Page boundaries depend on how many context rows each page needs: compute them in order.
    var starts = [], start = 0;
    while (start < total) {
      starts.push(start);
      var ctx = new Set(), n = 0, k = start;
      while (k < total && n < PAGE) {
        var need = ancestors(list[k]).filter(function (a) { return !ctx.has(a.key); });
        if (ctx.size + need.length + n + 1 > MAX_ROWS && n > 0) break;
        need.forEach(function (a) { ctx.add(a.key); });
        n++; k++;
      }
      start = k;
      if (starts.length > 100000) break;
    }
    pageStarts = starts.length ? starts : [0];
    if (state.matchPage >= pageStarts.length) state.matchPage = pageStarts.length - 1;
    var a = pageStarts[state.matchPage] || 0;
    var b = state.matchPage + 1 < pageStarts.length ? pageStarts[state.matchPage + 1] : total;
    var keep = new Map();
    for (i = a; i < b; i++) {
      var m = list[i], anc = ancestors(m);
      if (b - a === 1 && anc.length + 1 > MAX_ROWS) { flat = true; anc = []; }
      anc.forEach(function (x) { if (!keep.has(x.key)) keep.set(x.key, { node: x, match: false }); });
      keep.set(m.key, { node: m, match: true });
      pageMatches++;
    }
    // Emit in display order: walk the tree restricted to kept keys.
    if (flat) {
      rows.push({ node: list[a], depth: depthOf(list[a]), match: true });
    } else {
      var stack = sorted(roots).reverse().map(function (r) { return { node: r, depth: 0 }; });
      while (stack.length) {
        var e = stack.pop();
        if (!keep.has(e.node.key) || seen.has(e.node.key)) continue;
        seen.add(e.node.key);
        rows.push({ node: e.node, depth: e.depth, match: keep.get(e.node.key).match });
        var kids = childrenOf(e.node);
        for (i = kids.length - 1; i >= 0; i--) if (keep.has(kids[i].key)) stack.push({ node: kids[i], depth: e.depth + 1 });
      }
    }
    return { rows: rows, total: total, first: a, last: b, pages: pageStarts.length, flat: flat, pageMatches: pageMatches };
  }

  /* ------------------------------------------------------------ rendering */

  function cell(main, detail, cls) {
    var td = el("td", cls || null);
    td.appendChild(el("span", null, main));
    if (detail) td.appendChild(el("span", "detail", detail));
    return td;
  }

  function semCells(tr, n) {
    var root = n.root || n, captured = n.resolved + n.unresolved;
    var state1 = n.dur === null ? "Incomplete" : (n.result || "Complete");
    tr.appendChild(cell(state1, n.time === "lifecycle" ? "Lifecycle" : "Exact wall clock"));
    tr.appendChild(cell(fmtDuration(n.dur), null, "num"));
    tr.appendChild(cell(pct(n.dur, root.dur), "Owning operation duration", "num"));
    tr.appendChild(cell(String(n.direct), captured + " native stacks captured: " + n.resolved + " resolved leaf symbols, " +
      n.unresolved + " unresolved; " + n.unwind + " unwind failures, " + n.missing + " missing", "num"));
    tr.appendChild(cell(String(n.inclusive), "Semantic subtree", "num"));
  }

  function fnCells(tr, f) {
    var base = f.sem.direct;
    tr.appendChild(cell("Sampled on-CPU", "Statistical, not exact wall time"));
    tr.appendChild(cell("N/A", "No exact function duration", "num"));
    tr.appendChild(cell(pct(f.inclusive, base), "Owning semantic direct samples", "num"));
    tr.appendChild(cell(String(f.self), pct(f.self, base) + " of owning semantic direct samples", "num"));
    tr.appendChild(cell(String(f.inclusive), "Call subtree", "num"));
  }

  function nameCell(n, depth, filtering, match) {
    var td = el("td"), wrap = el("div", "name-cell");
    wrap.style.paddingLeft = (Math.min(depth, MAX_INDENT) * 1.25) + "rem";
    if (hasChildren(n) && !filtering) {
      var open = state.expanded.has(n.key);
      var b = el("button", "toggle", open ? "-" : "+");
      b.type = "button";
      b.tabIndex = -1;
      b.setAttribute("aria-label", (open ? "Collapse " : "Expand ") + nodeName(n));
      b.addEventListener("click", function (ev) { ev.stopPropagation(); toggle(n); });
      wrap.appendChild(b);
    } else if (hasChildren(n)) {
      var d = el("button", "toggle", "-");
      d.type = "button";
      d.disabled = true;
      d.tabIndex = -1;
      d.title = "Clear the filter to change subtree expansion.";
      wrap.appendChild(d);
    } else {
      wrap.appendChild(el("span", "spacer"));
    }
    if (filtering) wrap.appendChild(el("span", match ? "badge match" : "badge", match ? "Match" : "Context"));
    if (depth > MAX_INDENT) wrap.appendChild(el("span", "badge", "Depth " + depth));
    var text = el("span");
    var label = el("span", "label", n.label);
    if (n.type === "f") label.title = n.full;
    text.appendChild(label);
    var detail;
    if (n.type === "s") {
      detail = "Exact semantic: " + (n.opkind || n.skind);
    } else {
      var parts = ["Sampled function"];
      if (n.module) parts.push(n.module);
      if (sourceText(n)) parts.push(sourceText(n));
      detail = parts.join(" - ");
    }
    text.appendChild(el("span", "detail", detail));
    wrap.appendChild(text);
    td.appendChild(wrap);
    return td;
  }

  function rowFor(item, filtering) {
    var n = item.node, tr = el("tr", n.type === "f" ? "fn" : "sem");
    tr.setAttribute("role", "row");
    tr.setAttribute("aria-level", String(item.depth + 1));
    tr.dataset.key = n.key;
    if (hasChildren(n)) tr.setAttribute("aria-expanded", filtering || state.expanded.has(n.key) ? "true" : "false");
    var selected = state.selected === n;
    tr.setAttribute("aria-selected", selected ? "true" : "false");
    tr.tabIndex = selected ? 0 : -1;
    tr.appendChild(nameCell(n, item.depth, filtering, item.match));
    if (n.type === "s") semCells(tr, n); else fnCells(tr, n);
    tr.addEventListener("click", function () { select(n, true); });
    return tr;
  }

  function pagerRow(item) {
    var grp = item.pager, tr = el("tr", "pager"), td = el("td");
    td.colSpan = 6;
    td.style.paddingLeft = (Math.min(item.depth, MAX_INDENT) * 1.25 + 2) + "rem";
    var prev = el("button", null, "Previous 100"), next = el("button", null, "Next 100");
    prev.type = next.type = "button";
    prev.disabled = item.off === 0;
    next.disabled = item.end >= grp.items.length;
    prev.addEventListener("click", function () { state.pages.set(grp.key, Math.max(0, item.off - PAGE)); render(); });
    next.addEventListener("click", function () { state.pages.set(grp.key, item.off + PAGE); render(); });
    td.appendChild(prev);
    td.appendChild(next);
    td.appendChild(el("span", null, grp.label + ": " + (item.off + 1) + "-" + item.end + " of " + grp.items.length + "."));
    tr.appendChild(td);
    return tr;
  }

  var currentRows = [];
  function renderTree() {
    var filtering = state.query.length > 0, items, res = null;
    while (rowsEl.firstChild) rowsEl.removeChild(rowsEl.firstChild);
    if (filtering) {
      res = filteredRows();
      items = res.rows;
      limitMsg.hidden = !res.flat;
      limitMsg.textContent = res.flat ? "Ancestor context was omitted because the complete context for this match exceeds the 1000-row visible limit." : "";
      filterStatus.textContent = res.total ? "Showing " + (res.first + 1) + "-" + res.last + " of " + res.total + " matches." : "0 matches.";
      prevBtn.hidden = nextBtn.hidden = res.pages <= 1;
      prevBtn.disabled = state.matchPage === 0;
      nextBtn.disabled = state.matchPage >= res.pages - 1;
      emptyMsg.hidden = res.total > 0;
      emptyMsg.textContent = "No profile rows match this filter.";
    } else {
      var v = visibleRows();
      items = v.rows;
      limitMsg.hidden = !v.truncated;
      limitMsg.textContent = v.truncated ? "Showing the first 1000 visible rows. Collapse a branch or filter the profile to continue." : "";
      filterStatus.textContent = "";
      prevBtn.hidden = nextBtn.hidden = true;
      emptyMsg.hidden = roots.length > 0;
      emptyMsg.textContent = "No operation records are available.";
    }
    expandBtn.disabled = collapseBtn.disabled = filtering;
    if (filtering) treeStatus.textContent = "Clear the filter to change subtree expansion.";
    else if (treeStatus.textContent === "Clear the filter to change subtree expansion.") treeStatus.textContent = "";
    var frag = document.createDocumentFragment();
    currentRows = [];
    items.forEach(function (it) {
      if (it.pager) { frag.appendChild(pagerRow(it)); return; }
      currentRows.push(it.node);
      frag.appendChild(rowFor(it, filtering));
    });
    rowsEl.appendChild(frag);
    if (state.selected && currentRows.indexOf(state.selected) < 0 && currentRows.length)
      rowsEl.querySelector("tr[data-key]").tabIndex = 0;
    renderHeader();
  }

  function renderHeader() {
    document.querySelectorAll("#profile-tree th[data-sort]").forEach(function (th) {
      var key = th.dataset.sort, btn = th.querySelector("button"), base = btn.dataset.base || btn.textContent;
      btn.dataset.base = base;
      if (key === state.sortKey) {
        var dir = state.sortDir === "asc" ? "ascending" : "descending";
        th.setAttribute("aria-sort", dir);
        btn.textContent = base + " [" + dir + "]";
      } else {
        th.removeAttribute("aria-sort");
        btn.textContent = base;
      }
    });
  }

  function render() {
    renderTree();
    if (state.tab === "flame") renderFlame();
    if (state.tab === "timeline") renderTimeline();
  }

  /* ----------------------------------------------------------- interaction */

  function toggle(n) {
    if (state.expanded.has(n.key)) state.expanded.delete(n.key); else state.expanded.add(n.key);
    render();
    focusSelected();
  }

  function expandTo(n) {
    for (var p = parentOf(n); p; p = parentOf(p)) state.expanded.add(p.key);
  }

  function select(n, focus) {
    state.selected = n;
    treeStatus.textContent = "Selected: " + n.label;
    render();
    if (focus) focusSelected();
  }

  function focusSelected() {
    if (!state.selected) return;
    var tr = rowsEl.querySelector('tr[data-key="' + cssEscape(state.selected.key) + '"]');
    if (tr) { tr.tabIndex = 0; tr.focus(); }
  }
  function cssEscape(s) { return s.replace(/["\\]/g, "\\$&"); }

  rowsEl.addEventListener("keydown", function (ev) {
    var n = state.selected, i = currentRows.indexOf(n), target = null;
    if (i < 0) return;
    switch (ev.key) {
      case "ArrowDown": target = currentRows[Math.min(currentRows.length - 1, i + 1)]; break;
      case "ArrowUp": target = currentRows[Math.max(0, i - 1)]; break;
      case "Home": target = currentRows[0]; break;
      case "End": target = currentRows[currentRows.length - 1]; break;
      case "ArrowRight":
        if (hasChildren(n) && !state.query) {
          if (!state.expanded.has(n.key)) { toggle(n); ev.preventDefault(); return; }
          target = currentRows[i + 1] && parentOf(currentRows[i + 1]) === n ? currentRows[i + 1] : null;
        }
        break;
      case "ArrowLeft":
        if (hasChildren(n) && state.expanded.has(n.key) && !state.query) { toggle(n); ev.preventDefault(); return; }
        target = parentOf(n);
        break;
      case "Enter": case " ":
        if (hasChildren(n) && !state.query) { toggle(n); ev.preventDefault(); }
        return;
      default: return;
    }
    ev.preventDefault();
    if (target && target !== n) select(target, true);
  });

  function subtreeNodes(n, limit) {
    var out = [], stack = [n];
    while (stack.length) {
      var x = stack.pop();
      out.push(x);
      if (out.length > limit) return null;
      var kids = x.type === "s" ? x.kids.concat(fnRoots(x)) : fnKids(x);
      for (var i = 0; i < kids.length; i++) stack.push(kids[i]);
    }
    return out;
  }

  expandBtn.addEventListener("click", function () {
    if (!state.selected || state.query) return;
    var nodes = subtreeNodes(state.selected, SUBTREE_LIMIT);
    if (!nodes) { treeStatus.textContent = "The selected subtree exceeds 1000 nodes. Select a narrower branch."; return; }
    var count = 0;
    nodes.forEach(function (x) { if (hasChildren(x)) { state.expanded.add(x.key); count++; } });
    render();
    treeStatus.textContent = "Expanded " + count + " rows with children in the selected subtree.";
  });
  collapseBtn.addEventListener("click", function () {
    if (!state.selected || state.query) return;
    var nodes = subtreeNodes(state.selected, SUBTREE_LIMIT);
    if (!nodes) { treeStatus.textContent = "The selected subtree exceeds 1000 nodes. Select a narrower branch."; return; }
    var count = 0;
    nodes.forEach(function (x) { if (state.expanded.delete(x.key)) count++; });
    render();
    treeStatus.textContent = "Collapsed " + count + " expanded rows in the selected subtree.";
  });

  document.querySelectorAll("#profile-tree th[data-sort] button").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var key = btn.parentNode.dataset.sort;
      if (key === state.sortKey) state.sortDir = state.sortDir === "asc" ? "desc" : "asc";
      else { state.sortKey = key; state.sortDir = key === "name" ? "asc" : "desc"; }
      state.pages.clear();
      state.matchPage = 0;
      render();
    });
  });

  var filterTimer = null;
  filterInput.addEventListener("input", function () {
    clearBtn.disabled = filterInput.value.length === 0;
    if (filterTimer) clearTimeout(filterTimer);
    filterTimer = setTimeout(applyFilter, 150);
  });
  function applyFilter() {
    filterTimer = null;
    state.query = filterInput.value.trim().toLowerCase();
    state.matchPage = 0;
    render();
  }
  clearBtn.addEventListener("click", function () {
    filterInput.value = "";
    clearBtn.disabled = true;
    applyFilter();
    filterInput.focus();
  });
  prevBtn.addEventListener("click", function () { state.matchPage = Math.max(0, state.matchPage - 1); render(); });
  nextBtn.addEventListener("click", function () { state.matchPage++; render(); });
  allFrames.addEventListener("change", function () {
    state.showAll = allFrames.checked;
    state.pages.clear();
    state.matchPage = 0;
    var n = state.selected;
    if (n && n.type === "f" && !state.showAll && n.hidden) state.selected = n.sem;
    state.flameRoot = null;
    render();
  });

  /* ----------------------------------------------------------------- tabs */

  var tabs = ["tree", "flame", "timeline"];
  function showTab(name) {
    state.tab = name;
    tabs.forEach(function (t) {
      var tab = document.getElementById("tab-" + t), panel = document.getElementById("panel-" + t);
      tab.setAttribute("aria-selected", t === name ? "true" : "false");
      tab.tabIndex = t === name ? 0 : -1;
      panel.hidden = t !== name;
    });
    render();
  }
  tabs.forEach(function (t, i) {
    var tab = document.getElementById("tab-" + t);
    tab.addEventListener("click", function () { showTab(t); });
    tab.addEventListener("keydown", function (ev) {
      var d = ev.key === "ArrowRight" ? 1 : ev.key === "ArrowLeft" ? -1 : 0;
      if (!d) return;
      var next = tabs[(i + d + tabs.length) % tabs.length];
      showTab(next);
      document.getElementById("tab-" + next).focus();
    });
  });

  /* ----------------------------------------------------------- flame graph */

  var flameEl = document.getElementById("flame-graph");
  var flameCaption = document.getElementById("flame-caption");
  var flameReset = document.getElementById("flame-reset");
  flameReset.addEventListener("click", function () { state.flameRoot = null; renderFlame(); });

  function hueOf(s) {
    var h = 0;
    for (var i = 0; i < (s || "").length; i++) h = (h * 31 + s.charCodeAt(i)) >>> 0;
    return h % 360;
  }

  /*
   * The flame graph works on a merged call tree: for a semantic node, the
   * call trees of every node of its subtree merged by symbol path (so an
   * operation shows all of its native work); for a function, its own call
   * subtree.  Without "Show all native frames" the merged tree is compacted
   * like the table (zero-self single-child chains are skipped).
   */
  function mergedTree(sel) {
    var root = { label: sel.label, full: sel.type === "f" ? sel.full : sel.label, module: null, value: 0, self: 0,
                 kids: new Map(), fn: sel.type === "f" ? sel : null };
    var work = [];
    function add(parent, f) { work.push([parent, f]); }
    if (sel.type === "f") {
      root.value = sel.inclusive;
      root.self = sel.self;
      sel.kidsAll.forEach(function (k) { add(root, k); });
    } else {
      var stack = [sel];
      while (stack.length) {
        var n = stack.pop();
        root.value += n.resolved + n.unresolved;
        n.fnAll.forEach(function (f) { add(root, f); });
        n.kids.forEach(function (c) { stack.push(c); });
      }
    }
    while (work.length) {
      var w = work.pop(), parent = w[0], f = w[1], key = f.full + "\u0000" + (f.module || "");
      var m = parent.kids.get(key);
      if (!m) {
        m = { label: f.label, full: f.full, module: f.module, value: 0, self: 0, kids: new Map(), fn: f };
        parent.kids.set(key, m);
      } else if (m.fn !== f) {
        m.fn = null; // frames of several semantic nodes: no single row to select
      }
      m.value += f.inclusive;
      m.self += f.self;
      f.kidsAll.forEach(function (k) { add(m, k); });
    }
    return root;
  }

  function visibleKids(m) {
    var out = [];
    m.kids.forEach(function (k) {
      // Compact view: follow a zero-self chain whose single child carries all of its samples.
      while (!state.showAll && k.self === 0 && k.kids.size === 1) {
        var only = k.kids.values().next().value;
        if (only.value !== k.value) break;
        k = only;
      }
      out.push(k);
    });
    return out.sort(function (a, b) { return b.value - a.value || (a.label < b.label ? -1 : a.label > b.label ? 1 : 0); });
  }

  var flameCache = { sel: null, showAll: null, tree: null };
  function renderFlame() {
    while (flameEl.firstChild) flameEl.removeChild(flameEl.firstChild);
    var sel = state.selected;
    if (!sel) { flameCaption.textContent = "Select a row to see its sampled native frames."; return; }
    if (flameCache.sel !== sel || flameCache.showAll !== state.showAll) {
      flameCache = { sel: sel, showAll: state.showAll, tree: mergedTree(sel) };
      state.flameRoot = null;
    }
    var top = state.flameRoot || flameCache.tree, total = top.value;
    flameReset.hidden = !state.flameRoot;
    if (!(total > 0)) {
      flameCaption.textContent = "No sampled native frames for " + sel.label + ".";
      return;
    }
    flameCaption.textContent = "Sampled on-CPU native frames " + (sel.type === "s" ? "under " : "of ") + top.label +
      " (" + total + " samples). Widths are proportional to inclusive samples; click a frame to focus it.";
    var boxes = 0, maxDepth = 0, ROW = 22;
    function box(m, x, w, depth, isRoot) {
      var d = el("div", isRoot ? "frame root" : "frame", m.label);
      d.style.left = (x * 100) + "%";
      d.style.width = "calc(" + (w * 100) + "% - 1px)";
      d.style.top = (depth * ROW) + "px";
      d.title = m.full + (m.module ? "\n" + m.module : "") + "\n" + m.value + " samples (" + pct(m.value, total) +
        " of this view); self " + m.self;
      if (!isRoot) {
        d.style.background = "hsl(" + hueOf(m.module) + " 55% 60% / 0.55)";
        d.tabIndex = 0;
        d.addEventListener("click", function () {
          var tree = flameCache.tree;
          if (m.fn) { expandTo(m.fn); state.selected = m.fn; treeStatus.textContent = "Selected: " + m.fn.label; }
          flameCache = { sel: state.selected, showAll: state.showAll, tree: tree };
          state.flameRoot = m;
          render();
        });
        d.addEventListener("keydown", function (ev) { if (ev.key === "Enter") d.click(); });
      }
      flameEl.appendChild(d);
      boxes++;
      maxDepth = Math.max(maxDepth, depth);
    }
    box(top, 0, 1, 0, true);
    // Breadth-first layout: each child gets its share of its parent's width.
    var queue = [{ m: top, x: 0, w: 1, depth: 1 }];
    while (queue.length && boxes < FLAME_MAX_BOXES) {
      var q = queue.shift(), x = q.x, list = visibleKids(q.m);
      for (var i = 0; i < list.length && boxes < FLAME_MAX_BOXES; i++) {
        var k = list[i], w = q.w * k.value / q.m.value;
        if (w < 0.001) break; // narrower than a pixel on most screens
        box(k, x, w, q.depth, false);
        if (q.depth < 400) queue.push({ m: k, x: x, w: w, depth: q.depth + 1 });
        x += w;
      }
    }
    flameEl.style.height = ((maxDepth + 1) * ROW + 4) + "px";
  }

  /* -------------------------------------------------------------- timeline */

  var tlEl = document.getElementById("timeline");
  var tlCaption = document.getElementById("timeline-caption");

  function groupOf(n) {
    if (n.parent === null) return { order: 0, label: "Operation" };
    if (n.ownerId !== null) return { order: 3000 + n.ownerId, label: "Output owner o-" + n.ownerId };
    if (n.skind === "activity") return { order: 2000 + (n.query || 0) * 2 + 1, label: "Query q-" + n.query + " scan output" };
    if (n.query !== null) return { order: 2000 + n.query * 2, label: "Query q-" + n.query + " planning" };
    return { order: 1, label: "Phases and stages" };
  }

  function niceStep(span) {
    var raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
    var m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  function renderTimeline() {
    while (tlEl.firstChild) tlEl.removeChild(tlEl.firstChild);
    var sel = state.selected;
    var selSem = sel ? (sel.type === "s" ? sel : sel.sem) : roots[0];
    if (!selSem) { tlCaption.textContent = "No operation records are available."; return; }
    var root = selSem.root || selSem, t0 = root.start;
    var nodes = [], stack = [root], tEnd = root.dur !== null ? root.start + root.dur : root.start;
    while (stack.length) {
      var n = stack.pop();
      nodes.push(n);
      if (n.dur !== null) tEnd = Math.max(tEnd, n.start + n.dur);
      n.kids.forEach(function (c) { stack.push(c); });
    }
    var lanes = data.lanes.filter(function (l) { return l[0] === root.op; });
    lanes.forEach(function (l) { var iv = l[6]; if (iv.length) tEnd = Math.max(tEnd, iv[iv.length - 1]); });
    var span = Math.max(1, tEnd - t0);
    tlCaption.textContent = "Timeline of " + root.label + " (" + fmtDuration(root.dur) + "): phases, stages, query planning, " +
      "scan-output waits, output owners and worker lanes on one wall-clock ruler. Click a bar to select it.";
    var ruler = el("div", "tl-row"), rl = el("div", "tl-label", "Time since start"), rt = el("div", "tl-ruler");
    rt.style.flex = "1";
    var step = niceStep(span);
    for (var t = 0; t <= span; t += step) {
      var tick = el("div", "tl-tick", fmtDuration(t));
      tick.style.left = (100 * t / span) + "%";
      rt.appendChild(tick);
    }
    ruler.appendChild(rl);
    ruler.appendChild(rt);
    tlEl.appendChild(ruler);
    // Groups, each packed into sub-rows so nested or overlapping bars stay visible.
    var groups = new Map();
    nodes.sort(function (a, b) { return a.start - b.start || a.depth - b.depth || a.id - b.id; });
    var bars = 0;
    nodes.forEach(function (n) {
      var g = groupOf(n), key = g.order + "|" + g.label;
      if (!groups.has(key)) groups.set(key, { order: g.order, label: g.label, rows: [] });
      var grp = groups.get(key), end = n.dur !== null ? n.start + n.dur : tEnd, placed = null;
      for (var r = 0; r < grp.rows.length; r++) if (grp.rows[r].end <= n.start) { placed = grp.rows[r]; break; }
      if (!placed) { placed = { end: -Infinity, items: [] }; grp.rows.push(placed); }
      placed.end = Math.max(end, n.start + 1);
      placed.items.push(n);
    });
    var ordered = Array.from(groups.values()).sort(function (a, b) { return a.order - b.order; });
    ordered.forEach(function (grp) {
      grp.rows.forEach(function (row, ri) {
        var line = el("div", "tl-row"), label = el("div", "tl-label", ri === 0 ? grp.label : "");
        label.title = grp.label;
        var track = el("div", "tl-track");
        row.items.forEach(function (n) {
          if (bars++ > TIMELINE_MAX_BARS) return;
          var end = n.dur !== null ? n.start + n.dur : tEnd;
          var b = el("div", "tl-bar" + (n.dur === 0 ? " instant" : "") + (n.dur === null ? " incomplete" : "") +
            (n === selSem ? " selected" : ""), n.dur === 0 ? "" : n.label);
          b.style.left = (100 * (n.start - t0) / span) + "%";
          b.style.width = (100 * (end - n.start) / span) + "%";
          b.title = n.label + "\n" + fmtDuration(n.dur) + " from +" + fmtDuration(n.start - t0) +
            (n.result ? " (" + n.result + ")" : "");
          b.addEventListener("click", function () { expandTo(n); select(n, false); });
          track.appendChild(b);
        });
        line.appendChild(label);
        line.appendChild(track);
        tlEl.appendChild(line);
      });
    });
    lanes.forEach(function (l) {
      var line = el("div", "tl-row");
      var name = "Query q-" + l[1] + " worker w-" + l[2] + (str(l[3]) ? " (" + str(l[3]) + ")" : "");
      var label = el("div", "tl-label", name);
      label.title = name + ": busy " + fmtDuration(l[4]) + " in " + l[5] + " operator activities";
      var track = el("div", "tl-track"), iv = l[6];
      for (var k = 0; k + 1 < iv.length && bars < TIMELINE_MAX_BARS; k += 2, bars++) {
        var b = el("div", "tl-bar lane");
        b.style.left = (100 * (iv[k] - t0) / span) + "%";
        b.style.width = (100 * (iv[k + 1] - iv[k]) / span) + "%";
        b.title = name + "\nbusy " + fmtDuration(iv[k + 1] - iv[k]) + " from +" + fmtDuration(iv[k] - t0);
        track.appendChild(b);
      }
      line.appendChild(label);
      line.appendChild(track);
      tlEl.appendChild(line);
    });
  }

  /* ------------------------------------------------------------------ start */

  var first = sorted(roots)[0] || null;
  if (first) {
    state.selected = first;
    treeStatus.textContent = "Selected: " + first.label;
  }
  render();
})();
