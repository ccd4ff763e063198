// Accounts (WEB-1) and Scheduling settings (WEB-2): live account cards over GET /api/accounts/runtime.
import {bundlesSection} from "./bundles.js";
import {clientVersionsSection} from "./clients.js";
import {announce, api, DASH, field, form, formatLeft, formatTime, h, option, render, section} from "./lib.js";

const POLL_MS = 2000;

const STATE_LABELS = {
  ready: "Ready", busy: "Busy", cooling: "Cooling", model_limited: "Model-limited",
  quota_exhausted: "Quota exhausted", refresh_backoff: "Refresh backoff", reauth_required: "Re-auth required",
  disabled: "Disabled",
};

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** The state as words, with the time left or the count that matters for it. */
export function stateText(run) {
  const label = STATE_LABELS[run.state] || run.state;
  if (run.state === "cooling") return `${label} · ${formatLeft(run.cooldown_until)} left`;
  if (run.state === "model_limited") return `${label} · ${plural(run.limited_models.length, "model")}`;
  if (run.state === "refresh_backoff") return `${label} · retry in ${formatLeft(run.refresh_retry_at)}`;
  if (run.state === "quota_exhausted" && run.quota_recheck_at) return `${label} · re-check in ${formatLeft(run.quota_recheck_at)}`;
  return label;
}

/** A window's name as people say it: the model (per-model quota) or its length (5 h, 7 d). */
function windowLabel(row) {
  const seconds = row.window_seconds;
  const length = !seconds ? "" : seconds % 86400 === 0 ? `${seconds / 86400} d` : seconds % 3600 === 0 ? `${seconds / 3600} h` : `${Math.round(seconds / 60)} min`;
  if (row.model) return row.model;
  return length ? `${row.window} (${length})` : row.window;
}

/** QUOTA-10: the pace the server computed at the observation time (never at browser time). */
function paceText(points) {
  if (points === null || points === undefined) return "";
  const rounded = Math.round(points);
  if (rounded === 0) return " · on an even pace";
  return ` · ${Math.abs(rounded)} pts ${rounded > 0 ? "ahead of" : "behind"} an even pace`;
}

function quotaRows(run) {
  const quota = run.quota || [];
  if (!quota.length) return h("p", {class: "muted quota-none"}, "No quota observed yet.");
  const failing = run.quota_retry_at
    ? h("p", {class: "muted quota-failing"}, `Last quota read failed; next try in ${formatLeft(run.quota_retry_at)}.`) : "";
  return [failing, h("ul", {class: "quota"}, quota.map((row) => {
    const reached = row.limit_reached || (row.used_percent !== null && row.used_percent >= 100);
    const used = row.used_percent === null ? (reached ? "limit reached" : "usage unknown") : `${Math.round(row.used_percent)}% used`;
    const resets = row.resets_at ? ` · resets in ${formatLeft(row.resets_at)}` : "";
    const freshness = row.fresh ? `fresh, observed ${formatTime(row.observed_at)}` : `stale, observed ${formatTime(row.observed_at)}`;
    const scope = row.main === false ? " · not used for selection" : "";
    return h("li", {class: `quota-row ${row.fresh ? "fresh" : "stale"}${reached ? " reached" : ""}`, "data-window": row.window},
      h("span", {class: "window"}, windowLabel(row)), " ", h("span", {class: "used"}, used),
      h("span", {class: "pace"}, paceText(row.pace_points)), resets, scope,
      h("span", {class: "freshness"}, ` (${freshness})`));
  }))];
}

