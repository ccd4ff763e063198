// Administration → Upstream changes (CLIENT-7): what the providers' upstreams answered that SubLane
// does not know yet (relayed as before), and the client versions upstreams refused (CLIENT-3).
import {api, DASH, formatTime, h, render, section} from "./lib.js";

/** What each kind of change is, in words. */
const KINDS = {
  event: "Stream event type",
  answer_field: "Answer field",
  terminal_field: "Field of a stream's last event",
  error: "Error type or code",
  model: "Model in a catalogue",
  client_version: "Client version asked for",
};

function table(items) {
  return h("div", {class: "table-wrap", tabindex: "0", role: "region", "aria-label": "Upstream changes table"},
    h("table", {class: "upstream-changes"},
      h("thead", {}, h("tr", {}, ["Provider", "Kind", "Name", "First seen", "Last seen", "Times", "Example request"]
        .map((label) => h("th", {scope: "col"}, label)))),
      h("tbody", {}, items.map((item) => h("tr", {"data-kind": item.kind, "data-provider": item.provider},
        h("td", {}, item.provider),
        h("td", {}, KINDS[item.kind] || item.kind),
        h("td", {class: "mono wrap"}, item.name),
        h("td", {}, formatTime(item.first_seen)),
        h("td", {}, formatTime(item.last_seen)),
        h("td", {}, String(item.count)),
        h("td", {class: "mono"}, item.example_request_id
          ? h("a", {href: `/admin/requests?request_id=${encodeURIComponent(item.example_request_id)}`},
            item.example_request_id)
          : DASH))))));
}

export async function changesView() {
  const answer = await api("GET", "/api/upstream-changes");
  render("Upstream changes",
    h("p", {class: "muted"},
      "What the providers answered that SubLane does not know yet: new stream events, fields, error types, " +
      "models, and client versions an upstream asked for. Everything here was relayed to the clients as it " +
      "came; a new name also raises the upstream.changed alert once. Newest first."),
    section("Seen", answer.items.length
      ? table(answer.items)
      : h("p", {class: "empty"}, "Nothing new: every answer matched what SubLane knows.")));
}
