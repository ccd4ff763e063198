// The request tables (WEB-3, HIST-8…11): General → Requests (your own) and Administration → All requests.
import {
  api, copyButton, DASH, field, filterForm, formatCount, formatMs, formatTime, h, option, pager, render, section,
} from "./lib.js";

const OUTCOMES = ["success", "incomplete", "error", "canceled", "rejected", "client_version"];

/** Unix seconds ↔ the value of a datetime-local input, in local time. */
function toLocalInput(seconds) {
  if (!seconds) return "";
  const d = new Date(Number(seconds) * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function fromLocalInput(value) {
  return value ? String(Math.floor(new Date(value).getTime() / 1000)) : "";
}

function select(name, label, choices, current) {
  const el = h("select", {name}, option("", "Any"),
    choices.map(([value, text]) => option(value, text, String(value) === current)));
  return field(label, el);
}

function detailsList(record, admin) {
  const rows = [
    ["Request ID", h("span", {class: "mono request-id-full"}, record.request_id), copyButton(record.request_id, "request ID")],
    ["Started", formatTime(record.started_at)],
    ["Duration", formatMs(record.duration_ms)],
    ["First output", formatMs(record.first_token_ms)],
    ["Outcome", record.outcome],
    ["Error code", record.error_code || DASH],
    ["Upstream status", record.upstream_status ?? DASH],
    ["Model", record.model || DASH],
    ...(record.served_model && record.served_model !== record.model ? [["Served as", record.served_model]] : []),
    ["Provider", record.provider || DASH],
    ["Protocol", record.protocol || DASH],
    ["Operation", record.operation || DASH],
    ["Key", record.key_name ? `${record.key_name} (#${record.key_id})` : (record.key_id ?? DASH)],
    ["Group", record.group_id ?? DASH],
    ["Input tokens", formatCount(record.input_tokens)],
    ["Output tokens", formatCount(record.output_tokens)],
    ["Cached tokens", formatCount(record.cached_tokens)],
    ["Cache hit rate", record.cache_hit_rate],
    ["Cache miss reason", MISS_REASONS[record.cache?.miss_reason] || DASH],
  ];
  if (admin) {
    rows.splice(1, 0, ["Member", record.username ? `${record.username} (#${record.user_id})` : (record.user_id ?? DASH)]);
    rows.splice(2, 0, ["Account", record.account_name ? `${record.account_name}${record.account_id ? ` (#${record.account_id})` : ""}` : DASH]);
  }
  return h("dl", {class: "facts details"}, rows.map(([label, ...value]) => [h("dt", {}, label), h("dd", {}, value)]));
}

/** COST-4: why a later turn of a conversation missed the prompt cache. */
const MISS_REASONS = {
  first_turn: "first turn (no earlier turn known)", account_changed: "account changed (the binding moved)",
  prefix_changed: "prefix changed (not a continuation of the last turn)",
  expired: "expired (longer than the provider's cache lifetime)", unknown: "unknown",
};

const RULES = {
  kept_binding: "Kept binding", parent_preference: "Parent preference (auto-review)",
  uniform_rotation: "Uniform rotation", quota_weighted_rotation: "Quota-weighted rotation",
  model_switch_rotation: "Model switch", binding_released: "Binding released", none: "None (refused)",
};
const REASONS = {
  model_support: "model support", policy: "policy", quota: "quota", cooldown: "cooldown",
  capacity: "capacity", unavailable: "unavailable", refresh_backoff: "refresh backoff",
  tried: "tried already (failover)",
  metered_held: "metered, held back (overflow)", metered_off: "metered, routing off",
  metered_budget: "metered, spending cap reached", unpriced: "metered, model has no price",
};
/** PAID-2: why a metered (paid per token) account served the call. */
const OVERFLOW_REASONS = {
  normal: "ordinary member (routing: normal)", waited: "waited for busy subscriptions",
  all_cooling: "every subscription account cooling", all_out_of_quota: "every subscription account out of quota",
  all_refresh_backoff: "every subscription account retrying its refresh",
  all_unavailable: "no subscription account available", no_subscription: "no subscription account serves the model",
  bound: "the conversation is bound to it",
};

/** FAIL-2: each attempt of a call that failed over; account ids only in admin answers. */
function attemptsList(attempts) {
  return h("ol", {class: "plain-list attempts"}, attempts.map((a) => h("li", {"data-outcome": a.outcome},
    a.account_id != null ? `account #${a.account_id}: ` : "",
    a.outcome, a.error_code ? [" (", h("span", {class: "mono"}, a.error_code), ")"] : "")));
}

function routingBlock(routing) {
  if (!routing) return h("p", {class: "muted"}, "No routing explanation (older record, or rejected before routing).");
  const excluded = Object.entries(routing.excluded || {}).filter(([, n]) => n);
  const known = new Set(["rule", "candidates", "excluded", "refused", "parent", "rotation", "attempts", "metered", "overflow_reason"]);
  const rest = Object.entries(routing).filter(([name]) => !known.has(name));
  return h("dl", {class: "facts routing"},
    h("dt", {}, "Rule"), h("dd", {class: "rule", "data-rule": routing.rule ?? ""}, RULES[routing.rule] ?? routing.rule ?? DASH),
    h("dt", {}, "Candidates"), h("dd", {}, routing.candidates ?? DASH),
    h("dt", {}, "Excluded"), h("dd", {}, excluded.length
      ? h("ul", {class: "plain-list excluded"}, excluded.map(([reason, n]) => h("li", {}, `${REASONS[reason] ?? reason}: ${n}`))) : "none"),
    routing.refused ? [h("dt", {}, "Refused with"), h("dd", {class: "mono refused"}, routing.refused)] : [],
    routing.parent ? [h("dt", {}, "Parent account"), h("dd", {class: "parent"}, routing.parent)] : [],
    routing.metered ? [h("dt", {}, "Billing"), h("dd", {}, h("span", {class: "badge metered"}, "metered")),
      h("dt", {}, "Overflow reason"), h("dd", {class: "overflow-reason", "data-reason": routing.overflow_reason ?? ""},
        OVERFLOW_REASONS[routing.overflow_reason] ?? routing.overflow_reason ?? DASH)] : [],
    Array.isArray(routing.attempts) ? [h("dt", {}, "Attempts"), h("dd", {}, attemptsList(routing.attempts))] : [],
    rest.map(([name, value]) => [h("dt", {}, name),
      h("dd", {class: "mono"}, typeof value === "object" ? JSON.stringify(value) : String(value))]));
}

/** OPS-13: where the time went, as one bar — queued, SubLane's own, the upstream to its first
 * byte, then the answer itself — each part as wide as its share of the whole. */
function timingBlock(timing) {
  if (!timing) return h("p", {class: "muted"}, "No timing (no upstream answered, or an older record).");
  const upstream = Math.max(timing.first_byte_ms - timing.queue_ms - timing.sublane_ms, 0);
  const parts = [
    ["queue", "Queued", timing.queue_ms],
    ["sublane", "SubLane", timing.sublane_ms],
    ["upstream", "Upstream to first byte", upstream],
    ["answer", "Answer", Math.max(timing.total_ms - timing.first_byte_ms, 0)],
  ];
  const whole = Math.max(parts.reduce((sum, [, , ms]) => sum + ms, 0), 1);
  return h("div", {class: "timing"},
    h("div", {class: "timing-bar", role: "img",
      "aria-label": parts.map(([, label, ms]) => `${label} ${formatMs(ms)}`).join(", ")},
      parts.map(([name, label, ms]) => {
        const part = h("span", {class: `timing-${name}`, title: `${label}: ${formatMs(ms)}`});
        part.style.width = `${(100 * ms / whole).toFixed(2)}%`;  // the CSSOM: the CSP refuses style attributes
        return part;
      })),
    h("dl", {class: "facts timing-legend"}, parts.map(([name, label, ms]) =>
      [h("dt", {}, h("i", {class: `timing-${name}`}), label), h("dd", {}, formatMs(ms))]),
      h("dt", {}, "Connect"), h("dd", {}, formatMs(timing.connect_ms))));
}

async function openDetails(requestId, admin) {
  const record = await api("GET", `${admin ? "/api/requests" : "/api/me/requests"}/${encodeURIComponent(requestId)}`);
  const dialog = document.getElementById("details");
  document.getElementById("details-body").replaceChildren(
    detailsList(record, admin), h("h3", {}, "Where time went"), timingBlock(record.timing),
    h("h3", {}, "Routing"), routingBlock(record.routing));
  if (!dialog.open) dialog.showModal();
}

document.getElementById("details-close")?.addEventListener("click", () => document.getElementById("details").close());

function table(items, admin) {
  const head = ["Started", admin && "Member", admin && "Account", "Model", "Key", "Outcome", "Upstream status",
    "Duration", "First output", "Input", "Output", "Cached", "Cache hit rate"].filter(Boolean);
  const numeric = new Set(["Upstream status", "Duration", "First output", "Input", "Output", "Cached", "Cache hit rate"]);
  return h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Requests table"},
    h("table", {class: "requests"},
      h("thead", {}, h("tr", {}, head.map((label) => h("th", {scope: "col", class: numeric.has(label) ? "num" : ""}, label)))),
      h("tbody", {}, items.map((r) => h("tr", {"data-request-id": r.request_id},
        h("td", {class: "started"},
          h("button", {type: "button", class: "link open-details", "aria-label": `Details of ${r.request_id}`,
            onclick: () => openDetails(r.request_id, admin)}, formatTime(r.started_at)),
          h("div", {class: "short-id"}, h("span", {class: "mono"}, r.request_id_short || r.request_id),
            copyButton(r.request_id, "request ID"))),
        admin && h("td", {}, r.username ?? DASH),
        admin && h("td", {}, r.account_name ?? DASH),
        h("td", {}, r.model || DASH),
        h("td", {}, r.key_name || DASH),
        h("td", {}, h("span", {class: `outcome outcome-${r.outcome}`}, r.outcome),
          r.error_code ? h("small", {class: "block"}, r.error_code) : null),
        h("td", {class: "num"}, r.upstream_status ?? DASH),
        h("td", {class: "num"}, formatMs(r.duration_ms)),
        h("td", {class: "num"}, formatMs(r.first_token_ms)),
        h("td", {class: "num"}, formatCount(r.input_tokens)),
        h("td", {class: "num"}, formatCount(r.output_tokens)),
        h("td", {class: "num"}, formatCount(r.cached_tokens)),
        h("td", {class: "num cache-rate"}, r.cache_hit_rate))))));
}

export async function requestsView(me, admin) {
  const base = admin ? "/api/requests" : "/api/me/requests";
  const params = new URLSearchParams(location.search);
  const choices = await api("GET", `${base}/filters`);
  const current = (name) => params.get(name) || "";

  const requestId = h("input", {name: "request_id", value: current("request_id"), autocomplete: "off",
    spellcheck: "false", placeholder: "req_…"});
  const from = h("input", {type: "datetime-local", name: "from", value: toLocalInput(current("from"))});
  const until = h("input", {type: "datetime-local", name: "until", value: toLocalInput(current("until"))});
  const filters = filterForm([
    select("outcome", "Outcome", OUTCOMES.map((o) => [o, o]), current("outcome")),
    select("model", "Model", (choices.models || []).map((m) => [m, m]), current("model")),
    select("key_id", "Key", (choices.keys || []).map((k) => [k.id, k.name]), current("key_id")),
    admin ? select("user_id", "Member", (choices.members || []).map((m) => [m.id, m.username]), current("user_id")) : null,
    admin ? select("account_id", "Account", (choices.accounts || []).map((a) => [a.id, a.name]), current("account_id")) : null,
    field("Request ID", requestId),
    field("From", from),
    field("Until", until),
  ], (name, value) => (name === "from" || name === "until" ? fromLocalInput(value) : String(value).trim()));

  const query = new URLSearchParams();
  for (const name of ["outcome", "model", "key_id", "request_id", "from", "until", "cursor"].concat(admin ? ["user_id", "account_id"] : [])) {
    if (current(name)) query.set(name, current(name));
  }
  const page = await api("GET", `${base}?${query}`);
  const pages = pager(params, page.next_cursor, page.items.length);

  render(admin ? "All requests" : "Requests",
    admin ? null : h("p", {class: "muted"}, "The model calls made with your keys."),
    section("Filters", filters),
    page.items.length ? table(page.items, admin) : h("p", {class: "empty"}, "No requests match."),
    pages);
}
