// Administration → Alerts (ALERT-5): the webhooks, the events each wants, their recent deliveries
// and a Test button. The signing secret of a new webhook is shown once, when it is added.
import {announce, api, copyButton, DASH, field, form, formatTime, h, option, render, section} from "./lib.js";

/** What each event means, in words (ALERT-2). */
const EVENT_WORDS = {
  "account.reauth_required": "An account must be signed in again",
  "account.refresh_failing": "An account's credential refresh failed three times in a row",
  "account.cooling": "An account began cooling down",
  "account.recovered": "An account's cooldown or re-authorization cleared",
  "account.quota_exhausted": "An account ran out of subscription quota",
  "account.quota_recovered": "An account has subscription quota again",
  "model.limited": "The provider limited a model on an account",
  "pool.unavailable": "A group had no account for a model",
  "history.dropped": "Request records were dropped",
  "upstream.changed": "An upstream answered something SubLane does not know yet",
  "webhook.test": "A test alert",
};

function eventList(events) {
  if (events.includes("*")) return "All events";
  return events.join(", ");
}

function eventChoices(available, chosen) {
  const all = h("input", {type: "checkbox", name: "all_events", checked: chosen.includes("*")});
  const boxes = available.filter((name) => name !== "webhook.test").map((name) =>
    h("label", {class: "check", title: EVENT_WORDS[name] || name},
      h("input", {type: "checkbox", name: "events", value: name, checked: chosen.includes(name),
        disabled: chosen.includes("*")}), ` ${name}`));
  all.addEventListener("change", () => {
    boxes.forEach((label) => { label.querySelector("input").disabled = all.checked; });
  });
  return h("fieldset", {class: "choices"}, h("legend", {}, "Events"),
    h("label", {class: "check"}, all, " All events"), boxes);
}

function chosenEvents(el) {
  if (el.querySelector("input[name=all_events]").checked) return ["*"];
  return [...el.querySelectorAll("input[name=events]:checked")].map((input) => input.value);
}

function deliveriesTable(items) {
  if (!items.length) return h("p", {class: "muted"}, "No deliveries yet.");
  return h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Deliveries table"},
    h("table", {class: "deliveries"},
      h("thead", {}, h("tr", {}, ["Event", "Delivery ID", "Status", "Attempts", "Last answer", "Next attempt"]
        .map((label) => h("th", {scope: "col"}, label)))),
      h("tbody", {}, items.map((d) => h("tr", {"data-status": d.status, "data-event": d.event},
        h("td", {}, d.event),
        h("td", {class: "mono"}, d.id),
        h("td", {}, h("span", {class: `badge delivery-${d.status}`}, d.status)),
        h("td", {}, String(d.attempts)),
        h("td", {}, d.last_error ? d.last_error : d.last_status ? `HTTP ${d.last_status}` : DASH),
        h("td", {}, d.next_attempt_at ? formatTime(d.next_attempt_at) : DASH))))));
}

