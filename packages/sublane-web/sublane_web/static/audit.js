// Administration → Audit log (OPS-10): every admin mutation of the last 90 days, newest first.
import {api, DASH, field, filterForm, formatTime, h, option, pager, render, section} from "./lib.js";

/** What an action did, in words; unknown actions show as they are. */
const ACTIONS = {
  "account.import": "Imported an account",
  "account.oauth_start": "Started a provider sign-in",
  "account.oauth_login": "Added an account by sign-in",
  "account.update": "Changed an account",
  "account.reauthorize": "Re-authorized an account",
  "account.delete": "Deleted an account",
  "account.limits": "Changed an account's limit",
  "account.resume": "Cleared a cooldown",
  "account.export": "Exported accounts",
  "webhook.create": "Added a webhook",
  "webhook.update": "Changed a webhook",
  "webhook.delete": "Removed a webhook",
  "webhook.test": "Sent a test alert",
  "account.import_bundle": "Imported an account from a bundle",
  "user.create": "Added a user",
  "user.update": "Changed a user",
  "user.password_reset": "Reset a password from the shell",
  "group.create": "Added a group",
  "group.update": "Changed a group",
  "group.members": "Set a group's members",
  "group.accounts": "Set a group's accounts",
  "group.aliases": "Set a group's model aliases",
  "user.totp_setup": "Started two-factor set-up",
  "user.totp_enable": "Turned two-factor sign-in on",
  "user.totp_disable": "Turned two-factor sign-in off",
  "user.totp_reset": "Reset a user's two-factor sign-in",
  "user.totp_recovery_used": "Signed in with a recovery code",
  "user.sso_link": "Linked single sign-on",
  "key.create": "Created a key",
  "key.revoke": "Revoked a key",
  "key.update": "Paused or resumed a key",
};

function describe(action) {
  return ACTIONS[action] || action;
}

function shown(value) {
  if (value === null || value === undefined) return DASH;
  if (Array.isArray(value)) return value.length ? value.join(", ") : "none";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** The summary as "name: value" lines; a {from, to} pair reads "from → to". */
function summaryList(summary) {
  const entries = Object.entries(summary || {});
  if (!entries.length) return h("span", {class: "muted"}, DASH);
  return h("ul", {class: "plain-list change"}, entries.map(([name, value]) => {
    const pair = value && typeof value === "object" && !Array.isArray(value) && "from" in value && "to" in value;
    return h("li", {}, h("span", {class: "change-name"}, name.replaceAll("_", " ")), ": ",
      pair ? [shown(value.from), " → ", shown(value.to)] : shown(value));
  }));
}

function table(items) {
  return h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Audit log table"},
    h("table", {class: "audit"},
      h("thead", {}, h("tr", {}, ["Time", "Who", "What", "Object", "Change"].map((label) => h("th", {scope: "col"}, label)))),
      h("tbody", {}, items.map((entry) => h("tr", {"data-action": entry.action},
        h("td", {}, formatTime(entry.at)),
        h("td", {}, entry.actor_name, entry.actor_id ? h("small", {class: "block muted"}, `#${entry.actor_id}`) : null),
        h("td", {}, describe(entry.action), h("small", {class: "block mono"}, entry.action)),
        h("td", {}, entry.object_id ? `${entry.object_type} #${entry.object_id}` : entry.object_type),
        h("td", {class: "wrap"}, summaryList(entry.summary)))))));
}

export async function auditView() {
  const params = new URLSearchParams(location.search);
  const current = (name) => params.get(name) || "";
  const choices = await api("GET", "/api/audit/filters");
  const actor = h("select", {name: "actor_id"}, option("", "Anyone"),
    choices.actors.map((a) => option(a.id, a.name, String(a.id) === current("actor_id"))));
  const action = h("select", {name: "action"}, option("", "Any"),
    choices.actions.map((name) => option(name, describe(name), name === current("action"))));
  const filters = filterForm([field("Who", actor), field("What", action)]);

  const query = new URLSearchParams();
  for (const name of ["actor_id", "action", "cursor"]) if (current(name)) query.set(name, current(name));
  const page = await api("GET", `/api/audit?${query}`);
  const pages = pager(params, page.next_cursor, page.items.length);

  render("Audit log",
    h("p", {class: "muted"}, "Who changed what, kept for 90 days. Secrets and request bodies are never recorded."),
    section("Filters", filters),
    page.items.length ? table(page.items) : h("p", {class: "empty"}, "No changes match."),
    pages);
}
