// Usage (TEAM-5): General → Usage (your own calls, limits and budgets) and Administration → Team
// usage (everyone's, per member). Numbers come from the usage summaries (TEAM-3): UTC days, 90 kept.
import {api, DASH, field, formatCount, formatMs, formatTime, h, option, render, section, tile} from "./lib.js";
import {barChart, busiest, compact, heatLegend, heatmap, legend} from "./charts.js";

const RANGES = [1, 7, 30, 90];

function dayLabel(iso, long) {
  const date = new Date(`${iso}T00:00:00Z`);
  return date.toLocaleDateString(undefined, long
    ? {weekday: "short", year: "numeric", month: "short", day: "numeric", timeZone: "UTC"}
    : {month: "short", day: "numeric", timeZone: "UTC"});
}

/** A token-weighted cache hit rate (COST-4) as a percentage; a dash when no call reported cache figures. */
export function formatRate(rate) {
  if (rate === null || rate === undefined) return DASH;
  return `${(rate * 100).toFixed(1).replace(/\.0$/, "")}%`;
}

/** US dollars (COST-2): "$12.34", "$0.0130" below a dollar; "—" when nothing was priced. */
export function formatUsd(n) {
  if (n === null || n === undefined) return DASH;
  const abs = Math.abs(n);
  return `$${Number(n).toLocaleString(undefined, {minimumFractionDigits: abs && abs < 1 ? 4 : 2,
    maximumFractionDigits: abs && abs < 1 ? 4 : 2})}`;
}

function tokensOf(row) {
  if (row.input_tokens === null && row.output_tokens === null) return null;
  return (row.input_tokens || 0) + (row.output_tokens || 0);
}

/** The range switch: a radio group that changes `?days=` (keeps the other parameters). */
function rangeSwitch(days) {
  const params = new URLSearchParams(location.search);
  return h("fieldset", {class: "range"}, h("legend", {}, "Range"),
    RANGES.map((n) => {
      const input = h("input", {type: "radio", name: "days", value: String(n), checked: n === days,
        onchange: () => { params.set("days", String(n)); location.search = params.toString(); }});
      return h("label", {class: n === days ? "chosen" : ""}, input, n === 1 ? "Today" : `${n} days`);
    }));
}


function totalsTiles(totals) {
  const failed = totals.error + totals.rejected + totals.canceled;
  return h("div", {class: "tiles"},
    tile("Requests", formatCount(totals.requests),
      `${formatCount(totals.success)} succeeded · ${formatCount(failed)} failed, refused or canceled`),
    tile("Input tokens", formatCount(totals.input_tokens), `${formatCount(totals.cached_tokens)} from cache`),
    tile("Output tokens", formatCount(totals.output_tokens)),
    tile("Cache hit rate", formatRate(totals.hit_rate),
      "cached ÷ input tokens of the requests that reported cache figures"),
    tile("API-equivalent cost", formatUsd(totals.cost_usd),
      totals.unpriced_tokens ? `${formatCount(totals.unpriced_tokens)} tokens of unpriced models not counted`
        : "what these calls would cost at API prices"),
    tile("Without reported usage", formatCount(totals.unknown_usage_requests),
      "requests whose tokens the provider did not report (not counted as 0)"));
}

