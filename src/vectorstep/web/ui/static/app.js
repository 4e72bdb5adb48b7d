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

  document.addEventListener("DOMContentLoaded", function () {
    var run = document.getElementById("run");
    if (run) { follow(run); }
  });
})();
