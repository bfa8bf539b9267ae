"use strict";
// casegate's HTML viewer. Every value from the run is untrusted model output: it is only
// ever set with textContent or as an attribute's value, never parsed as HTML.
(function () {
  var data = JSON.parse(document.getElementById("casegate-data").textContent);
  var cases = data.cases;
  // One run, no baseline: no "changed", and a status rather than a change of one.
  var oneRun = data.head.kind === "run";
  var byId = new Map();
  cases.forEach(function (c) { byId.set(c.id, c); });

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      if (arguments[i]) { parent.appendChild(arguments[i]); }
    }
    return parent;
  }
  function money(v) { return v === null || v === undefined ? "n/a" : "$" + v.toFixed(4); }
  function ms(v) { return v === null || v === undefined ? "n/a" : Math.round(v) + " ms"; }
  function signed(v) {
    if (v === null || v === undefined) { return "—"; }
    return (v > 0 ? "+" : v < 0 ? "−" : "±") + Math.abs(v).toFixed(3);
  }

  var search = document.getElementById("search");
  var tag = document.getElementById("tag");
  var status = document.getElementById("status");
  var critical = document.getElementById("critical");
  var changed = document.getElementById("changed");
  var sort = document.getElementById("sort");
  var body = document.getElementById("case-rows");
  var count = document.getElementById("shown");
  var detail = document.getElementById("detail");

  var tags = new Set();
  cases.forEach(function (c) { c.tags.forEach(function (t) { tags.add(t); }); });
  Array.from(tags).sort().forEach(function (t) {
    var option = el("option", null, t);
    option.value = t;
    tag.appendChild(option);
  });

  function matches(c) {
    var words = search.value.trim().toLowerCase();
    if (words) {
      var hay = [c.id, c.reason, c.kind].concat(c.tags, c.candidate.checks.map(function (k) {
        return k.check + " " + k.reason;
      })).join(" ").toLowerCase();
      if (hay.indexOf(words) === -1) { return false; }
    }
    if (tag.value && c.tags.indexOf(tag.value) === -1) { return false; }
    if (status.value && c.status !== status.value) { return false; }
    if (critical.checked && !c.critical) { return false; }
    if (changed.checked && !c.changed) { return false; }
    return true;
  }

  // Missing figures sort last whichever way.
  function by(key, descending) {
    return function (a, b) {
      var x = a[key], y = b[key];
      if (x === null && y === null) { return a.id < b.id ? -1 : 1; }
      if (x === null) { return 1; }
      if (y === null) { return -1; }
      if (x === y) { return a.id < b.id ? -1 : 1; }
      return (x < y ? -1 : 1) * (descending ? -1 : 1);
    };
  }
  var orders = {
    "id": function (a, b) { return a.id < b.id ? -1 : a.id > b.id ? 1 : 0; },
    "score": by("score_change", false),
    "cost": by("cost", true),
    "latency": by("latency", true)
  };

  function render() {
    var shown = cases.filter(matches).sort(orders[sort.value] || orders.id);
    body.replaceChildren();
    shown.forEach(function (c) {
      var row = el("tr", "case-row status-" + (c.status || "absent"));
      row.dataset.id = c.id;
      row.tabIndex = 0;
      var name = el("td", "case-id", c.id);
      if (c.critical) { add(name, el("span", "badge critical", "critical")); }
      add(row, name,
        el("td", null, oneRun ? c.status : (c.base || "—") + " → " + (c.status || "—")),
        el("td", "kind", c.kind),
        el("td", "num", signed(c.score_change)),
        el("td", "num", money(c.cost)),
        el("td", "num", ms(c.latency)),
        el("td", "tags", c.tags.join(", ")));
      body.appendChild(row);
    });
    count.textContent = shown.length + " of " + cases.length + " case(s)";
  }

  function checkList(checks) {
    var list = el("ul", "checks");
    checks.forEach(function (k) {
      var item = el("li", k.ok ? "ok" : "failed");
      add(item, el("span", "mark", k.ok ? "✓" : "✗"), el("span", "check-name", k.check));
      if (k.score !== null && k.score !== undefined) {
        add(item, el("span", "score", "score " + k.score.toFixed(3)));
      }
      if (k.reason) {
        add(item, el("div", k.judge ? "reason rationale" : "reason",
          (k.judge ? "the judge's rationale: " : "") + k.reason));
      }
      list.appendChild(item);
    });
    if (!checks.length) { list.appendChild(el("li", "none", "(no check judged)")); }
    return list;
  }

  function runs(list) {
    var pre = el("pre", "diff-text");
    list.forEach(function (run) {
      var tagName = run[0] === "-" ? "del" : run[0] === "+" ? "ins" : "span";
      pre.appendChild(el(tagName, null, run[1]));
    });
    return pre;
  }

  function diffBlock(sample) {
    if (sample.diff_skipped) {
      return el("p", "muted", "the change from the baseline's output is not drawn here (too " +
        "long, or past the page's budget for diffs): `casegate show " + currentId + "` prints it");
    }
    if (!sample.diff) { return null; }
    var wrap = el("div", "diff");
    add(wrap, el("h5", null, sample.diff.length ?
      "change from the baseline's output (" + (sample.diff_kind === "lines" ? "by line" : "by word") + ")" :
      "the same as the baseline's output"));
    if (sample.diff.length) { wrap.appendChild(runs(sample.diff)); }
    if (sample.tools_diff) {
      add(wrap, el("h5", null, "tool calls, changed from the baseline's (by line)"),
        runs(sample.tools_diff));
    }
    return wrap;
  }

  // The first sample and every one that did not pass open; the others fold (a baseline
  // may hold 36 samples of each case).
  function sampleBlock(sample, total) {
    var box = el("details", "sample status-" + sample.status);
    box.open = sample.sample === 0 || sample.status !== "pass";
    var facts = ["sample " + (sample.sample + 1) + " of " + total, sample.status];
    if (sample.model) { facts.push(sample.model); }
    if (sample.latency !== null) { facts.push(ms(sample.latency)); }
    if (sample.cost !== null) { facts.push(money(sample.cost)); }
    add(box, el("summary", null, facts.join(" · ")));
    if (sample.reason) { add(box, el("p", "error", sample.reason)); }
    if (sample.checks.length) { add(box, checkList(sample.checks)); }
    add(box, el("pre", "output", sample.text === null ? "(no output)" : sample.text || "(empty output)"));
    add(box, diffBlock(sample));
    if (sample.tool_calls) {
      add(box, el("h5", null, "tool calls"), el("pre", "tools", sample.tool_calls));
    }
    if (sample.contexts.length) {
      add(box, el("h5", null, "contexts"));
      var list = el("ol", "contexts");
      sample.contexts.forEach(function (ctx) {
        var item = el("li");
        add(item, el("span", "context-id", ctx.id), el("pre", "context", ctx.text));
        list.appendChild(item);
      });
      add(box, list);
    }
    return box;
  }

  function sideBlock(title, side) {
    var column = add(el("section", "side"), el("h3", null, title));
    if (!side.present) {
      add(column, el("p", "absent", "not in this run"));
      return column;
    }
    add(column,
      el("p", "status-line status-" + side.status,
        side.status + " · " + side.passes + "/" + side.samples_count + " sample(s) passed"),
      side.reason ? el("p", "reason", side.reason) : null,
      el("h4", null, "checks"),
      checkList(side.checks));
    side.samples.forEach(function (s) { column.appendChild(sampleBlock(s, side.samples.length)); });
    return column;
  }

  var currentId = "";
  function open(id) {
    var c = byId.get(id);
    if (!c) { return; }
    currentId = id;
    detail.replaceChildren();
    var head = el("h2", null, c.id);
    if (c.critical) { add(head, el("span", "badge critical", "critical")); }
    add(detail, head, el("p", "kind", [c.kind, "version " + c.version].filter(Boolean).join(" · ")));
    c.about.forEach(function (a) { detail.appendChild(el("p", "about", a)); });
    if (c.pairwise.length || c.pairwise_note) {
      add(detail, el("h3", null, "pairwise judge: the candidate's output against the baseline's"));
      var pairs = el("ul", "pairs");
      c.pairwise.forEach(function (p) {
        var item = el("li", "pair pair-" + p.outcome);
        add(item, el("span", "outcome", "sample " + (p.sample + 1) + ": " + p.outcome));
        if (p.reason) { add(item, el("div", "reason rationale", "the judge's rationale: " + p.reason)); }
        pairs.appendChild(item);
      });
      if (c.pairwise_note) { pairs.appendChild(el("li", "muted", "not compared: " + c.pairwise_note)); }
      add(detail, pairs);
    }
    var sides = el("div", "sides");
    if (data.head.kind === "comparison") { add(sides, sideBlock("baseline", c.baseline)); }
    add(sides, sideBlock("candidate", c.candidate));
    add(detail, sides);
    detail.hidden = false;
    detail.scrollIntoView();
    Array.from(body.children).forEach(function (row) {
      row.classList.toggle("selected", row.dataset.id === id);
    });
    try {  // a link to the case; some browsers refuse it for a file:// page
      history.replaceState(null, "", "#" + encodeURIComponent(id));
    } catch (e) { /* the page works without it */ }
  }

  body.addEventListener("click", function (event) {
    var row = event.target.closest("tr.case-row");
    if (row) { open(row.dataset.id); }
  });
  body.addEventListener("keydown", function (event) {
    var row = event.target.closest("tr.case-row");
    if (row && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      open(row.dataset.id);
    }
  });
  [search, tag, status, critical, changed, sort].forEach(function (control) {
    control.addEventListener("input", render);
    control.addEventListener("change", render);
  });
  render();
  if (location.hash.length > 1) {
    try { open(decodeURIComponent(location.hash.slice(1))); } catch (e) { /* not a case */ }
  }
  document.body.classList.add("ready");
})();
