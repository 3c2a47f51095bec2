// The logs pages: follow a task's log (or a job's merged tail) over the page's own event
// stream (/ui/.../logs/stream, drover.api.ui.logfollow), appending lines to the <pre> and
// keeping at most data-max-lines of them in the page. Follow opens or closes the stream;
// Pause holds new lines (counted, at most the same number) until it is released. The filter
// is applied by the server: changing it opens the stream again with the new query.
(function () {
  "use strict";
  var root = document.getElementById("logs");
  if (!root || !window.EventSource) return;
  var pre = document.getElementById("log-lines");
  var state = document.getElementById("log-state");
  var problem = document.getElementById("log-problem");
  var followButton = document.getElementById("log-follow");
  var pauseButton = document.getElementById("log-pause");
  var form = document.getElementById("log-form");
  var empty = document.getElementById("log-empty");
  var live = document.getElementById("live");
  var max = Number(root.dataset.maxLines) || 2000;
  var merged = root.dataset.mode === "job";
  var streamUrl = root.dataset.stream;
  var source = null;
  var following = true;
  var paused = false;
  var held = [];          // lines that came while paused (at most `max`)
  var dropped = 0;        // held lines let go to stay within `max`
  var colours = {};       // alloc short ID -> colour class, in order of appearance

  followButton.hidden = false;
  pauseButton.hidden = false;

  function say(text) { state.textContent = text; }

  // The topbar's indicator: this page's live feed is its log stream.
  function setLive(s, text) {
    if (!live) return;
    live.dataset.state = s;
    live.querySelector(".live-text").textContent = text;
  }

  function showProblem(text) {
    problem.textContent = text;
    problem.hidden = !text;
  }

  function atBottom() { return pre.scrollHeight - pre.scrollTop - pre.clientHeight < 40; }

  function colourOf(label) {
    var id = label.split(" ")[0];
    if (!(id in colours)) colours[id] = "c" + (Object.keys(colours).length % 6);
    return colours[id];
  }

  function lineNode(item) {
    var span = document.createElement("span");
    span.className = "ln";
    if (merged) {
      var tag = document.createElement("span");
      tag.className = "src " + colourOf(item[0]);
      tag.textContent = item[0];
      span.appendChild(tag);
      span.appendChild(document.createTextNode(" " + item[1] + "\n"));
    } else {
      span.textContent = item + "\n";
    }
    return span;
  }

  function append(items) {
    if (!items.length) return;
    if (empty) { empty.remove(); empty = null; }
    var stick = atBottom();
    var frag = document.createDocumentFragment();
    items.slice(-max).forEach(function (item) { frag.appendChild(lineNode(item)); });
    pre.appendChild(frag);
    var extra = pre.childElementCount - max;
    while (extra-- > 0) pre.removeChild(pre.firstElementChild);
    if (stick) pre.scrollTop = pre.scrollHeight;
  }

  function receive(items) {
    if (!paused) { append(items); return; }
    held = held.concat(items);
    if (held.length > max) { dropped += held.length - max; held = held.slice(-max); }
    say("Paused: " + (held.length + dropped) + " new lines" + (dropped ? " (the oldest " + dropped + " let go)" : ""));
  }

  function notice(n) {
    var span = document.createElement("span");
    span.className = "ln notice";
    if (n.label) {
      var tag = document.createElement("span");
      tag.className = "src " + colourOf(n.label);
      tag.textContent = n.label;
      span.appendChild(tag);
    }
    span.appendChild(document.createTextNode(" -- " + n.text + "\n"));
    var stick = atBottom();
    pre.appendChild(span);
    if (pre.childElementCount > max) pre.removeChild(pre.firstElementChild);
    if (stick) pre.scrollTop = pre.scrollHeight;
  }

  function close(text) {
    if (source) { source.close(); source = null; }
    if (text !== undefined) say(text);
  }

  function open() {
    close();
    var url = streamUrl + (streamUrl.indexOf("?") < 0 ? "?" : "&") + "follow=" + (following ? "true" : "false");
    source = new EventSource(url);
    say("Connecting");
    // The stream starts with the log's tail: it replaces what the page showed. (A reconnect
    // of EventSource's own starts it again the same way.)
    source.addEventListener("start", function () {
      pre.textContent = "";
      showProblem("");
      say(following ? (paused ? "Paused" : "Following") : "Tail");
      setLive("live", "Live");
    });
    source.addEventListener("lines", function (e) { receive(JSON.parse(e.data)); });
    source.addEventListener("notice", function (e) { notice(JSON.parse(e.data)); });
    source.addEventListener("problem", function (e) {
      showProblem(JSON.parse(e.data));
      close("Stopped");
      setLive("paused", "Stopped");
    });
    source.addEventListener("end", function () { close(following ? "The log ended" : "Tail shown"); setLive("paused", "Idle"); });
    source.onerror = function () {
      setLive("reconnecting", "Reconnecting");
      say("Reconnecting");
    };
  }

  // drover.js marks a hidden tab paused (it closes the tab's feed); this stream goes on.
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && source) setLive("live", "Live");
  });

  followButton.addEventListener("click", function () {
    following = !following;
    followButton.setAttribute("aria-pressed", String(following));
    if (following) open(); else { close("Not following"); setLive("paused", "Not following"); }
  });

  pauseButton.addEventListener("click", function () {
    paused = !paused;
    pauseButton.setAttribute("aria-pressed", String(paused));
    pauseButton.textContent = paused ? "Resume" : "Pause";
    if (!paused) {
      var lines = held;
      held = [];
      if (dropped) notice({ label: "", text: dropped + " lines let go while paused" });
      dropped = 0;
      append(lines);
      pre.scrollTop = pre.scrollHeight;
      say(source ? "Following" : state.textContent);
    } else {
      say("Paused");
    }
  });

  // A new filter, task or group: the same page with the new query, followed from its tail.
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var q = new URLSearchParams(new FormData(form));
    Array.from(q.keys()).forEach(function (k) { if (!q.get(k)) q.delete(k); });
    var path = window.location.pathname;
    streamUrl = path + "/stream?" + q.toString();
    window.history.replaceState(null, "", path + "?" + q.toString());
    // The type links and Download follow the task chosen.
    document.querySelectorAll(".log-types a").forEach(function (a) {
      var p = new URLSearchParams(q); p.set("type", a.textContent.trim());
      a.setAttribute("href", path + "?" + p.toString());
    });
    var download = document.getElementById("log-download");
    if (download) {
      var d = new URLSearchParams({ task: q.get("task") || "", type: q.get("type") || "stdout" });
      download.setAttribute("href", path + "/download?" + d.toString());
    }
    held = []; dropped = 0;
    open();
  });
  form.querySelectorAll("select").forEach(function (s) {
    // Another task or group is another page (its title, its links): load it.
    s.addEventListener("change", function () { form.submit(); });
  });

  open();
})();
