// Moving accounts between installations (BULK-1/2): export them encrypted with a passphrase, import
// a bundle. The bundle holds the accounts' credentials: the page says so.
import {announce, ApiError, field, form, h, section} from "./lib.js";

async function failure(response) {
  const data = await response.json().catch(() => null);
  const error = (data && data.error) || {};
  return new ApiError(response.status, error.code || `http_${response.status}`,
    error.message || `The server answered ${response.status}.`);
}

export function bundlesSection(refresh) {
  const exportPass = h("input", {type: "password", name: "passphrase", required: true, minlength: 12, maxlength: 256,
    autocomplete: "new-password"});
  const exportForm = form({class: "stack", "aria-label": "Export accounts"}, [
    h("p", {class: "muted"}, "Every account, its credentials, limit and group names, in one file encrypted with this " +
      "passphrase (12 characters or more). Anyone with both can use the accounts: keep them apart."),
    field("Passphrase", exportPass),
    h("button", {type: "submit"}, "Export all accounts"),
  ], async (el) => {
    const response = await fetch("/api/accounts/export", {method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", Accept: "application/octet-stream"},
      body: JSON.stringify({passphrase: exportPass.value, account_ids: null})});
    if (!response.ok) throw await failure(response);
    const blob = await response.blob();
    const name = (/filename="([^"]+)"/.exec(response.headers.get("content-disposition") || "") || [])[1]
      || "sublane-accounts.bundle";
    const link = h("a", {href: URL.createObjectURL(blob), download: name, class: "bundle-download"}, `Download ${name}`);
    el.querySelector(".bundle-link")?.remove();
    el.append(h("p", {class: "bundle-link"}, link));
    link.click();
    announce("Accounts exported.");
  });
  const file = h("input", {type: "file", name: "file", required: true, accept: ".bundle,application/octet-stream"});
  const importPass = h("input", {type: "password", name: "passphrase", required: true, autocomplete: "off"});
  const result = h("div", {class: "bundle-result", role: "status"});
  const importForm = form({class: "stack", "aria-label": "Import a bundle"}, [
    field("Bundle file", file),
    field("Its passphrase", importPass),
    h("button", {type: "submit"}, "Import accounts"),
    result,
  ], async (el) => {
    const body = new FormData();
    body.append("file", file.files[0]);
    body.append("passphrase", importPass.value);
    const response = await fetch("/api/accounts/import-bundle", {method: "POST", credentials: "same-origin", body});
    if (!response.ok) throw await failure(response);
    const answer = await response.json();
    result.replaceChildren(
      h("p", {}, `Imported ${answer.imported.length}: ${answer.imported.map((a) => a.name).join(", ") || "none"}.`),
      answer.skipped.length ? h("p", {}, `Skipped: ${answer.skipped.map((s) => `${s.name} (${s.reason})`).join(", ")}.`) : null);
    el.reset();
    announce(`Imported ${answer.imported.length} account(s).`);
    await refresh();
  });
  return section("Move accounts", h("div", {class: "two"}, exportForm, importForm));
}