export async function alertsView() {
  const list = h("div", {});
  const deliveries = h("div", {"aria-live": "polite"});
  const secretBox = h("div", {class: "secret", hidden: true, role: "region", "aria-label": "New webhook secret"});
  let shown = null;  // the webhook whose deliveries are shown
  let available = [];

  async function showDeliveries(hook, cursor = null) {
    shown = hook;
    const page = await api("GET", `/api/webhooks/${hook.id}/deliveries${cursor ? `?cursor=${cursor}` : ""}`);
    deliveries.replaceChildren(
      h("p", {}, "Deliveries to ", h("strong", {class: "wrap"}, hook.url), ", newest first."),
      deliveriesTable(page.items),
      h("div", {class: "row"},
        h("button", {type: "button", class: "secondary", onclick: () => showDeliveries(hook)}, "Refresh"),
        page.next_cursor ? h("button", {type: "button", class: "secondary",
          onclick: () => showDeliveries(hook, page.next_cursor)}, "Older →") : null));
  }

  function row(hook) {
    const toggle = async () => {
      await api("PATCH", `/api/webhooks/${hook.id}`, {enabled: !hook.enabled});
      announce(`Webhook ${hook.enabled ? "disabled" : "enabled"}.`);
      await reload();
    };
    return h("tr", {"data-webhook": String(hook.id)},
      h("td", {class: "wrap"}, hook.url),
      h("td", {class: "wrap"}, eventList(hook.events)),
      h("td", {}, hook.format),
      h("td", {}, hook.enabled ? "on" : h("span", {class: "muted"}, "off")),
      h("td", {}, h("div", {class: "row"},
        h("button", {type: "button", disabled: !hook.enabled, "aria-label": `Test ${hook.url}`, onclick: async () => {
          const queued = await api("POST", `/api/webhooks/${hook.id}/test`);
          announce(`Test alert ${queued.event_id} queued.`);
          await showDeliveries(hook);
        }}, "Test"),
        h("button", {type: "button", class: "secondary", "aria-label": `Deliveries of ${hook.url}`,
          onclick: () => showDeliveries(hook)}, "Deliveries"),
        h("button", {type: "button", class: "secondary", onclick: toggle}, hook.enabled ? "Disable" : "Enable"),
        h("button", {type: "button", class: "secondary", "aria-label": `Remove ${hook.url}`, onclick: async () => {
          if (!window.confirm(`Remove the webhook ${hook.url}? Its pending deliveries are dropped.`)) return;
          await api("DELETE", `/api/webhooks/${hook.id}`);
          if (shown && shown.id === hook.id) { shown = null; deliveries.replaceChildren(); }
          announce("Webhook removed.");
          await reload();
        }}, "Remove"))));
  }

  async function reload() {
    const answer = await api("GET", "/api/webhooks");
    available = answer.events_available || Object.keys(EVENT_WORDS);
    list.replaceChildren(answer.items.length
      ? h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Webhooks table"},
        h("table", {class: "webhooks"},
          h("thead", {}, h("tr", {}, ["URL", "Events", "Format", "Enabled", ""].map((label) => h("th", {scope: "col"}, label)))),
          h("tbody", {}, answer.items.map(row))))
      : h("p", {class: "muted"}, "No webhooks yet: add one below to be told when accounts need you."));
    const current = shown && answer.items.find((hook) => hook.id === shown.id);
    if (current) await showDeliveries(current);
    else if (answer.items.length && !shown) await showDeliveries(answer.items[0]);
  }

  await reload();
  const url = h("input", {name: "url", type: "url", required: true, maxlength: 2048, autocomplete: "off"});
  const format = h("select", {name: "format"}, option("json", "JSON (signed)"), option("slack", "Slack / Mattermost / Discord text"));
  const events = h("div", {}, eventChoices(available, ["*"]));
  const add = form({class: "stack", "aria-label": "Add a webhook"}, [
    field("URL", url, "Where alerts are POSTed (http or https). Its user name, password and path are shown masked afterwards."),
    field("Format", format),
    events,
    h("button", {type: "submit"}, "Add webhook"),
  ], async (el) => {
    const chosen = chosenEvents(el);
    if (!chosen.length) throw new Error("Choose at least one event.");
    const made = await api("POST", "/api/webhooks", {url: url.value.trim(), events: chosen, format: format.value});
    secretBox.replaceChildren(
      h("p", {}, h("strong", {}, "The signing secret of this webhook. "),
        "It is shown only now: your receiver checks X-SubLane-Signature with it."),
      h("p", {class: "secret-row"}, h("code", {class: "secret-value"}, made.secret), copyButton(made.secret, "webhook secret")));
    secretBox.hidden = false;
    el.reset();
    events.replaceChildren(eventChoices(available, ["*"]));
    announce("Webhook added.");
    shown = made;
    await reload();
  });
  render("Alerts",
    h("p", {class: "muted"}, "Webhooks tell your chat or your own receiver when accounts need attention. " +
      "Each alert is signed, retried for a day, and carries no credential or prompt; it names accounts by their names, which may be e-mails."),
    section("Webhooks", list),
    section("Add a webhook", add, secretBox),
    section("Recent deliveries", deliveries));
}
