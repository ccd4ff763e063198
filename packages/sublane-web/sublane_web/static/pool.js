// General → Pool (POOL-2): before a long run, whether the pools of your keys have room. Only counts
// and windows — the answer of GET /api/me/pool names no account.
import {api, DASH, formatLeft, h, render, section, tile} from "./lib.js";

function percent(value) {
  return value === null || value === undefined ? DASH : `${value.toFixed(1)} %`;
}

function windowsTable(windows) {
  if (!windows.length) return h("p", {class: "muted"}, "No fresh quota observation yet: the pool's windows show after its next calls.");
  return h("div", {class: "table-wrap"},
    h("table", {class: "pool-windows"},
      h("thead", {}, h("tr", {},
        h("th", {scope: "col"}, "Window"), h("th", {scope: "col"}, "Mean use"),
        h("th", {scope: "col"}, "Accounts out"), h("th", {scope: "col"}, "Soonest reset"))),
      h("tbody", {}, windows.map((w) => h("tr", {},
        h("th", {scope: "row"}, w.window), h("td", {}, percent(w.mean_used_percent)),
        h("td", {}, String(w.accounts_exhausted)), h("td", {}, formatLeft(w.soonest_reset_at)))))));
}

function poolPanel(item, labels, metered) {
  const room = item.accounts_usable === 0 ? "No account can take a new conversation now"
    : `${item.accounts_usable} of ${item.accounts_total} can take a new conversation now`;
  // PAID-2: a metered provider's accounts are API keys paid per token
  const billing = metered.has(item.provider) ? " · metered" : "";
  return section(`${item.group_name} · ${labels.get(item.provider) || item.provider}${billing}`,
    h("div", {class: "tiles"},
      tile("Usable accounts", `${item.accounts_usable} / ${item.accounts_total}`, room),
      tile("Your share", percent(item.my_share_percent), "of the group's tokens, last 5 hours")),
    windowsTable(item.windows));
}

/** General → Pool: the room in each group of your keys, per provider. */
export async function poolView() {
  const [pool, providers] = await Promise.all([api("GET", "/api/me/pool"), api("GET", "/api/providers")]);
  const labels = new Map(providers.items.map((provider) => [provider.name, provider.label]));
  const metered = new Set(providers.items.filter((provider) => provider.billing === "metered").map((provider) => provider.name));
  render("Pool",
    h("p", {class: "muted"}, "The accounts behind your keys, as counts: how many can take a new conversation now, " +
      "how used their quota windows are, and your share of each group's use."),
    ...(pool.items.length ? pool.items.map((item) => poolPanel(item, labels, metered)) : [h("p", {class: "muted"}, "You have no live key: no pool to show.")]));
}