function dailyCharts(usage) {
  const days = usage.by_day.map((d) => ({label: dayLabel(d.day, false), title: dayLabel(d.day, true)}));
  const requests = [{name: "Requests", className: "s-requests", values: usage.by_day.map((d) => d.requests)}];
  const tokens = [
    {name: "Input tokens", className: "s-input", values: usage.by_day.map((d) => d.input_tokens)},
    {name: "Output tokens", className: "s-output", values: usage.by_day.map((d) => d.output_tokens)},
  ];
  const cost = [{name: "API-equivalent cost (USD)", className: "s-cost", values: usage.by_day.map((d) => d.cost_usd)}];
  const total = usage.totals.requests;
  return h("div", {class: "three charts"},
    h("figure", {class: "figure"}, h("figcaption", {}, "Requests per day (UTC)"),
      barChart({days, series: requests, label: `Requests per UTC day: ${formatCount(total)} in ${usage.range.days} days`})),
    h("figure", {class: "figure"}, h("figcaption", {}, "Tokens per day (UTC)"),
      barChart({days, series: tokens,
        label: `Input and output tokens per UTC day: ${formatCount(tokensOf(usage.totals))} reported in ${usage.range.days} days`}),
      legend(tokens)),
    h("figure", {class: "figure", "data-chart": "cost"}, h("figcaption", {}, "Cost per day (UTC, API prices)"),
      barChart({days, series: cost, format: (v) => `$${v < 10 ? Number(v.toPrecision(2)) : compact(v)}`,
        label: `API-equivalent cost per UTC day: ${formatUsd(usage.totals.cost_usd)} in ${usage.range.days} days`}),
      legend(cost)));
}

function heatmapFigure(usage) {
  const top = busiest(usage.heatmap);
  const label = top
    ? `Requests by weekday and hour (UTC); the busiest is ${top.day} ${String(top.hour).padStart(2, "0")}:00 with ${top.value}`
    : "Requests by weekday and hour (UTC): none in this range";
  return h("figure", {class: "figure"}, h("figcaption", {}, "When (weekday × hour, UTC)"),
    heatmap({cells: usage.heatmap, tokens: usage.heatmap_tokens, label}), heatLegend());
}

/** A breakdown table: `name(row)` in the first column, then the counters. */
function breakdown(title, column, rows, name, aria) {
  if (!rows.length) return section(title, h("p", {class: "empty"}, "Nothing in this range."));
  const heads = ["", "Requests", "Errors", "Input", "Output", "Cached", "Hit rate", "Unknown", "Cost"];
  return section(title, h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": aria},
    h("table", {class: "usage-table"},
      h("thead", {}, h("tr", {}, heads.map((label, i) => h("th", {scope: "col", class: i ? "num" : ""}, i ? label : column)))),
      h("tbody", {}, rows.map((row) => h("tr", {},
        h("th", {scope: "row"}, name(row)),
        h("td", {class: "num"}, formatCount(row.requests)),
        h("td", {class: "num"}, formatCount(row.error + row.rejected)),
        h("td", {class: "num"}, formatCount(row.input_tokens)),
        h("td", {class: "num"}, formatCount(row.output_tokens)),
        h("td", {class: "num"}, formatCount(row.cached_tokens)),
        h("td", {class: "num hit-rate"}, formatRate(row.hit_rate)),
        h("td", {class: "num"}, formatCount(row.unknown_usage_requests)),
        h("td", {class: "num cost", title: row.unpriced_tokens ? `${formatCount(row.unpriced_tokens)} tokens unpriced` : ""},
          formatUsd(row.cost_usd))))))));
}

/** Per account (COST-2): requests, tokens and cost; the team's view only. */
function accountsBreakdown(rows) {
  if (!rows || !rows.length) return section("Top accounts", h("p", {class: "empty"}, "Nothing in this range."));
  return section("Top accounts", h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Usage by account"},
    h("table", {class: "usage-table"},
      h("thead", {}, h("tr", {}, ["Account", "Provider", "Requests", "Input", "Output", "Cost"].map((label, i) =>
        h("th", {scope: "col", class: i > 1 ? "num" : ""}, label)))),
      h("tbody", {}, rows.map((row) => h("tr", {},
        h("th", {scope: "row"}, row.account_name || `#${row.account_id} (deleted)`),
        h("td", {}, row.provider),
        h("td", {class: "num"}, formatCount(row.requests)),
        h("td", {class: "num"}, formatCount(row.input_tokens)),
        h("td", {class: "num"}, formatCount(row.output_tokens)),
        h("td", {class: "num cost"}, formatUsd(row.cost_usd))))))));
}

