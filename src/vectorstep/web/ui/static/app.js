// Live run pages (server-sent events → refetch the changing part) and disclosures that stay as the reader left them.
(function () {
  "use strict";
  var remembered = {}; // details[data-key] → open?

  document.addEventListener("toggle", function (event) {
    var target = event.target;
    if (target.tagName === "DETAILS" && target.dataset.key) {
      remembered[target.dataset.key] = target.open;
    }
  }, true);

  document.addEventListener("htmx:afterSettle", function (event) {
    event.detail.elt.querySelectorAll("details[data-key]").forEach(function (details) {
      var open = remembered[details.dataset.key];
      if (open !== undefined) { details.open = open; }
    });
  });

  function follow(run) {
    if (!run.dataset.events || !window.EventSource) { return; }
    var source = new EventSource(run.dataset.events);
    var refresh = function () {
      window.htmx.ajax("GET", run.dataset.fragment, { target: "#run-live", swap: "outerHTML" });
    };
    source.addEventListener("step", refresh);
    source.addEventListener("log", refresh);
    source.addEventListener("finished", function () { source.close(); refresh(); });
    source.onerror = function () {
      if (source.readyState === EventSource.CLOSED) { refresh(); }
    };
  }

  // A claim's evidence link opens the trace disclosures around its target, then shows it.
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-reveal]");
    if (!link) { return; }
    var target = document.getElementById(link.getAttribute("href").slice(1));
    if (!target) { return; }
    event.preventDefault();
    for (var node = target; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") { node.open = true; }
    }
    target.scrollIntoView({ block: "center" });
    target.classList.remove("flash");
    void target.offsetWidth; // restart the highlight animation
    target.classList.add("flash");
    history.replaceState(null, "", link.getAttribute("href"));
  });

  // The marking queue from the keyboard: j/k move between steps, c/p/i mark the focused one, o opens its run.
  document.addEventListener("keydown", function (event) {
    var queue = document.getElementById("marking-queue");
    if (!queue || event.ctrlKey || event.metaKey || event.altKey) { return; }
    var tag = event.target.tagName;
    if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") { return; }
    var rows = Array.prototype.slice.call(queue.querySelectorAll("tbody tr[tabindex]"));
    if (!rows.length) { return; }
    var current = event.target.closest ? event.target.closest("tr[tabindex]") : null;
    var at = rows.indexOf(current);
    if (event.key === "j" || event.key === "k") {
      var next = event.key === "j" ? Math.min(at + 1, rows.length - 1) : Math.max(at - 1, 0);
      rows[at === -1 ? 0 : next].focus();
      event.preventDefault();
    } else if (current && (event.key === "c" || event.key === "p" || event.key === "i")) {
      var button = current.querySelector("button[data-key='" + event.key + "']");
      var following = rows[at + 1] || rows[at - 1];
      if (button) {
        button.click();
        if (following) { following.focus(); }
        event.preventDefault();
      }
    } else if (current && event.key === "o") {
      var link = current.querySelector("a[data-open]");
      if (link) { link.click(); }
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    var run = document.getElementById("run");
    if (run) { follow(run); }
  });
})();
