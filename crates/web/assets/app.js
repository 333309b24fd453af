// The web app's only script: copy buttons for secrets shown once, the line
// editor's live tax preview, and the reports list that refreshes itself.
// Every page works without it; it only saves clicks and page loads.
"use strict";
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const input = document.getElementById(button.dataset.copy);
  if (!input) return;
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(input.value);
  } catch {
    input.select();
    document.execCommand("copy");
  }
  button.textContent = "Copied";
  button.setAttribute("aria-live", "polite");
  setTimeout(() => { button.textContent = label; }, 2000);
});

// The invoice form: "Add a line" adds a row in place, and the tax preview
// follows the lines (the server asks the API; without this script the
// buttons do the same with a page load).
const invoiceForm = document.querySelector("form.invoice-form");
if (invoiceForm) {
  const rows = invoiceForm.querySelector("table.lines-editor tbody");
  const preview = document.getElementById("preview");
  invoiceForm.addEventListener("click", (event) => {
    const add = event.target.closest("button[value=add_line]");
    if (!add || !rows || !rows.lastElementChild) return;
    event.preventDefault();
    const index = rows.children.length;
    const row = rows.lastElementChild.cloneNode(true);
    for (const input of row.querySelectorAll("input")) {
      input.name = input.name.replace(/_\d+$/, `_${index}`);
      const label = input.getAttribute("aria-label") || "";
      input.setAttribute("aria-label", label.replace(/\d+$/, String(index + 1)));
      if (input.type === "checkbox") input.checked = false; else input.value = "";
    }
    rows.appendChild(row);
    row.querySelector("input").focus();
  });
  let timer;
  const refresh = async () => {
    const body = new URLSearchParams(new FormData(invoiceForm));
    try {
      const res = await fetch(invoiceForm.dataset.preview, { method: "POST", body, credentials: "same-origin" });
      if (res.ok && !res.redirected) preview.innerHTML = await res.text();
    } catch {
      // The "Preview taxes" button still works.
    }
  };
  invoiceForm.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(refresh, 400);
  });
  invoiceForm.addEventListener("change", () => {
    clearTimeout(timer);
    timer = setTimeout(refresh, 100);
  });
}

// The reports page: while a report is waiting or being made, the list asks the
// server again every few seconds and swaps in the fresh one, until none is
// pending (the fresh list then carries no `data-refresh`). Without this script
// the list's "Refresh" link does the same with a page load.
const REFRESH_EVERY_MS = 3000;
const REFRESH_AT_MOST = 200; // about ten minutes; "Refresh" still works after that
let refreshes = 0;
const refreshList = async () => {
  const list = document.querySelector("[data-refresh]");
  if (!list || !list.id || refreshes >= REFRESH_AT_MOST) return;
  refreshes += 1;
  // Someone working in the list (a focused Delete button) is not disturbed: ask later.
  if (!list.contains(document.activeElement)) {
    try {
      const res = await fetch(list.dataset.refresh, { credentials: "same-origin" });
      // Signed out or an error page: stop, the page as it is stays usable.
      if (!res.ok || res.redirected) return;
      const fresh = new DOMParser().parseFromString(await res.text(), "text/html").getElementById(list.id);
      if (!fresh) return;
      list.replaceWith(document.adoptNode(fresh));
    } catch {
      // Offline for a moment: try again at the next turn.
    }
  }
  setTimeout(refreshList, REFRESH_EVERY_MS);
};
if (document.querySelector("[data-refresh]")) setTimeout(refreshList, REFRESH_EVERY_MS);