/** Subscription value (COST-3): API-equivalent cost served this month against each price. */
function valueSection(value) {
  const ratio = (r) => (r === null || r === undefined ? DASH : `${r.toLocaleString(undefined, {maximumSignificantDigits: 3})}×`);
  const table = (label, rows, name) => h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": label},
    h("table", {class: "usage-table value-table"},
      h("thead", {}, h("tr", {}, ["", "Served at API prices", "Subscription / month", "Value ÷ price"].map((head, i) =>
        h("th", {scope: "col", class: i ? "num" : ""}, head)))),
      h("tbody", {}, rows.map((row) => h("tr", {},
        h("th", {scope: "row"}, name(row)),
        h("td", {class: "num"}, formatUsd(row.cost_usd)),
        h("td", {class: "num"}, row.monthly_price_usd === null ? h("span", {class: "muted"}, "not set") : formatUsd(row.monthly_price_usd)),
        h("td", {class: "num"}, ratio(row.ratio)))))));
  return section(`Subscription value, ${value.month} (UTC)`,
    h("p", {class: "muted"}, "What the calls each subscription served would have cost at API prices, against what it costs a month (set on the account)."),
    h("div", {class: "two"},
      table("Value per provider", value.providers, (row) => row.provider),
      table("Value per account", value.accounts, (row) => `${row.account_name || `#${row.account_id}`} (${row.provider})`)));
}

/** COST-4: the prompt cache's hit rate per account, over the calls that reported cache figures. */
function cacheByAccount(rows) {
  const title = "Cache by account";
  if (!rows.length) return section(title, h("p", {class: "empty"}, "No call reported cache figures in this range."));
  const heads = ["Account", "Requests", "Input", "Cached", "Hit rate"];
  return section(title, h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Cache hit rate by account"},
    h("table", {class: "usage-table"},
      h("thead", {}, h("tr", {}, heads.map((label, i) => h("th", {scope: "col", class: i ? "num" : ""}, label)))),
      h("tbody", {}, rows.map((row) => h("tr", {"data-account-id": row.account_id},
        h("th", {scope: "row"}, row.account_name || `#${row.account_id} (deleted)`),
        h("td", {class: "num"}, formatCount(row.requests)),
        h("td", {class: "num"}, formatCount(row.input_tokens)),
        h("td", {class: "num"}, formatCount(row.cached_tokens)),
        h("td", {class: "num hit-rate"}, formatRate(row.hit_rate))))))));
}

function meter(used, limit, unit = "tokens") {
  const share = limit ? Math.min(1, (used || 0) / limit) : 0;
  const label = unit === "usd" ? `${formatUsd(used)} of ${formatUsd(limit)}` : `${formatCount(used)} of ${formatCount(limit)} tokens`;
  return h("meter", {min: 0, max: 1, value: share, low: 0.75, high: 0.95, optimum: 0, "aria-label": label});
}

const PERIODS = {day: "UTC day", month: "UTC month", "5h": "5 hours (rolling)", "7d": "7 days (rolling)"};

/** Token budget rules with their usage (TEAM-4), in tokens or dollars over calendar or rolling periods (COST-5). */
export function budgetsTable(answer, {empty = "No token budgets."} = {}) {
  if (!answer.rules.length) return h("p", {class: "muted"}, empty);
  return h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Token budgets"},
    h("table", {class: "budgets"},
      h("thead", {}, h("tr", {}, ["Applies to", "Per", "Used", "Limit", "", "Resets"].map((label) => h("th", {scope: "col"}, label)))),
      h("tbody", {}, answer.rules.map((rule) => h("tr", {"data-rule-id": rule.id, class: rule.enabled ? "" : "disabled"},
        h("td", {}, `${rule.group_name || (rule.group_id ? `group #${rule.group_id}` : "any group")} · ${rule.model || "any model"}`,
          rule.enabled ? null : h("small", {class: "block muted"}, "off")),
        h("td", {}, PERIODS[rule.period] || rule.period),
        h("td", {class: "num"}, rule.used === null ? DASH : rule.unit === "usd" ? formatUsd(rule.used) : compact(rule.used)),
        h("td", {class: "num"}, rule.unit === "usd" ? formatUsd(rule.limit) : compact(rule.limit)),
        h("td", {}, meter(rule.used, rule.limit, rule.unit), rule.exceeded ? h("strong", {class: "over"}, " used up") : null),
        h("td", {}, formatTime(rule.resets_at)))))));
}