/** The part of a card that changes on every poll. */
function liveDetails(run) {
  const limited = run.limited_models.length
    ? h("ul", {class: "plain-list"}, run.limited_models.map((m) =>
      h("li", {}, `${m.model}: ${formatLeft(m.until)} left${m.reason ? ` (${m.reason})` : ""}`)))
    : "none";
  return [
    h("p", {class: `state state-${run.state}`, "data-state": run.state}, stateText(run)),
    h("dl", {class: "facts"},
      h("dt", {}, "In flight / limit"), h("dd", {class: "in-flight"}, `${run.in_flight} / ${run.max_concurrency}`),
      h("dt", {}, "Waiters"), h("dd", {class: "waiters"}, String(run.waiters)),
      h("dt", {}, "Cooldown"), h("dd", {},
        run.cooldown_until ? `${formatLeft(run.cooldown_until)} left${run.cooldown_reason ? ` (${run.cooldown_reason})` : ""}`
          : "none"),
      h("dt", {}, "Limited models"), h("dd", {}, limited),
      h("dt", {}, "Credentials"), h("dd", {}, run.auth_state === "reauth_required" ? "re-auth required"
        : run.refresh_retry_at ? `refresh retry at ${formatTime(run.refresh_retry_at)}` : (run.auth_state || DASH)),
      h("dt", {}, "Egress"), h("dd", {class: "egress"}, run.proxy_url || "direct"),
      run.egress_error ? [h("dt", {}, "Egress error"),
        h("dd", {class: "egress-error state-reauth_required"}, `${run.egress_error.message} at ${formatTime(run.egress_error.at)}`)] : null,
    ),
    h("h4", {}, "Quota"),
    ...[quotaRows(run)].flat(),
  ];
}

/** Email, plan and, where the provider names it (GET /api/providers: subject_label), the subject. */
function identityText(account, subjectLabels) {
  const identity = (account && account.identity) || {};
  const label = account && subjectLabels.get(account.provider);
  const subject = label && identity.subject ? `${label} ${identity.subject}` : null;
  return [identity.email, identity.plan, subject].filter(Boolean).join(" · ") || "identity unknown";
}

/**
 * Cards that refresh themselves. `extra(run, refresh)` adds per-card controls that survive polls.
 * Returns {element, refresh}.
 */
function liveCards(extra) {
  const grid = h("div", {class: "cards", "aria-live": "off"});
  const summary = h("p", {class: "muted summary"});
  const cards = new Map();
  let identities = new Map();
  let subjectLabels = null;

  async function refresh(withAccounts = false) {
    if (!subjectLabels) {
      const providers = (await api("GET", "/api/providers")).items;
      subjectLabels = new Map(providers.map((item) => [item.name, item.subject_label]));
    }
    if (withAccounts || !identities.size) {
      const accounts = await api("GET", "/api/accounts");
      identities = new Map(accounts.items.map((account) => [account.id, account]));
    }
    const runtime = await api("GET", "/api/accounts/runtime");
    const ws = runtime.workspace;
    summary.textContent = `Workspace: ${ws.in_use} / ${ws.capacity} in use, ${ws.waiting} waiting.`;
    const seen = new Set();
    for (const run of runtime.accounts) {
      seen.add(run.id);
      if (!identities.has(run.id) && !withAccounts) return refresh(true);
      let card = cards.get(run.id);
      if (!card) {
        const titleId = `account-${run.id}-name`;
        card = {
          live: h("div", {class: "live"}),
          title: h("h3", {id: titleId}),
          identity: h("p", {class: "identity"}),
          provider: h("span", {class: "badge provider"}),
          billing: h("span", {class: "badge metered", title: "An API key billed per token (PAID-2)"}, "metered"),
        };
        card.controls = extra ? extra(run, refresh) : null;
        card.element = h("article", {class: "card", "data-account-id": run.id, "aria-labelledby": titleId},
          h("div", {class: "card-head"}, card.title, card.provider, card.billing), card.identity, card.live, card.controls);
        cards.set(run.id, card);
        grid.append(card.element);
      }
      card.title.textContent = run.name;
      card.provider.textContent = run.provider;
      card.identity.textContent = identityText(identities.get(run.id), subjectLabels);
      const metered = identities.get(run.id)?.billing === "metered";  // PAID-2
      card.billing.hidden = !metered;
      card.element.dataset.billing = metered ? "metered" : "subscription";
      card.live.replaceChildren(...liveDetails(run));
      card.element.dataset.state = run.state;
      if (card.controls && card.controls.update) card.controls.update(run);
    }
    for (const [id, card] of cards) {
      if (!seen.has(id)) { card.element.remove(); cards.delete(id); }
    }
    if (!cards.size) grid.replaceChildren(h("p", {class: "muted"}, "No accounts yet."));
    else grid.querySelector(":scope > p")?.remove();
  }

  let timer = null;
  function poll() {
    clearTimeout(timer);
    timer = setTimeout(async () => {
      if (document.visibilityState === "visible") await refresh().catch(() => null);
      poll();
    }, POLL_MS);
  }
  return {element: h("div", {}, summary, grid), refresh, poll};
}

