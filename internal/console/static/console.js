// dialbox console: live updates over one Server-Sent Events stream per
// page (swapping in the parts the server renders again), a pause switch,
// and the copy button. Everything else works without it.
"use strict";

(function () {
  const main = document.getElementById("main");
  const url = main && main.dataset.live;
  const says = (main && main.dataset.liveSays) || "calls progress"; // what the page's updates follow
  const status = document.getElementById("live-status");
  const toggle = document.getElementById("live-toggle");
  let source = null;

  function say(text) {
    if (status) status.textContent = text;
  }

  function start() {
    source = new EventSource(url);
    source.addEventListener("open", function () { say("Live: updates as " + says + "."); });
    source.addEventListener("fragment", function (ev) {
      const f = JSON.parse(ev.data);
      const el = document.getElementById(f.id);
      if (el) el.innerHTML = f.html; // rendered and escaped by the server's templates
    });
    source.addEventListener("signedout", function () {
      stop();
      say("Signed out (the session ended): sign in again for live updates.");
    });
    source.addEventListener("error", function () {
      if (source && source.readyState === EventSource.CLOSED) say("Live updates stopped: reload the page.");
      else say("Live updates interrupted: reconnecting…");
    });
    toggle.textContent = "Pause live updates";
    toggle.setAttribute("aria-pressed", "false");
  }

  function stop() {
    if (source) source.close();
    source = null;
    toggle.textContent = "Resume live updates";
    toggle.setAttribute("aria-pressed", "true");
  }

  if (url && toggle && window.EventSource) {
    toggle.hidden = false;
    toggle.addEventListener("click", function () {
      if (source) {
        stop();
        say("Paused: figures stay as they are until you resume.");
      } else {
        start();
      }
    });
    start();
  }

  document.querySelectorAll("button.copy").forEach(function (btn) {
    const target = document.getElementById(btn.dataset.copy);
    if (!target || !navigator.clipboard) return;
    btn.hidden = false;
    btn.addEventListener("click", function () {
      navigator.clipboard.writeText(target.value).then(
        function () { btn.textContent = "Copied"; },
        function () { target.select(); btn.textContent = "Select and copy (Ctrl+C)"; });
    });
  });
})();