function limitsFacts(limits) {
  return h("dl", {class: "facts"},
    h("dt", {}, "Requests per minute"), h("dd", {}, limits.rpm ? `${limits.rpm} (fixed UTC minutes)` : "unlimited"),
    h("dt", {}, "Concurrent requests"), h("dd", {}, limits.member_concurrency ? String(limits.member_concurrency) : "unlimited"),
    h("dt", {}, "Running or waiting now"), h("dd", {}, String(limits.in_use)),
    // PAID-3: metered (API-key) spend this UTC month, and the member's limit on it
    h("dt", {}, "Metered spend this month"),
    h("dd", {"data-metered": ""}, limits.metered_monthly_usd === null || limits.metered_monthly_usd === undefined
      ? `${formatUsd(limits.metered_spent_usd || 0)} (no limit)`
      : `${formatUsd(limits.metered_spent_usd || 0)} of ${formatUsd(limits.metered_monthly_usd)}`));
}

function usageSections(usage, admin) {
  const sections = [
    h("div", {class: "panel"}, totalsTiles(usage.totals), dailyCharts(usage)),
    section("Heatmap", heatmapFigure(usage)),
    h("div", {class: "two"},
      breakdown("Top models", "Model", usage.by_model, (row) => row.model, "Usage by model"),
      breakdown("Top groups", "Group", usage.by_group, (row) => row.group_name || (row.group_id ? `#${row.group_id} (deleted)` : "none"),
        "Usage by group")),
  ];
  if (admin) {
    sections.push(breakdown("Top members", "Member", usage.by_member,
      (row) => h("a", {href: `/admin/usage?days=${usage.range.days}&user_id=${row.user_id}`}, row.username || `#${row.user_id} (deleted)`),
      "Usage by member"));
    sections.push(cacheByAccount(usage.cache_by_account || []));
    if (usage.by_account) sections.push(accountsBreakdown(usage.by_account));
  }
  return sections;
}

function chosenDays() {
  const days = Number(new URLSearchParams(location.search).get("days") || 30);
  return RANGES.includes(days) ? days : 30;
}

/** General → Usage: your own calls, your limits and your token budgets. */
export async function usageView() {
  const days = chosenDays();
  const [usage, limits, budgets] = await Promise.all([
    api("GET", `/api/me/usage?days=${days}`), api("GET", "/api/me/limits"), api("GET", "/api/me/budgets"),
  ]);
  const range = `${dayLabel(usage.by_day[0].day, false)} – ${dayLabel(usage.by_day.at(-1).day, false)} (UTC)`;
  render("Usage",
    h("p", {class: "muted"}, `Your model calls, ${range}. Kept 90 days, independent of the request history.`),
    rangeSwitch(days),
    ...usageSections(usage, false),
    h("div", {class: "two"},
      section("Your token budgets", budgets.enforced || !budgets.rules.length ? null
        : h("p", {class: "muted"}, "Not applied: admins are bound only by workspace and account limits."),
      budgetsTable(budgets, {empty: "No token budgets: your calls are limited only by the pool."})),
      section("Your limits", limits.enforced ? null : h("p", {class: "muted"}, "Not applied to admins."), limitsFacts(limits))));
}

const TIMING_PARTS = [
  ["queue_ms", "Queue"], ["sublane_ms", "SubLane"], ["first_byte_ms", "First byte"], ["total_ms", "Total"],
];

