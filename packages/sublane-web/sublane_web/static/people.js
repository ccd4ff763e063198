// Members and Groups (WEB-4): the admin forms of /api/users and /api/groups; a member's limits,
// password reset and token budgets (TEAM-5).
import {announce, api, DASH, field, form, formatTime, h, option, render, section} from "./lib.js";
import {aliasEditor} from "./aliases.js";
import {budgetsTable} from "./usage.js";

function checkboxes(legend, name, items, label, checked) {
  return h("fieldset", {class: "choices"}, h("legend", {}, legend),
    items.length ? items.map((item) => h("label", {class: "check"},
      h("input", {type: "checkbox", name, value: String(item.id), checked: checked.has(item.id)}), ` ${label(item)}`))
      : h("span", {class: "muted"}, "none"));
}

function checkedIds(el, name) {
  return [...el.querySelectorAll(`input[name=${name}]:checked`)].map((input) => Number(input.value));
}

function roleSelect(current) {
  return h("select", {name: "role"}, option("member", "member", current === "member"), option("admin", "admin", current === "admin"));
}

export async function membersView() {
  const list = h("div", {});
  const editor = h("div", {});
  let users = [];
  let groups = [];

  async function reload() {
    [users, groups] = await Promise.all([api("GET", "/api/users"), api("GET", "/api/groups")]).then((a) => a.map((x) => x.items));
    const groupName = new Map(groups.map((g) => [g.id, g.name]));
    list.replaceChildren(h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Members table"},
      h("table", {},
        h("thead", {}, h("tr", {}, ["Username", "Role", "Enabled", "Concurrency", "Requests/min", "Groups", "Created", ""]
          .map((label) => h("th", {scope: "col"}, label)))),
        h("tbody", {}, users.map((u) => h("tr", {"data-user-id": u.id},
          h("td", {}, u.username), h("td", {}, u.role), h("td", {}, u.enabled ? "yes" : "no"),
          h("td", {}, u.member_concurrency ? String(u.member_concurrency) : "unlimited"),
          h("td", {}, u.rpm ? String(u.rpm) : "unlimited"),
          h("td", {}, (u.group_ids || []).map((id) => groupName.get(id) || `#${id}`).join(", ") || DASH),
          h("td", {}, formatTime(u.created_at)),
          h("td", {}, h("button", {type: "button", class: "secondary", "aria-label": `Edit ${u.username}`,
            onclick: () => edit(u)}, "Edit"))))))));
  }

  function edit(u) {
    const role = roleSelect(u.role);
    const enabled = h("input", {type: "checkbox", name: "enabled", checked: u.enabled});
    const concurrency = h("input", {type: "number", name: "member_concurrency", min: 0, max: 1000, required: true,
      value: String(u.member_concurrency)});
    const rpm = h("input", {type: "number", name: "rpm", min: 0, max: 6000, required: true, value: String(u.rpm)});
    // PAID-3: the member's cap on metered (API-key) spend per UTC month; empty = no limit
    const meteredCap = h("input", {type: "number", name: "metered_monthly_usd", min: 0, step: "0.01"});
    const meteredSpent = h("p", {class: "muted", "data-metered-spent": ""});
    const password = h("input", {type: "password", name: "new_password", minlength: 8, maxlength: 128,
      autocomplete: "new-password", required: true});
    const budgets = h("div", {});
    const close = () => editor.replaceChildren();
    const adminNote = u.role === "admin"
      ? h("p", {class: "muted"}, "Admins are bound only by workspace and account limits: these apply if the role becomes member.")
      : null;
    editor.replaceChildren(section(`Edit ${u.username}`,
      form({class: "stack", "aria-label": `Edit ${u.username}`}, [
        field("Role", role),
        h("label", {class: "check"}, enabled, " Enabled"),
        h("p", {class: "muted"}, "Group membership is changed under Groups."),
        h("div", {class: "row"}, h("button", {type: "submit"}, "Save member"),
          h("button", {type: "button", class: "secondary", onclick: close}, "Close")),
      ], async () => {
        const wanted = {role: role.value, enabled: enabled.checked};
        const body = Object.fromEntries(Object.entries(wanted).filter(([k, v]) => u[k] !== v));
        await api("PATCH", `/api/users/${u.id}`, body);
        announce(`Member ${u.username} saved.`);
        await reload();
      }),
      h("div", {class: "two editor-part"},
        h("div", {}, h("h3", {}, "Limits"), adminNote,
          form({class: "stack", "aria-label": `Limits of ${u.username}`}, [
            field("Concurrent requests (0 = unlimited)", concurrency, "0 to 1,000, running and waiting"),
            field("Requests per minute (0 = unlimited)", rpm, "0 to 6,000 per UTC minute"),
            field("Metered spend per month, US dollars (empty = no limit)", meteredCap,
              "API-key accounts only; 0 = none at all"),
            meteredSpent,
            h("button", {type: "submit"}, "Save limits"),
          ], async () => {
            await api("PATCH", `/api/users/${u.id}/limits`, {member_concurrency: Number(concurrency.value), rpm: Number(rpm.value),
              metered_monthly_usd: meteredCap.value === "" ? null : Number(meteredCap.value)});
            announce(`Limits of ${u.username} saved.`);
            await reload();
          })),
        h("div", {}, h("h3", {}, "Reset password"),
          form({class: "stack", "aria-label": `Reset the password of ${u.username}`}, [
            field("New password", password, "8 to 128 characters; signs them out everywhere, keeps their keys"),
            h("button", {type: "submit", class: "danger"}, "Set password"),
          ], async (el) => {
            await api("POST", `/api/users/${u.id}/password`, {new_password: password.value});
            el.reset();
            announce(`Password of ${u.username} set; their sessions ended.`);
          }))),
      h("div", {class: "editor-part"}, h("h3", {}, "Token budgets"), budgets)));
    budgetEditor(u, budgets);
    meteredLimit(u, meteredCap, meteredSpent);
    editor.querySelector("select").focus();
  }

  /** PAID-3: the member's metered cap and this month's metered spend, from their limits. */
  async function meteredLimit(u, input, spent) {
    const limits = await api("GET", `/api/users/${u.id}/limits`);
    input.value = limits.metered_monthly_usd ?? "";
    spent.textContent = meteredSpentText(limits.metered_spent_usd, limits.metered_reset_at);
  }

  /** The rules of TEAM-4 as editable rows; Save puts the whole set (at most 64). */
  async function budgetEditor(u, holder) {
    const answer = await api("GET", `/api/users/${u.id}/budgets`);
    const rows = h("div", {class: "rules"});
    const groupSelect = (current) => h("select", {name: "group_id", "aria-label": "Group"}, option("", "Any group"),
      groups.map((g) => option(g.id, g.name, g.id === current)));
    function ruleRow(rule) {
      const row = h("fieldset", {class: "rule", "data-rule-id": rule.id ?? ""},
        h("legend", {}, rule.id ? `Rule ${rule.id}` : "New rule"),
        field("Group", groupSelect(rule.group_id)),
        field("Model", h("input", {name: "model", value: rule.model || "", placeholder: "any model", maxlength: 128,
          autocomplete: "off", spellcheck: "false"})),
        field("Per", h("select", {name: "period"}, option("day", "UTC day", rule.period === "day"),
          option("month", "UTC month", rule.period === "month"))),
        field("Limit (tokens)", h("input", {type: "number", name: "limit", min: 1, max: 1e12, required: true,
          value: rule.limit ? String(rule.limit) : ""})),
        h("label", {class: "check"}, h("input", {type: "checkbox", name: "enabled", checked: rule.enabled !== false}), " On"),
        h("button", {type: "button", class: "secondary", onclick: () => row.remove()}, "Remove"));
      return row;
    }
    rows.append(...answer.rules.map(ruleRow));
    const editorForm = form({class: "stack", "aria-label": `Token budgets of ${u.username}`}, [
      h("p", {class: "muted"}, "Input + output tokens per UTC day or month. A member over a rule gets 429 token_budget_exceeded until it resets."),
      rows,
      h("div", {class: "row"},
        h("button", {type: "button", class: "secondary", onclick: () => rows.append(ruleRow({period: "day"}))}, "Add rule"),
        h("button", {type: "submit"}, "Save budgets")),
    ], async () => {
      const rules = [...rows.querySelectorAll("fieldset.rule")].map((el) => {
        const value = (name) => el.querySelector(`[name=${name}]`).value.trim();
        const rule = {group_id: value("group_id") ? Number(value("group_id")) : null, model: value("model") || null,
          period: value("period"), limit: Number(value("limit")), enabled: el.querySelector("[name=enabled]").checked};
        if (el.dataset.ruleId) rule.id = Number(el.dataset.ruleId);
        return rule;
      });
      await api("PUT", `/api/users/${u.id}/budgets`, {rules});
      announce(`Token budgets of ${u.username} saved.`);
      await budgetEditor(u, holder);
    });
    const usage = h("div", {class: "budget-usage"}, budgetsTable(answer, {empty: "No token budgets yet."}));
    holder.replaceChildren(usage, editorForm);
  }

  await reload();
  const username = h("input", {name: "username", required: true, maxlength: 64, pattern: "[A-Za-z0-9_.@+\\-]+",
    autocomplete: "off"});
  const password = h("input", {type: "password", name: "password", required: true, minlength: 8, maxlength: 128,
    autocomplete: "new-password"});
  const role = roleSelect("member");
  const create = form({class: "stack", "aria-label": "Add a member"}, [
    field("Username", username, "Letters, digits and _ . @ + -"),
    field("Password (8 characters or more)", password),
    field("Role", role),
    checkboxes("Groups", "group_ids", groups, (g) => g.name, new Set(groups.filter((g) => g.name === "default").map((g) => g.id))),
    h("button", {type: "submit"}, "Add member"),
  ], async (el) => {
    const user = await api("POST", "/api/users", {username: username.value, password: password.value, role: role.value,
      group_ids: checkedIds(el, "group_ids")});
    el.reset();
    announce(`Member ${user.username} added.`);
    await reload();
  });
  render("Members", section("Members", list), editor, section("Add a member", create));
}

