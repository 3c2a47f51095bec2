// The event stream viewer (/ui/stream): reads /ui/stream/events (server-sent events, one per
// log position, /v1/event/stream's frame as JSON) and shows its events newest on top. Event
// data goes into the page as text only (textContent), never as HTML.
(function () {
  "use strict";
  var bar = document.getElementById("stream");
  if (!bar || bar.dataset.off) return;
  var rows = document.getElementById("stream-rows");
  var pauseButton = document.getElementById("stream-pause");
  var indexOut = document.getElementById("stream-index");
  var stateOut = document.getElementById("stream-state");
  var countOut = document.getElementById("stream-count");
  var keep = Math.max(1, Number(bar.dataset.keep) || 200);
  var from = Number(bar.dataset.from) || 0;      // the index asked for (0: now)
  var last = 0;                                   // the last log index seen
  var count = 0;
  var source = null;
  var paused = false;
  var retry = 1000;

  function setState(text, live) {
    stateOut.textContent = text;
    bar.dataset.state = live;
    var el = document.getElementById("live");
    if (el) {
      el.dataset.state = live;
      el.querySelector(".live-text").textContent = text;
    }
  }

  function seen(index) {
    if (index > last) {
      last = index;
      indexOut.textContent = String(last);
      bar.dataset.index = String(last);
    }
  }

  function cell(text, cls) {
    var td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text;
    return td;
  }

  // The payload's JSON, written out only when the row is opened (most never are).
  function payloadCell(event) {
    var td = document.createElement("td");
    var details = document.createElement("details");
    var summary = document.createElement("summary");
    summary.textContent = "Payload";
    var pre = document.createElement("pre");
    details.appendChild(summary);
    details.appendChild(pre);
    details.addEventListener("toggle", function () {
      if (details.open && !pre.textContent) pre.textContent = JSON.stringify(event.Payload, null, 2);
    });
    td.appendChild(details);
    return td;
  }

  function show(frame) {
    var received = new Date().toISOString().slice(11, 19);
    (frame.Events || []).forEach(function (event) {
      var tr = document.createElement("tr");
      tr.dataset.index = String(event.Index);
      tr.dataset.topic = String(event.Topic);
      tr.dataset.key = String(event.Key);
      tr.appendChild(cell(String(event.Index), "num"));
      tr.appendChild(cell(String(event.Topic)));
      tr.appendChild(cell(String(event.Type)));
      tr.appendChild(cell(String(event.Key), "key"));
      tr.appendChild(cell(String(event.Namespace || "")));
      tr.appendChild(cell(received, "muted"));
      tr.appendChild(payloadCell(event));
      rows.insertBefore(tr, rows.firstChild);
      count += 1;
    });
    while (rows.childElementCount > keep) rows.removeChild(rows.lastChild);
    countOut.textContent = String(count);
  }

  function url() {
    // Resuming (after Pause, or a reopen of our own): from the position after the last seen.
    var index = last ? last + 1 : from;
    return bar.dataset.source + (index ? "&index=" + index : "");
  }

  function open() {
    source = new EventSource(url());
    source.addEventListener("hello", function (e) {
      retry = 1000;
      seen(Number(e.data) || 0);
      bar.dataset.opens = String(Number(bar.dataset.opens || 0) + 1);
      bar.dataset.resumedFrom = e.data;
      setState("Live", "live");
    });
    source.addEventListener("frame", function (e) {
      var frame = JSON.parse(e.data);
      show(frame);
      seen(Number(frame.Index) || 0);
    });
    source.addEventListener("index", function (e) { seen(Number(e.data) || 0); });
    source.addEventListener("closed", function () {
      // The server closed the subscription (fallen too far behind): open again from the last index.
      close();
      setTimeout(open, retry);
    });
    source.onerror = function () {
      if (paused) return;
      setState("Reconnecting", "reconnecting");
      // EventSource reconnects by itself (Last-Event-ID); once it gives up, reopen here.
      if (source && source.readyState === EventSource.CLOSED) {
        source = null;
        setTimeout(function () { if (!paused && !source) open(); }, retry);
        retry = Math.min(retry * 2, 30000);
      }
    };
  }

  function close() {
    if (source) { source.close(); source = null; }
  }

  pauseButton.addEventListener("click", function () {
    paused = !paused;
    pauseButton.textContent = paused ? "Resume" : "Pause";
    pauseButton.setAttribute("aria-pressed", paused ? "true" : "false");
    if (paused) { close(); setState("Paused", "paused"); } else { open(); }
  });

  open();
})();
