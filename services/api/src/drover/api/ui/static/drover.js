// Drover's console: the tab's one event-stream connection, fragment refreshes, keyboard
// shortcuts, the theme toggle and confirmations. No build step; htmx is loaded before it.
(function () {
  "use strict";
  var body = document.body;
  var index = Number(body.dataset.index || 0);   // the last log index the tab has seen
  var source = null;                              // the tab's one EventSource
  var subscribed = "";                            // the topics it was opened with
  var registered = {};                            // fragment id -> the URL the server pushes it from
  var pushing = false;                            // whether the server was told them (or the tab re-fetches)
  var retry = 1000;                               // backoff of our own reopens
  var stopped = false;                            // signed out by the server: never reopen
  var MAX_PUSHED = 64;                            // the most fragments the server pushes (push.MAX_FRAGMENTS)
  var MIN_GAP = 1000;                             // a fragment re-renders at most once a second
  var lastRefresh = {};                           // fragment id -> time of its last refresh
  var pending = {};                               // fragment id -> timer of a refresh to come
  var atLeast = {};                               // fragment id -> the index a refetch names

  // The index, also on the page (what a reconnect resumes from; tests read it).
  function seen(e) {
    index = Math.max(index, Number(e.lastEventId) || 0);
    body.dataset.index = String(index);
  }

  function fragments() { return Array.prototype.slice.call(document.querySelectorAll("[data-topics]")); }

  function topicsOf(el) { return (el.dataset.topics || "").split(/\s+/).filter(Boolean); }

  // A fragment's URL as the server is told it (same-origin path and query, percent-encoded).
  function urlOf(el) {
    var u = new URL(el.getAttribute("hx-get"), window.location.href);
    return u.pathname + u.search;
  }

  function liveFragments() { return fragments().filter(function (el) { return topicsOf(el).length; }); }

  // Whether the live fragments are others, or at other URLs, than the server pushes.
  function moved() {
    if (!pushing) return false;   // re-fetched by the tab: their URLs are its own business
    var els = liveFragments();
    if (els.length !== Object.keys(registered).length) return true;
    return els.some(function (el) { return registered[el.id] !== urlOf(el); });
  }

  function allTopics() {
    var found = {};
    fragments().forEach(function (el) { topicsOf(el).forEach(function (t) { found[t] = true; }); });
    return Object.keys(found).sort();
  }

  function setLive(state, text) {
    var el = document.getElementById("live");
    if (!el) return;
    el.dataset.state = state;
    el.querySelector(".live-text").textContent = text;
  }

  // Ask htmx to re-fetch the fragment, no sooner than MIN_GAP after its last refresh; hits
  // meanwhile fold into the refresh already scheduled. (What the server does not push: a
  // refresh of everything, or a fragment whose answer it could not push.)
  function refresh(id, at) {
    if (at) atLeast[id] = Math.max(atLeast[id] || 0, at);
    if (pending[id]) return;
    var wait = Math.max(0, (lastRefresh[id] || 0) + MIN_GAP - Date.now());
    pending[id] = setTimeout(function () {
      delete pending[id];
      lastRefresh[id] = Date.now();
      var el = document.getElementById(id);
      if (!el || !window.htmx) return;
      // The index that woke it: the server answers from a read at least that new, shared
      // with every tab woken by the same event.
      var url = el.getAttribute("hx-get") + "&at=" + Math.max(index, atLeast[id] || 0);
      delete atLeast[id];
      // Its own request queue (htmx queues by source element: one shared source would drop all
      // but the last of fragments refreshed together).
      window.htmx.ajax("GET", url, { source: el, target: el, swap: "outerHTML" });
    }, wait);
  }

  // A fragment the server pushed: its id, then its HTML, swapped in as htmx swaps an answer.
  function onFragment(e) {
    var cut = e.data.indexOf("\n");
    var id = e.data.slice(0, cut);
    var el = document.getElementById(id);
    lastRefresh[id] = Date.now();
    if (!el || !window.htmx) return;
    window.htmx.swap(el, e.data.slice(cut + 1), { swapStyle: "outerHTML" });
    var now = document.getElementById(id);
    // The server follows the URL the pushed fragment names (a topology group's version).
    if (now && registered[id]) registered[id] = urlOf(now);
  }

  function onRefetch(e) {
    var words = e.data.split(" ");
    var at = Number(words.shift()) || 0;
    words.forEach(function (id) { refresh(id, at); });
  }

  function onChange(e) {
    seen(e);
    var hit = {};
    e.data.split(" ").forEach(function (t) { hit[t] = true; });
    fragments().forEach(function (el) {
      if (topicsOf(el).some(function (t) { return hit[t]; })) refresh(el.id);
    });
  }

  function refreshAll() { fragments().forEach(function (el) { refresh(el.id); }); }

  function open() {
    var topics = allTopics();
    if (stopped) return;
    if (!topics.length) { setLive("static", "Not live"); return; }   // a form: nothing to follow
    if (document.hidden) return;
    var q = new URLSearchParams();
    topics.forEach(function (t) { q.append("topic", t); });
    // Its live fragments: the server pushes them when an event touches their topics. (A page
    // of more than MAX_PUSHED, or whose URLs make too long a query, re-fetches them itself.)
    registered = {};
    var frags = new URLSearchParams();
    liveFragments().forEach(function (el) {
      registered[el.id] = urlOf(el);
      frags.append("frag", el.id + " " + registered[el.id] + " " + topicsOf(el).join(" "));
      // Shown less than a second ago: the server keeps to the once a second across the reopen.
      var wait = (lastRefresh[el.id] || 0) + MIN_GAP - Date.now();
      if (wait > 0) frags.append("wait", el.id + " " + Math.ceil(wait));
    });
    pushing = Object.keys(registered).length <= MAX_PUSHED && frags.toString().length <= 8000;
    if (pushing) frags.forEach(function (v, k) { q.append(k, v); });
    q.set("last", String(index));
    subscribed = topics.join(" ");
    source = new EventSource("/ui/events?" + q.toString());
    source.addEventListener("hello", function (e) {
      retry = 1000;
      body.dataset.sseFrom = e.data;   // where the server resumed from (the index asked for)
      body.dataset.sseOpens = String(Number(body.dataset.sseOpens || 0) + 1);
      setLive("live", "Live");
    });
    source.addEventListener("change", onChange);
    source.addEventListener("fragment", onFragment);
    source.addEventListener("refetch", onRefetch);
    source.addEventListener("index", seen);
    source.addEventListener("resync", function (e) {
      seen(e);
      refreshAll();
    });
    // The signed-in token was deleted or expired: stop (a reconnect would be refused).
    source.addEventListener("signedout", function () {
      stopped = true;
      close();
      setLive("signedout", "Signed out");
    });
    source.onerror = function () {
      if (!source) return;
      setLive("reconnecting", "Reconnecting");
      // EventSource reconnects by itself (sending Last-Event-ID); once it gives up, reopen here.
      if (source && source.readyState === EventSource.CLOSED) {
        source = null;
        setTimeout(open, retry);
        retry = Math.min(retry * 2, 30000);
      }
    };
  }

  function close() {
    if (source) { source.close(); source = null; }
  }

  // A hidden tab holds no connection; shown again, it resumes from the index it had.
  document.addEventListener("visibilitychange", function () {
    if (document.hidden) { close(); setLive("paused", "Paused"); } else if (!source) { open(); }
  });

  // A swapped fragment may show other topics (a new deployment), or be at another URL (a
  // filter applied): reopen, naming them, if they moved. (Checked once the swap is over: a
  // pushed fragment's new URL is the server's already.)
  document.addEventListener("htmx:afterSwap", function () {
    setTimeout(function () {
      if (stopped || (source === null && document.hidden)) return;
      if (allTopics().join(" ") !== subscribed || moved()) { close(); open(); }
    }, 0);
  });

  // A topology box is a link to its client as a whole (its name and segments are links of their own).
  document.addEventListener("click", function (e) {
    var box = e.target.closest && e.target.closest(".tnode");
    if (!box || e.target.closest("a")) return;
    window.location.href = box.querySelector("a").getAttribute("href");
  });

  // A refusal (4xx) is still an answer to show where it asked, not an error to drop: the plan
  // result shows parse problems and a run's conflict.
  document.addEventListener("htmx:beforeSwap", function (e) {
    var status = e.detail.xhr.status;
    var target = e.detail.target;
    if (status >= 400 && status < 500 && target && target.hasAttribute("data-swap-refusals")) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });

  // ---- the job editor: Tab indents, and a plan is stale once its spec changes ----
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (e.key !== "Tab" || e.shiftKey || e.ctrlKey || e.metaKey || e.altKey) return;
    if (!t || t.tagName !== "TEXTAREA" || !t.dataset.tabSpaces) return;
    e.preventDefault();
    var spaces = new Array(Number(t.dataset.tabSpaces) + 1).join(" ");
    var start = t.selectionStart, end = t.selectionEnd;
    t.setRangeText(spaces, start, end, "end");
    t.dispatchEvent(new Event("input", { bubbles: true }));
  });

  function planIsStale() {
    var run = document.querySelector("#plan form.run-form");
    if (!run) return;
    var button = run.querySelector("button[type=submit]");
    if (button) button.disabled = true;
    var note = run.querySelector(".stale-note");
    if (note) note.hidden = false;
  }
  var editor = document.getElementById("run-editor");
  if (editor) {
    editor.addEventListener("input", planIsStale);
    editor.addEventListener("change", planIsStale);
  }

  // ---- confirmations, theme, shortcuts ----
  document.addEventListener("submit", function (e) {
    var msg = e.target.dataset && e.target.dataset.confirm;
    if (msg && !window.confirm(msg)) e.preventDefault();
  });

  function toggleTheme() {
    var root = document.documentElement;
    var dark = root.dataset.theme ? root.dataset.theme === "dark" : window.matchMedia("(prefers-color-scheme: dark)").matches;
    var next = dark ? "light" : "dark";
    root.dataset.theme = next;
    document.cookie = "drover_theme=" + next + "; path=/; max-age=31536000; samesite=lax";
  }

  var themeButton = document.getElementById("theme-toggle");
  if (themeButton) themeButton.addEventListener("click", function (e) { e.preventDefault(); toggleTheme(); });

  var help = document.getElementById("shortcuts");
  var helpButton = document.getElementById("shortcuts-open");
  if (helpButton && help) helpButton.addEventListener("click", function () { help.showModal(); });

  var GO = { o: "/ui/", j: "/ui/jobs", n: "/ui/nodes", t: "/ui/topology", e: "/ui/evaluations", s: "/ui/stream" };
  var prefix = null;
  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) {
      if (e.key === "Escape") t.blur();
      return;
    }
    if (prefix === "g" && GO[e.key]) { prefix = null; window.location.href = GO[e.key]; return; }
    prefix = null;
    if (e.key === "g") { prefix = "g"; setTimeout(function () { prefix = null; }, 1500); }
    else if (e.key === "/") { e.preventDefault(); var s = document.getElementById("job-search") || document.getElementById("node-search") || document.getElementById("eval-search") || document.getElementById("page-search") || document.getElementById("global-search"); if (s) s.focus(); }
    else if (e.key === "t") toggleTheme();
    else if (e.key === "?" && help) help.showModal();
  });

  open();
})();