/** PAID-3: "Spent $1.23 of metered use this month (resets 2027-01-01)". */
function meteredSpentText(spent, resetAt) {
  const reset = resetAt ? new Date(resetAt * 1000).toISOString().slice(0, 10) : "";
  return `Spent $${(spent || 0).toFixed(2)} of metered use this month${reset ? ` (resets ${reset})` : ""}`;
}

/** PAID-2: a group's metered routing, each with what it does. */
const METERED_ROUTING = [
  ["overflow", "Overflow", "API keys serve only when no subscription account can take the call now, or the call has waited the seconds below."],
  ["normal", "Normal", "API keys are ordinary members of the rotation, beside the subscriptions."],
  ["off", "Off", "API keys are never used for this group."],
];
const MAX_OVERFLOW_AFTER_S = 3600;

/** PAID-2: the routing choices (radios with their explanation) and the overflow wait field. */
function meteredRouting(g) {
  const current = g.metered || "overflow";
  const after = h("input", {type: "number", name: "overflow_after_s", step: "any", inputmode: "decimal",
    value: g.overflow_after_s ?? 5});
  const choices = h("fieldset", {class: "choices metered-routing"},
    h("legend", {}, "Metered accounts (API keys billed per token)"),
    METERED_ROUTING.map(([value, label, explanation]) => h("label", {class: "check routing-choice"},
      h("input", {type: "radio", name: "metered", value, checked: value === current}),
      h("span", {}, h("strong", {}, label), " — ", h("span", {class: "muted"}, explanation)))),
    field(`Overflow after, seconds waited (0–${MAX_OVERFLOW_AFTER_S})`, after,
      "How long a call waits for busy subscription accounts before API keys are offered (Overflow only)."));
  return {
    element: choices,
    /** The changed fields for PATCH /api/groups/{id}; throws (shown in the form) on a bad wait. */
    patch() {
      const patch = {};
      const chosen = choices.querySelector("input[name=metered]:checked").value;
      if (chosen !== current) patch.metered = chosen;
      const raw = after.value.trim();
      const seconds = Number(raw);
      if (raw === "" || !Number.isFinite(seconds) || seconds < 0 || seconds > MAX_OVERFLOW_AFTER_S) {
        after.focus();
        throw new Error(`Overflow after must be a number of seconds from 0 to ${MAX_OVERFLOW_AFTER_S}.`);
      }
      if (seconds !== g.overflow_after_s) patch.overflow_after_s = seconds;
      return patch;
    },
  };
}