async function groupChoices() {
  const groups = (await api("GET", "/api/groups")).items;
  return h("fieldset", {class: "choices"}, h("legend", {}, "Groups"),
    groups.map((group) => h("label", {class: "check"},
      h("input", {type: "checkbox", name: "group_ids", value: String(group.id), checked: group.name === "default"}),
      ` ${group.name}`)));
}

function checkedIds(formEl, name) {
  return [...formEl.querySelectorAll(`input[name=${name}]:checked`)].map((input) => Number(input.value));
}

function parseModels(text) {
  return text.split(/[\s,]+/).map((m) => m.trim()).filter(Boolean);
}

/**
 * PAID-1: the fields of an API-key provider's import (its `api_key` item of GET /api/providers):
 * the key (a password field, emptied as soon as it is sent), the base URL (empty: the provider's
 * own, shown as the placeholder; required when it has none) and, where the provider takes them,
 * the models. Returns {element, show(item), credentials()}.
 */
function apiKeyFields() {
  const key = h("input", {type: "password", name: "api_key", autocomplete: "new-password", spellcheck: "false",
    maxlength: 4096});
  const baseUrl = h("input", {type: "url", name: "base_url", autocomplete: "off", spellcheck: "false", maxlength: 2048});
  const models = h("input", {name: "models", autocomplete: "off", spellcheck: "false"});
  const modelsField = field("Models (optional, comma-separated)", models,
    "Only needed when the server lists none; when given, they are what the account serves.");
  const baseField = field("Base URL", baseUrl, " ");
  const baseHint = baseField.querySelector(".hint");
  const element = h("fieldset", {class: "plain", hidden: true, disabled: true},
    field("API key", key, "Sent once to check it and stored sealed; never shown again."), baseField, modelsField);
  return {
    element,
    show(item) {
      const spec = item && item.billing === "metered" ? item.api_key : null;
      element.hidden = element.disabled = !spec;
      key.required = Boolean(spec);
      if (!spec) return;
      baseUrl.required = spec.base_url_required;
      baseUrl.placeholder = spec.default_base_url || "http(s)://your-server/v1";
      baseHint.textContent = spec.base_url_required
        ? "Required: the server's API address, as its SDK takes it (e.g. ending in /v1)."
        : `Empty: ${spec.default_base_url}. Set it for a proxy or a regional host.`;
      modelsField.hidden = models.disabled = !spec.models;
    },
    /** The credentials to send; the key leaves the page's fields here, whatever the answer. */
    credentials() {
      const body = {api_key: key.value.trim()};
      key.value = "";
      if (baseUrl.value.trim()) body.base_url = baseUrl.value.trim();
      const named = models.disabled ? [] : parseModels(models.value);
      if (named.length) body.models = named;
      return body;
    },
  };
}

