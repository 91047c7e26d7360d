// The console's only script, served from the binary (the content security policy allows no
// other): on a board's page, the freshness figures follow the board every two seconds.
"use strict";
(function () {
  const facts = document.getElementById("freshness");
  if (!facts) return;
  const url = facts.dataset.url;
  const fields = ["lag", "pending", "parked", "projected-through"];
  async function refresh() {
    try {
      const response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
      if (!response.ok) return;
      const now = await response.json();
      for (const field of fields) {
        const element = document.getElementById(field);
        const key = field.replace("-", "_");
        if (element && key in now) element.textContent = now[key];
      }
      const seal = document.getElementById("seal");
      if (seal && now.projection) {
        seal.textContent = now.projection;
        seal.className = "seal seal-" + now.projection_class;
      }
      facts.dataset.updated = String(Date.now());
    } catch (_) {
      // A refresh that fails leaves the last figures; the next one tries again.
    }
  }
  setInterval(refresh, 2000);
  refresh();
})();
