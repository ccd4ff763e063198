// CONNECT-1: "Connect a client" — per client, the set-up to paste and a one-call try, from
// GET /api/connect (CONNECT-2). At key creation the first line holds the secret; from the key list a
// placeholder stands in for it (the secret is shown only once).
import {api, copyButton, h} from "./lib.js";

export const KEY_PLACEHOLDER = "<your SubLane key>";

let clientsCache = null;

async function clients() {
  if (!clientsCache) clientsCache = (await api("GET", "/api/connect/clients")).items;
  return clientsCache;
}

function shellQuote(text) {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** A block of shell text with its copy button. */
function snippet(label, text) {
  return h("div", {class: "snippet"},
    h("div", {class: "snippet-head"}, h("strong", {}, label), copyButton(text, `${label.toLowerCase()} text`)),
    h("pre", {class: "mono", "aria-label": label, tabindex: "0"}, text));
}

/** The panel for `key` ({id, name}); `secret` at creation, else null (a placeholder is shown). */
export async function connectPanel(key, secret) {
  const list = await clients();
  const body = h("div", {class: "connect-body", role: "tabpanel"});
  const tabs = h("div", {class: "tabs", role: "tablist", "aria-label": "Clients"});
  const panel = h("div", {class: "connect", role: "region", "aria-label": `Connect a client to ${key.name}`},
    h("h3", {}, "Connect a client"),
    h("p", {class: "muted"}, secret
      ? "Paste the set-up into a shell (it holds this key's secret), then run the try: one model call."
      : "Paste the set-up into a shell with your key in place of the placeholder, then run the try."),
    tabs, body);

  async function show(client, button) {
    for (const other of tabs.children) other.setAttribute("aria-selected", String(other === button));
    body.setAttribute("aria-labelledby", button.id);
    let text;
    try {
      text = await api("GET", `/api/connect?client=${encodeURIComponent(client)}&key_id=${key.id}`);
    } catch (failure) {
      body.replaceChildren(h("p", {class: "error", role: "alert"}, failure.message));
      return;
    }
    const exported = `export SUBLANE_API_KEY=${shellQuote(secret || KEY_PLACEHOLDER)}`;
    body.replaceChildren(
      snippet("Set-up", `${exported}\n${text.setup}`),
      snippet("Try", text.try),
      h("p", {class: "muted"}, `SubLane at ${text.url}; the try asks for ${text.model}.`));
  }

  const buttons = list.map((item) => {
    const button = h("button", {type: "button", role: "tab", class: "tab", id: `tab-${key.id}-${item.client}`,
      "aria-selected": "false", "data-client": item.client}, item.title);
    button.addEventListener("click", () => show(item.client, button));
    return button;
  });
  tabs.replaceChildren(...buttons);
  if (buttons.length) await show(list[0].client, buttons[0]);
  return panel;
}
