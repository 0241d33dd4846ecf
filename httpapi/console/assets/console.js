// sless console: copy buttons, confirmations, live updates over Server-Sent
// Events and the invoke panel. Pages work without it; it never builds HTML
// from data (textContent only, and swapped regions come from the server's
// templates).
"use strict";

(function () {
  const status = document.getElementById("live-status");
  const say = (text) => { if (status) status.textContent = text; };

  // Copy buttons.
  document.addEventListener("click", (ev) => {
    const btn = ev.target.closest("button.copy");
    if (!btn) return;
    const text = btn.dataset.copy || "";
    const done = () => { btn.textContent = "Copied"; setTimeout(() => { btn.textContent = "Copy"; }, 1500); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, () => say("could not copy"));
    } else {
      const area = document.createElement("textarea");
      area.value = text;
      document.body.appendChild(area);
      area.select();
      try { document.execCommand("copy"); done(); } finally { area.remove(); }
    }
  });

  // A form with data-confirm asks before it is sent (Delete all dead letters).
  document.addEventListener("submit", (ev) => {
    const msg = ev.target.dataset && ev.target.dataset.confirm;
    if (msg && !window.confirm(msg)) ev.preventDefault();
  });

  // An opened invocation row loads its captured output from the record's page.
  async function loadOutput(details) {
    const pre = details.querySelector("pre[data-load]");
    if (!pre || pre.dataset.loaded) return;
    pre.dataset.loaded = "1";
    pre.textContent = "loading…";
    try {
      const res = await fetch(pre.dataset.load, { headers: { Accept: "text/html" }, credentials: "same-origin" });
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const out = doc.getElementById("inv-output");
      const err = doc.getElementById("inv-error");
      pre.textContent = (err ? err.textContent + "\n" : "") + (out ? out.textContent : "could not load the output (" + res.status + ")");
    } catch (e) {
      pre.textContent = "could not load the output";
      delete pre.dataset.loaded;
    }
  }
  document.addEventListener("toggle", (ev) => {
    if (ev.target.matches && ev.target.matches("details.inv") && ev.target.open) loadOutput(ev.target);
  }, true);

  // Live regions: on a change, fetch this page again and swap every element
  // marked data-live by its id, keeping open <details> open.
  let refreshing = false, again = false;
  async function refresh() {
    if (refreshing) { again = true; return; }
    refreshing = true;
    try {
      const res = await fetch(location.href, { headers: { Accept: "text/html" }, credentials: "same-origin" });
      if (res.redirected || !res.ok) { say("signed out or gone: reload the page"); return; }
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      document.querySelectorAll("[data-live][id]").forEach((old) => {
        const fresh = doc.getElementById(old.id);
        if (!fresh) return;
        const open = new Set([...old.querySelectorAll("details[open][id]")].map((d) => d.id));
        open.forEach((id) => { const d = fresh.querySelector("#" + CSS.escape(id)); if (d) d.open = true; });
        const adopted = document.adoptNode(fresh);
        old.replaceWith(adopted);
        adopted.querySelectorAll("details.inv[open]").forEach(loadOutput);
      });
      say("live · updated " + new Date().toLocaleTimeString());
    } catch (e) {
      say("live · update failed");
    } finally {
      refreshing = false;
      if (again) { again = false; setTimeout(refresh, 100); }
      watchQueued();
    }
  }

  // A delivery leaves the async queue without an event of its own (its
  // invocation's row may land before its state does): while something is
  // queued, the page looks again every 2 s.
  let queuedTimer = null;
  function watchQueued() {
    clearTimeout(queuedTimer);
    if (document.body.dataset.live && document.getElementById("queued")) queuedTimer = setTimeout(refresh, 2000);
  }
  watchQueued();

  const live = document.body.dataset.live;
  if (live && window.EventSource) {
    let timer = null;
    const soon = () => { clearTimeout(timer); timer = setTimeout(refresh, 150); };
    const src = new EventSource(live + "?after=" + encodeURIComponent(document.body.dataset.cursor || ""));
    let wasDown = false;
    src.addEventListener("open", () => {
      say("live");
      if (wasDown) { wasDown = false; soon(); } // catch up on what the gap hid
    });
    src.addEventListener("error", () => { wasDown = true; say("live · reconnecting"); });
    src.addEventListener("change", soon);
    src.addEventListener("invocations", soon);
  }

  // The invoke panel posts the event to the console's invoke route (the
  // proxy's Invoke, as the API's POST .../invoke): any function, trigger or
  // not. The answer is the function's; the console's own refusals (an
  // expired session or form) are pages, whose message is shown.
  const form = document.getElementById("invoke-form");
  if (form) {
    const panel = document.getElementById("invoke");
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const started = performance.now();
      const out = document.getElementById("invoke-result");
      const record = document.getElementById("invoke-record");
      const show = (status, text) => {
        document.getElementById("invoke-status").textContent = status;
        document.getElementById("invoke-duration").textContent = (performance.now() - started).toFixed(1) + " ms";
        document.getElementById("invoke-body-out").textContent = text.length > 65536 ? text.slice(0, 65536) + "\n… (cut)" : text;
        out.hidden = false;
      };
      record.hidden = true;
      try {
        const res = await fetch(panel.dataset.url, {
          method: "POST", credentials: "same-origin", body: form.elements.body.value,
          headers: { "Content-Type": "application/json", "X-CSRF-Token": document.body.dataset.csrf || "" },
        });
        let text = await res.text();
        const id = res.headers.get("X-Sless-Invocation-Id");
        if (!id && (res.headers.get("Content-Type") || "").startsWith("text/html")) {
          const msg = new DOMParser().parseFromString(text, "text/html").getElementById("error-message");
          if (msg) text = msg.textContent;
        }
        show(res.status + " " + res.statusText, text);
        if (id) {
          record.href = panel.dataset.records + encodeURIComponent(id);
          record.hidden = false;
        }
      } catch (e) {
        show("request failed", String(e));
      }
    });
  }
})();