function parseModels(text) {
  return text.split(/[\s,]+/).map((m) => m.trim()).filter(Boolean);
}

export async function groupsView() {
  const list = h("div", {});
  const editor = h("div", {});
  let groups = [];
  let users = [];
  let accounts = [];

  async function reload() {
    [groups, users, accounts] = await Promise.all([
      api("GET", "/api/groups"), api("GET", "/api/users"), api("GET", "/api/accounts"),
    ]).then((all) => all.map((x) => x.items));
    list.replaceChildren(h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Groups table"},
      h("table", {},
        h("thead", {}, h("tr", {}, ["Name", "Allowed models", "Members", "Accounts", "API keys", ""]
          .map((label) => h("th", {scope: "col"}, label)))),
        h("tbody", {}, groups.map((g) => h("tr", {"data-group-id": g.id},
          h("td", {}, g.name),
          h("td", {}, g.model_policy ? (g.model_policy.allow || []).join(", ") || "none" : "all"),
          h("td", {}, String((g.user_ids || []).length)),
          h("td", {}, String((g.account_ids || []).length)),
          h("td", {class: "metered-routing"}, g.metered || "overflow"),  // PAID-2
          h("td", {}, h("button", {type: "button", class: "secondary", "aria-label": `Edit ${g.name}`,
            onclick: () => edit(g)}, "Edit"))))))));
  }

  async function edit(g) {
    const name = h("input", {name: "name", required: true, maxlength: 64, value: g.name, readOnly: g.name === "default"});
    const restrict = h("input", {type: "checkbox", name: "restrict", checked: Boolean(g.model_policy)});
    const allow = h("textarea", {name: "allow", rows: 2, spellcheck: "false"},
      g.model_policy ? (g.model_policy.allow || []).join(", ") : "");
    const meteredCap = h("input", {type: "number", name: "metered_monthly_usd", min: 0, step: "0.01",
      value: g.metered_monthly_usd ?? ""});  // PAID-3
    const routing = meteredRouting(g);  // PAID-2
    editor.replaceChildren(section(`Edit ${g.name}`, form({class: "stack", "aria-label": `Edit ${g.name}`}, [
      field("Name", name),
      h("label", {class: "check"}, restrict, " Only allow these models"),
      field("Allowed models (comma-separated)", allow),
      field("Metered spend cap per month, US dollars (empty = no cap)", meteredCap,
        meteredSpentText(g.metered_spent_usd, g.metered_reset_at)),
      routing.element,
      checkboxes("Members", "user_ids", users, (u) => u.username, new Set(g.user_ids || [])),
      checkboxes("Accounts", "account_ids", accounts, (a) => `${a.name} (${a.provider})`, new Set(g.account_ids || [])),
      h("div", {class: "row"}, h("button", {type: "submit"}, "Save group"),
        h("button", {type: "button", class: "secondary", onclick: () => editor.replaceChildren()}, "Cancel")),
    ], async (el) => {
      const patch = {model_policy: restrict.checked ? {allow: parseModels(allow.value)} : null, ...routing.patch()};
      if (name.value !== g.name) patch.name = name.value;
      const cap = meteredCap.value === "" ? null : Number(meteredCap.value);
      if (cap !== (g.metered_monthly_usd ?? null)) patch.metered_monthly_usd = cap;
      await api("PATCH", `/api/groups/${g.id}`, patch);
      await api("PUT", `/api/groups/${g.id}/members`, {user_ids: checkedIds(el, "user_ids")});
      await api("PUT", `/api/groups/${g.id}/accounts`, {account_ids: checkedIds(el, "account_ids")});
      editor.replaceChildren();
      announce(`Group ${name.value} saved.`);
      await reload();
    })), section(`Aliases of ${g.name}`, await aliasEditor(g)));
    name.focus();
  }

  await reload();
  const name = h("input", {name: "name", required: true, maxlength: 64, autocomplete: "off"});
  const allow = h("input", {name: "allow", autocomplete: "off", spellcheck: "false"});
  const create = form({class: "stack", "aria-label": "Add a group"}, [
    field("Name", name),
    field("Allowed models (optional, comma-separated; empty allows all)", allow),
    h("button", {type: "submit"}, "Add group"),
  ], async (el) => {
    const models = parseModels(allow.value);
    const group = await api("POST", "/api/groups", {name: name.value, model_policy: models.length ? {allow: models} : null});
    el.reset();
    announce(`Group ${group.name} added.`);
    await reload();
  });
  render("Groups", section("Groups", list), editor, section("Add a group", create));
}