async function addAccount(onAdded) {
  // The providers this gateway has, with their labels, credential files and, for API-key
  // providers, what their import asks (GET /api/providers).
  const providers = (await api("GET", "/api/providers")).items;
  const byName = new Map(providers.map((item) => [item.name, item]));
  const provider = h("select", {name: "provider"}, providers.map((item) => option(item.name, item.label)));
  const files = providers.filter((item) => item.credential_file && item.billing !== "metered")
    .map((item) => item.credential_file);
  const fileHint = files.length > 1
    ? `Paste ${files.slice(0, -1).join(", ")} or ${files[files.length - 1]}.`
    : `Paste ${files[0] || "the provider's credential file"}.`;
  const name = h("input", {name: "name", required: true, maxlength: 64, autocomplete: "off"});
  const credentials = h("textarea", {name: "credentials", rows: 5, required: true, spellcheck: "false",
    placeholder: '{"tokens": {…}}'});
  const upload = h("input", {type: "file", name: "file", accept: ".json,application/json"});
  upload.addEventListener("change", async () => {
    if (upload.files.length) credentials.value = await upload.files[0].text();
  });
  const fileFields = h("fieldset", {class: "plain"},
    field("Credential file content", credentials, fileHint), field("Or upload the file", upload));
  const keyFields = apiKeyFields();
  const title = h("h3", {id: "import-title"}, "Import a credential file");
  const choose = () => {
    const item = byName.get(provider.value);
    const metered = Boolean(item && item.billing === "metered" && item.api_key);
    title.textContent = metered ? "Add an API key" : "Import a credential file";
    fileFields.hidden = fileFields.disabled = metered;
    keyFields.show(item);
  };
  provider.addEventListener("change", choose);
  const groups = await groupChoices();
  const importForm = form({class: "stack", "aria-labelledby": "import-title"}, [
    title,
    field("Provider", provider),
    field("Name", name),
    fileFields,
    keyFields.element,
    groups,
    h("button", {type: "submit"}, "Import account"),
  ], async (el) => {
    let parsed;
    if (!keyFields.element.disabled) {
      parsed = keyFields.credentials();
    } else {
      try {
        parsed = JSON.parse(credentials.value);
      } catch {
        throw new Error("The credential file is not valid JSON.");
      }
    }
    const account = await api("POST", "/api/accounts/import", {
      provider: provider.value, name: name.value, credentials: parsed, group_ids: checkedIds(el, "group_ids"),
    });
    const chosen = provider.value;
    el.reset();
    provider.value = chosen;
    choose();
    announce(`Account ${account.name} added.`);
    await onAdded();
  });
  choose();

  const oauthProvider = h("select", {name: "provider"},
    providers.filter((item) => item.sign_in).map((item) => option(item.name, item.label)));
  const oauthName = h("input", {name: "name", maxlength: 64, autocomplete: "off"});
  const callback = h("textarea", {name: "callback_url", rows: 2, required: true, spellcheck: "false"});
  const step2 = h("div", {class: "stack", hidden: true});
  let state = null;
  const oauthForm = form({class: "stack", "aria-label": "Sign in to a provider"}, [
    h("h3", {}, "Or sign in to the provider"),
    field("Provider", oauthProvider),
    field("Name (optional)", oauthName),
    h("button", {type: "submit", name: "start"}, "Start sign-in"),
  ], async () => {
    const body = {provider: oauthProvider.value};
    if (oauthName.value) body.name = oauthName.value;
    const started = await api("POST", "/api/accounts/oauth/start", body);
    state = started.state;
    const completeForm = form({class: "stack", "aria-label": "Finish the sign-in"}, [
      h("p", {}, "1. Open ", h("a", {href: started.authorize_url, target: "_blank", rel: "noopener noreferrer"},
        "the provider's sign-in page"), " and sign in."),
      h("p", {}, "2. Copy the address the browser ends on (or the code shown) and paste it here."),
      field("Callback URL or code", callback),
      h("button", {type: "submit"}, "Finish sign-in"),
    ], async () => {
      const account = await api("POST", "/api/accounts/oauth/complete", {state, callback_url: callback.value});
      step2.hidden = true;
      step2.replaceChildren();
      announce(`Account ${account.name} added.`);
      await onAdded();
    });
    step2.replaceChildren(completeForm);
    step2.hidden = false;
  });
  return section("Add an account", h("div", {class: "two"}, importForm, h("div", {}, oauthForm, step2)));
}

