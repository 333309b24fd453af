// The web app's only script: copy buttons for secrets shown once.
// Every page works without it; it only saves selecting and copying by hand.
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