/** OPS-13: p50 / p95 per provider of where the calls' time went. */
function timingSection(timing) {
  const providers = Object.entries(timing || {});
  const cell = (pair) => (pair ? `${formatMs(pair.p50)} / ${formatMs(pair.p95)}` : DASH);
  return section("Where time goes",
    h("p", {class: "muted"}, "Median / 95th percentile per provider, over the calls an upstream answered."),
    providers.length === 0 ? h("p", {class: "muted"}, "No timed calls in this range.") :
      h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Where time goes per provider"},
        h("table", {class: "timing-percentiles"},
          h("thead", {}, h("tr", {}, h("th", {}, "Provider"), h("th", {class: "num"}, "Calls"),
            TIMING_PARTS.map(([, label]) => h("th", {class: "num"}, label)))),
          h("tbody", {}, providers.map(([provider, parts]) => h("tr", {"data-provider": provider},
            h("td", {}, provider), h("td", {class: "num"}, formatCount(parts.calls)),
            TIMING_PARTS.map(([name]) => h("td", {class: "num"}, cell(parts[name])))))))));
}

/** PAID-3: each group's metered (API-key) spend this UTC month against its cap (GET /api/groups). */
function meteredSpendSection(groups) {
  const resetAt = groups.find((g) => g.metered_reset_at)?.metered_reset_at;
  const reset = resetAt ? ` Resets ${new Date(resetAt * 1000).toISOString().slice(0, 10)} (UTC).` : "";
  const heads = ["Group", "Routing", "Spent", "Cap", "", "Uncosted calls"];
  return section("Metered spend this month",
    h("p", {class: "muted"}, `What API keys billed per token cost each group this UTC month.${reset}`),
    h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Metered spend by group"},
      h("table", {class: "usage-table metered-spend"},
        h("thead", {}, h("tr", {}, heads.map((label, i) => h("th", {scope: "col", class: i > 1 && i !== 4 ? "num" : ""}, label)))),
        h("tbody", {}, groups.map((g) => {
          const cap = g.metered_monthly_usd;
          const capped = cap !== null && cap !== undefined;
          return h("tr", {"data-group-id": g.id},
            h("th", {scope: "row"}, g.name),
            h("td", {}, g.metered || "overflow"),
            h("td", {class: "num spent"}, formatUsd(g.metered_spent_usd || 0)),
            h("td", {class: "num cap"}, capped ? formatUsd(cap) : h("span", {class: "muted"}, "no cap")),
            h("td", {}, capped ? meter(g.metered_spent_usd || 0, cap, "usd") : null,
              capped && (g.metered_spent_usd || 0) >= cap ? h("strong", {class: "over"}, " cap reached") : null),
            h("td", {class: "num"}, formatCount(g.metered_uncosted_calls || 0)));
        })))));
}

/** Administration → Team usage: everyone's calls, per member, or one member's. */
export async function teamUsageView() {
  const days = chosenDays();
  const params = new URLSearchParams(location.search);
  const userId = params.get("user_id") || "";
  const query = new URLSearchParams({days: String(days)});
  if (userId) query.set("user_id", userId);
  const [usage, users, value, groups] = await Promise.all([
    api("GET", `/api/usage?${query}`), api("GET", "/api/users"), api("GET", "/api/usage/value"),
    api("GET", "/api/groups"),
  ]);
  const member = h("select", {name: "user_id", onchange: () => {
    if (member.value) params.set("user_id", member.value); else params.delete("user_id");
    location.search = params.toString();
  }}, option("", "Everyone"), users.items.map((u) => option(u.id, u.username, String(u.id) === userId)));
  const who = userId ? (users.items.find((u) => String(u.id) === userId)?.username || `#${userId}`) : "the whole team";
  render("Team usage",
    h("p", {class: "muted"}, `Model calls of ${who}, per UTC day. Kept 90 days, independent of the request history.`),
    h("div", {class: "inline range-row"}, rangeSwitch(days), field("Member", member)),
    ...usageSections(usage, true), timingSection(usage.timing),
    valueSection(value), meteredSpendSection(groups.items));
}