/** EGRESS-1/3: the account's own proxy (set, remove) and a connectivity check through it. */
function egressControls(run, refresh) {
  const url = h("input", {name: "proxy_url", maxlength: 2048, autocomplete: "off", spellcheck: "false",
    placeholder: "socks5://user:pass@host:1080"});
  const result = h("p", {class: "check-result", role: "status"});
  const proxyForm = form({class: "inline", "aria-label": `Egress proxy of ${run.name}`}, [
    field("Egress proxy (http, https, socks5, socks5h)", url, "Every upstream call of this account leaves through it."),
    h("button", {type: "submit"}, "Save proxy"),
  ], async () => {
    const value = url.value.trim();
    await api("PATCH", `/api/accounts/${run.id}`, {proxy_url: value || null});
    url.value = "";
    announce(value ? `Egress proxy of ${run.name} saved.` : `${run.name} goes direct now.`);
    await refresh(true);
  });
  const remove = h("button", {type: "button", class: "secondary"}, "Remove proxy");
  remove.addEventListener("click", async () => {
    await api("PATCH", `/api/accounts/${run.id}`, {proxy_url: null});
    announce(`${run.name} goes direct now.`);
    await refresh(true);
  });
  const check = h("button", {type: "button", class: "secondary"}, "Check");
  check.addEventListener("click", async () => {
    check.disabled = true;
    result.textContent = "Checking…";
    try {
      const answer = await api("POST", `/api/accounts/${run.id}/check`);
      result.textContent = answer.ok
        ? `OK through ${answer.egress === "proxy" ? "its proxy" : "a direct connection"} in ${answer.latency_ms} ms.`
        : `Failed (${answer.error.code}): ${answer.error.message}`;
      result.dataset.ok = String(answer.ok);
      await refresh();
    } catch (failure) {
      result.textContent = failure.message;
    } finally {
      check.disabled = false;
    }
  });
  const controls = h("div", {class: "controls"}, proxyForm, h("div", {class: "row"}, check, remove), result);
  controls.update = (latest) => { remove.hidden = !latest.proxy_url; };
  controls.update(run);
  return controls;
}

export async function accountsView() {
  const cards = liveCards(egressControls);
  render("Accounts", cards.element, await addAccount(() => cards.refresh(true)),
    bundlesSection(() => cards.refresh(true)), clientVersionsSection());
  await cards.refresh(true);
  cards.poll();
}

function schedulingControls(run, refresh) {
  const limit = h("input", {type: "number", name: "max_concurrency", min: 1, max: 1000, step: 1, required: true,
    value: String(run.max_concurrency), inputmode: "numeric"});
  const limitForm = form({class: "inline", "aria-label": `Limit of ${run.name}`}, [
    field("Concurrent requests (1–1000)", limit),
    h("button", {type: "submit"}, "Save limit"),
  ], async () => {
    await api("PATCH", `/api/accounts/${run.id}/limits`, {max_concurrency: Number(limit.value)});
    announce(`Limit of ${run.name} set to ${limit.value}.`);
    await refresh();
  });
  const clear = h("button", {type: "button", class: "secondary"}, "Clear cooldown");
  clear.addEventListener("click", async () => {
    if (!window.confirm(`Clear the cooldowns of ${run.name}? It will take requests again at once.`)) return;
    clear.disabled = true;
    try {
      await api("POST", `/api/accounts/${run.id}/resume`);
      announce(`Cooldowns of ${run.name} cleared.`);
      await refresh();
    } catch (failure) {
      announce(failure.message);
    } finally {
      clear.disabled = false;
    }
  });
  const toggle = h("button", {type: "button", class: "secondary"});
  let enabled = run.enabled;
  toggle.addEventListener("click", async () => {
    const verb = enabled ? "Disable" : "Enable";
    if (enabled && !window.confirm(`Disable ${run.name}? It takes no new requests until enabled again.`)) return;
    toggle.disabled = true;
    try {
      await api("PATCH", `/api/accounts/${run.id}`, {enabled: !enabled});
      announce(`${verb}d ${run.name}.`);
      await refresh();
    } catch (failure) {
      announce(failure.message);
    } finally {
      toggle.disabled = false;
    }
  });
  const controls = h("div", {class: "controls"}, limitForm, clear, toggle);
  controls.update = (latest) => {
    enabled = latest.enabled;
    toggle.textContent = enabled ? "Disable account" : "Enable account";
  };
  controls.update(run);
  return controls;
}

export async function schedulingView() {
  const cards = liveCards(schedulingControls);
  render("Scheduling settings",
    h("p", {class: "muted"}, "Each account's limit of concurrent model requests, and clearing cooldowns."),
    cards.element);
  await cards.refresh(true);
  cards.poll();
}
